package manage

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/forms/store"
)

// A submission's delivery state (Submission.State), from the form's delivery group: stored (nothing
// delivers the form: it notifies no one, or its delivery never started), queued (not taken by delivery
// yet), delivering (taken, waiting for a retry), delivered, failed (given up: a dead letter); spam for a
// submission in the spam folder, which nothing delivers.
const (
	StateStored     = "stored"
	StateQueued     = "queued"
	StateDelivering = "delivering"
	StateDelivered  = "delivered"
	StateFailed     = "failed"
	StateSpam       = "spam"
)

// States are the states a query of the inbox may ask for.
var States = []string{StateStored, StateQueued, StateDelivering, StateDelivered, StateFailed}

// Submission is a submission as the operations show it.
type Submission struct {
	// ID is the message's ID (store.MessageID): its webhook-id and export row's, kept when it moves.
	ID         string    `json:"id"`
	Form       string    `json:"form"`
	Folder     string    `json:"folder"`
	State      string    `json:"state"`
	ReceivedAt time.Time `json:"received_at"`
	// Fields are its fields in the form's order (the contact form's name, email, organization, topic,
	// message); Additional the fields a declared form kept without declaring them.
	Fields     store.Values   `json:"fields"`
	Additional store.Values   `json:"additional,omitempty"`
	Origin     string         `json:"origin,omitempty"`
	Spam       *store.Verdict `json:"spam,omitempty"`
	// Files are a declared form's files (D77): what and where they are, never their bytes.
	Files []store.File `json:"files,omitempty"`
	entry string       // its entry in its folder's stream: where a page continues
}

// Query selects a form's submissions: the folder (inbox, the default, or spam), stored from Since to
// Until (inclusive, zero: open; the time of its place in the stream: a released or retried submission
// is where it was handed back), in State (inbox only), holding Text (in any field's value or its ID, any
// case). Before continues a listing before that position (Page.Next); Limit is 1 to 200.
type Query struct {
	Folder       string
	Since, Until time.Time
	State        string
	Text         string
	Before       string
	Limit        int
}

// MaxLimit is the largest page.
const MaxLimit = 200

// ScanBudget bounds the entries one page examines when a filter (state or text) leaves most of them
// out: the page then comes back with fewer entries (even none) and a Next that continues the search, so
// that every page answers in bounded time on a store of millions.
const ScanBudget = 5000

// check refuses a query the listing cannot answer, naming the field.
func (q *Query) check() error {
	switch {
	case q.Folder == "":
		q.Folder = store.FolderInbox
	case q.Folder != store.FolderInbox && q.Folder != store.FolderSpam:
		return &FieldError{"folder", "inbox or spam"}
	}
	switch {
	case q.State != "" && q.Folder == store.FolderSpam:
		return &FieldError{"state", "the spam folder delivers nothing: leave state out"}
	case q.State != "" && !slices.Contains(States, q.State):
		return &FieldError{"state", "one of " + strings.Join(States, ", ")}
	case q.Limit < 1 || q.Limit > MaxLimit:
		return &FieldError{"limit", "an integer from 1 to " + strconv.Itoa(MaxLimit)}
	case len([]rune(q.Text)) > MaxText:
		return &FieldError{"q", "at most " + strconv.Itoa(MaxText) + " characters"}
	case !q.Since.IsZero() && !q.Until.IsZero() && q.Until.Before(q.Since):
		return &FieldError{"until", "before since"}
	case q.Before != "" && !store.ValidStreamID(q.Before):
		return &FieldError{"cursor", "not a cursor of this listing"}
	}
	return nil
}

// Page is a page of submissions, the newest first; Next, when set, continues it (Query.Before).
type Page struct {
	Submissions []Submission
	Next        string
}

// Submissions lists form's submissions that q selects, the newest first, a page at a time. The position
// is an entry of the folder's stream: submissions stored meanwhile come before it and neither shift nor
// repeat a page. Without a filter a page costs one range read; with one, at most ScanBudget entries.
func (o *Ops) Submissions(ctx context.Context, form string, q Query) (Page, error) {
	if err := q.check(); err != nil {
		return Page{}, err
	}
	queue, err := o.queueOf(ctx, form)
	if err != nil {
		return Page{}, err
	}
	stream := queue.Stream
	if q.Folder == store.FolderSpam {
		stream = queue.Spam
	}
	hi, lo := rangeOf(q)
	text := newMatcher(q.Text)
	filtered := q.State != "" || text != nil
	states := &deliveryStates{q: queue}
	page := Page{Submissions: []Submission{}}
	for examined := 0; ; {
		n := int64(q.Limit - len(page.Submissions) + 1) // one more: is there a next page?
		if filtered {
			n = int64(min(500, ScanBudget-examined))
		}
		msgs, err := o.rdb.XRevRangeN(ctx, stream, hi, lo, n).Result()
		if err != nil {
			return Page{}, failed(err)
		}
		if q.Folder == store.FolderInbox {
			if err := states.load(ctx, o.rdb, msgs); err != nil {
				return Page{}, err
			}
		}
		for i, m := range msgs {
			if len(page.Submissions) == q.Limit {
				page.Next = page.Submissions[len(page.Submissions)-1].entry // m is one more
				return page, nil
			}
			examined++
			if q.State != "" && states.of(m.ID) != q.State {
				continue // known from its entry: a submission left out is not decoded
			}
			raw, _ := m.Values[store.RecordField].(string)
			if text != nil && !text.prefilter(raw) && !text.in(store.MessageID(m)) {
				continue
			}
			s, err := view(form, q.Folder, m)
			if err != nil {
				return Page{}, err
			}
			if q.Folder == store.FolderInbox {
				s.State = states.of(m.ID)
			}
			if text != nil && !text.submission(s) {
				continue
			}
			page.Submissions = append(page.Submissions, s)
			if len(page.Submissions) == q.Limit && i == len(msgs)-1 && int64(len(msgs)) == n {
				page.Next = s.entry // the batch was full: there may be more
			}
		}
		switch {
		case int64(len(msgs)) < n: // the range is over
			return page, nil
		case len(page.Submissions) == q.Limit:
			return page, nil
		case filtered && examined >= ScanBudget:
			page.Next = msgs[len(msgs)-1].ID
			return page, nil
		}
		hi = "(" + msgs[len(msgs)-1].ID
	}
}

// rangeOf is the query's range of the stream, from its newest end (XREVRANGE's end and start).
func rangeOf(q Query) (hi, lo string) {
	hi, lo = "+", "-"
	if !q.Until.IsZero() {
		hi = strconv.FormatInt(q.Until.UnixMilli(), 10) + "-" + strconv.FormatUint(math.MaxUint64, 10)
	}
	if q.Before != "" && (hi == "+" || idLess(q.Before, hi)) {
		hi = "(" + q.Before
	}
	if !q.Since.IsZero() {
		lo = strconv.FormatInt(q.Since.UnixMilli(), 10) + "-0"
	}
	return hi, lo
}

// Submission is one submission of form, by its ID, in either folder.
func (o *Ops) Submission(ctx context.Context, form, id string) (Submission, error) {
	queue, err := o.queueOf(ctx, form)
	if err != nil {
		return Submission{}, err
	}
	at, err := store.Locate(ctx, o.rdb, queue, id)
	if err != nil {
		return Submission{}, failed(err)
	}
	s, err := view(form, at.Folder, at.Message)
	if err != nil || at.Folder == store.FolderSpam {
		return s, err
	}
	states := &deliveryStates{q: queue}
	if err := states.load(ctx, o.rdb, []redis.XMessage{at.Message}); err != nil {
		return Submission{}, err
	}
	s.State = states.of(at.Entry)
	return s, nil
}

// view reads a stream entry of form's folder as a Submission (its state is the caller's to set).
func view(form, folder string, m redis.XMessage) (Submission, error) {
	raw, _ := m.Values[store.RecordField].(string)
	s := Submission{ID: store.MessageID(m), Form: form, Folder: folder, State: StateSpam, entry: m.ID}
	if folder == store.FolderSpam {
		e := store.SpamEntryOf(m)
		s.Spam = &e.Verdict
	}
	if err := fieldsOf(form, raw, &s); err != nil {
		return Submission{}, err
	}
	if s.ReceivedAt.IsZero() {
		s.ReceivedAt = store.StreamTime(s.ID).UTC()
	}
	return s, nil
}

// fieldsOf reads a stored record into s: a contact message's fields in their order, a declared form's
// as it stored them. A spam folder keeps whatever was sent; a record that is not the form's is shown
// with no fields rather than refused.
func fieldsOf(form, raw string, s *Submission) error {
	if form == KindContact {
		var rec store.ContactRecord
		if err := json.Unmarshal([]byte(raw), &rec); err != nil {
			return err
		}
		s.Fields = store.Values{{Name: "name", Value: rec.Name}, {Name: "email", Value: rec.Email}}
		if rec.Organization != "" {
			s.Fields = append(s.Fields, store.FieldValue{Name: "organization", Value: rec.Organization})
		}
		s.Fields = append(s.Fields, store.FieldValue{Name: "topic", Value: rec.Topic}, store.FieldValue{Name: "message", Value: rec.Message})
		s.ReceivedAt, s.Origin = rec.ReceivedAt.UTC(), rec.Origin
		return nil
	}
	var rec store.FormRecord
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return err
	}
	s.Fields, s.Additional, s.ReceivedAt, s.Origin, s.Files = rec.Fields, rec.Additional, rec.ReceivedAt.UTC(), rec.Origin, rec.Files
	if s.Fields == nil {
		s.Fields = store.Values{}
	}
	return nil
}

// deliveryStates tells the delivery state of a queue's entries: its delivery group's last read entry
// (read once), the dead letters of the entries it was given, and the entries it holds waiting for a
// retry (per batch). What it reads grows with the entries shown, not with the store: a page of the
// newest entries reads the dead letters that died since, not all of them.
type deliveryStates struct {
	q        store.Queue
	loaded   bool
	group    bool
	last     string
	dead     map[string]bool
	deadFrom string // the dead letters that died from this ID on are in dead ("": none read yet)
	pending  map[string]bool
}

// load reads what the states of msgs (a batch, newest first) need.
func (d *deliveryStates) load(ctx context.Context, rdb redis.UniversalClient, msgs []redis.XMessage) error {
	if !d.loaded {
		d.loaded = true
		d.dead = map[string]bool{}
		groups, err := rdb.XInfoGroups(ctx, d.q.Stream).Result()
		if err != nil && !strings.Contains(err.Error(), "no such key") {
			return failed(err)
		}
		for _, g := range groups {
			if g.Name == store.DeliveryGroup {
				d.group, d.last = true, g.LastDeliveredID
			}
		}
	}
	d.pending = map[string]bool{}
	if !d.group || len(msgs) == 0 {
		return nil // without the group nothing is delivered, nor failed
	}
	if err := d.loadDead(ctx, rdb, msgs[len(msgs)-1].ID); err != nil {
		return err
	}
	pending, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: d.q.Stream, Group: store.DeliveryGroup,
		Start: msgs[len(msgs)-1].ID, End: msgs[0].ID, Count: int64(len(msgs)) + 100}).Result() // + erased entries still held
	if err != nil && !errors.Is(err, redis.Nil) {
		return failed(err)
	}
	for _, p := range pending {
		d.pending[p.ID] = true
	}
	return nil
}

// loadDead reads the dead letters of the entries from oldest on: those that died from its millisecond
// on (store.Queue.DeadLettersDied), less those an earlier batch read.
func (d *deliveryStates) loadDead(ctx context.Context, rdb redis.UniversalClient, oldest string) error {
	ms, _ := splitID(oldest)
	from := strconv.FormatUint(ms, 10) + "-0"
	if d.deadFrom != "" && !idLess(from, d.deadFrom) {
		return nil
	}
	end := "+"
	if d.deadFrom != "" {
		end = "(" + d.deadFrom
	}
	dead, err := d.q.DeadLettersDied(ctx, rdb, from, end)
	if err != nil {
		return failed(err)
	}
	for _, l := range dead {
		d.dead[l.StoredEntry()] = true
	}
	d.deadFrom = from
	return nil
}

func (d *deliveryStates) of(entry string) string {
	switch {
	case !d.group:
		return StateStored
	case idLess(d.last, entry):
		return StateQueued
	case d.pending[entry]:
		return StateDelivering
	case d.dead[entry]:
		return StateFailed
	}
	return StateDelivered
}

// idLess compares stream IDs "ms-seq".
func idLess(a, b string) bool {
	am, as := splitID(a)
	bm, bs := splitID(b)
	return am < bm || am == bm && as < bs
}

func splitID(id string) (uint64, uint64) {
	ms, seq, _ := strings.Cut(id, "-")
	m, _ := strconv.ParseUint(ms, 10, 64)
	s, _ := strconv.ParseUint(seq, 10, 64)
	return m, s
}
