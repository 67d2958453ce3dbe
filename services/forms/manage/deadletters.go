package manage

import (
	"context"
	"time"

	"github.com/formsservice/formsservice/services/forms/store"
)

// DeadLetter is a submission whose delivery was given up, as the operations show it.
type DeadLetter struct {
	// ID is the submission's ID (a retry hands it back to delivery under it).
	ID         string    `json:"id"`
	Form       string    `json:"form"`
	ReceivedAt time.Time `json:"received_at"`
	GivenUpAt  time.Time `json:"given_up_at"`
	// Channel is the one that failed last (mail, webhook, …), Attempts how many there were, LastError
	// what the channel answered.
	Channel    string       `json:"channel"`
	Attempts   int          `json:"attempts"`
	LastError  string       `json:"last_error"`
	Fields     store.Values `json:"fields"`
	Additional store.Values `json:"additional,omitempty"`
	Origin     string       `json:"origin,omitempty"`
}

// DeadLetters lists form's dead letters, the latest given up first, a page at a time: before is the
// position a page before answered ("" from the latest), limit 1 to MaxLimit. It returns the position
// to continue before ("" at the end).
func (o *Ops) DeadLetters(ctx context.Context, form, before string, limit int) ([]DeadLetter, string, error) {
	switch {
	case limit < 1 || limit > MaxLimit:
		return nil, "", &FieldError{"limit", "an integer from 1 to 200"}
	case before != "" && !store.ValidStreamID(before):
		return nil, "", &FieldError{"cursor", "not a cursor of this listing"}
	}
	q, err := o.queueOf(ctx, form)
	if err != nil {
		return nil, "", err
	}
	page, next, err := q.DeadLetterPage(ctx, o.rdb, before, int64(limit))
	if err != nil {
		return nil, "", failed(err)
	}
	out := make([]DeadLetter, 0, len(page))
	for _, d := range page {
		var s Submission
		if err := fieldsOf(form, string(d.Record()), &s); err != nil {
			return nil, "", err
		}
		out = append(out, DeadLetter{ID: d.ID, Form: form, ReceivedAt: s.ReceivedAt, GivenUpAt: d.Died, Channel: d.Channel,
			Attempts: d.Attempts, LastError: d.Reason, Fields: s.Fields, Additional: s.Additional, Origin: s.Origin})
		if out[len(out)-1].ReceivedAt.IsZero() {
			out[len(out)-1].ReceivedAt = d.Received
		}
	}
	return out, next, nil
}
