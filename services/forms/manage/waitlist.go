package manage

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/forms/store"
)

// WaitlistStates are a waitlist entry's states: subscribed (taken without the double opt-in), pending
// (waiting for its owner's confirmation), confirmed, unsubscribed.
var WaitlistStates = []string{store.StateSubscribed, store.StatePending, store.StateConfirmed, store.StateUnsubscribed}

// WaitlistEntry is a waitlist entry as the operations show it: never the id its mails' links carry.
type WaitlistEntry struct {
	Email          string     `json:"email"`
	Name           string     `json:"name,omitempty"`
	Association    string     `json:"association,omitempty"`
	Role           string     `json:"role,omitempty"`
	Size           string     `json:"size,omitempty"`
	Consent        bool       `json:"consent"`
	CreatedAt      time.Time  `json:"created_at"`
	Origin         string     `json:"origin,omitempty"`
	State          string     `json:"state"`
	ConsentVersion string     `json:"consent_version,omitempty"`
	ConfirmedAt    *time.Time `json:"confirmed_at,omitempty"`
	UnsubscribedAt *time.Time `json:"unsubscribed_at,omitempty"`
}

func waitlistEntryOf(rec store.WaitlistRecord) WaitlistEntry {
	e := WaitlistEntry{Email: rec.Email, Name: rec.Name, Association: rec.Association, Role: rec.Role, Size: rec.Size, Consent: rec.Consent,
		CreatedAt: rec.CreatedAt.UTC(), Origin: rec.Origin, State: rec.State, ConsentVersion: rec.ConsentVersion}
	if e.State == "" {
		e.State = store.StateSubscribed
	}
	if t := rec.ConfirmedAt; !t.IsZero() {
		t = t.UTC()
		e.ConfirmedAt = &t
	}
	if t := rec.UnsubscribedAt; !t.IsZero() {
		t = t.UTC()
		e.UnsubscribedAt = &t
	}
	return e
}

// WaitlistPosition is where a listing of the waitlist goes on: before the entry of Email, which was at
// Index of the sign-up order.
type WaitlistPosition struct {
	Index int64
	Email string
}

// WaitlistQuery selects waitlist entries: in State, holding Text (the address, a name, the
// association, any case); Before continues a listing (WaitlistPage.Next); Limit is 1 to 200.
type WaitlistQuery struct {
	State  string
	Text   string
	Before *WaitlistPosition
	Limit  int
}

// WaitlistPage is a page of entries, the latest signed up first; Next, when set, continues it.
type WaitlistPage struct {
	Entries []WaitlistEntry
	Next    *WaitlistPosition
}

func (q WaitlistQuery) check() error {
	switch {
	case q.State != "" && !slices.Contains(WaitlistStates, q.State):
		return &FieldError{"state", "one of " + strings.Join(WaitlistStates, ", ")}
	case q.Limit < 1 || q.Limit > MaxLimit:
		return &FieldError{"limit", "an integer from 1 to " + strconv.Itoa(MaxLimit)}
	case len([]rune(q.Text)) > MaxText:
		return &FieldError{"q", "at most " + strconv.Itoa(MaxText) + " characters"}
	}
	return nil
}

// Waitlist lists the entries q selects, the latest signed up first, a page at a time. A position is the
// last entry's place in the sign-up order and its address: sign-ups meanwhile are appended and move
// nothing; an erasure or expiry meanwhile moves the entries behind it, and the page goes on after where
// the address is now (an entry it passed may come again). With a filter a page examines at most
// ScanBudget entries.
func (o *Ops) Waitlist(ctx context.Context, q WaitlistQuery) (WaitlistPage, error) {
	if err := q.check(); err != nil {
		return WaitlistPage{}, err
	}
	text := newMatcher(q.Text)
	filtered := q.State != "" || text != nil
	pos, err := o.waitlistStart(ctx, q.Before)
	if err != nil {
		return WaitlistPage{}, err
	}
	page := WaitlistPage{Entries: []WaitlistEntry{}}
	for examined := 0; pos >= 0; {
		n := int64(q.Limit-len(page.Entries)) + 1
		if filtered {
			n = int64(min(500, ScanBudget-examined))
		}
		from := max(0, pos-n+1)
		addrs, err := o.rdb.LRange(ctx, store.WaitlistOrder, from, pos).Result()
		if err != nil {
			return WaitlistPage{}, failed(err)
		}
		if len(addrs) == 0 {
			return page, nil
		}
		vals, err := o.rdb.HMGet(ctx, store.WaitlistEntries, addrs...).Result()
		if err != nil {
			return WaitlistPage{}, failed(err)
		}
		for i := len(addrs) - 1; i >= 0; i-- {
			at := from + int64(i)
			if len(page.Entries) == q.Limit { // the one examined last is the one after this
				page.Next = &WaitlistPosition{Index: at + 1, Email: addrs[i+1]}
				return page, nil
			}
			examined++
			raw, ok := vals[i].(string)
			if !ok || text != nil && !text.prefilter(raw) {
				continue // erased since the order was read, or not it
			}
			var rec store.WaitlistRecord
			if err := json.Unmarshal([]byte(raw), &rec); err != nil {
				return WaitlistPage{}, err
			}
			e := waitlistEntryOf(rec)
			if q.State != "" && e.State != q.State || text != nil && !text.waitlist(e) {
				continue
			}
			page.Entries = append(page.Entries, e)
			if len(page.Entries) == q.Limit && i == 0 && from > 0 {
				page.Next = &WaitlistPosition{Index: at, Email: e.Email}
			}
		}
		pos = from - 1
		switch {
		case len(page.Entries) == q.Limit:
			return page, nil
		case filtered && examined >= ScanBudget && pos >= 0:
			page.Next = &WaitlistPosition{Index: from, Email: addrs[0]}
			return page, nil
		}
	}
	return page, nil
}

// waitlistStart is the position a listing starts at: the newest entry, or the one before the
// position's address where that address is now.
func (o *Ops) waitlistStart(ctx context.Context, before *WaitlistPosition) (int64, error) {
	n, err := o.rdb.LLen(ctx, store.WaitlistOrder).Result()
	if err != nil {
		return 0, failed(err)
	}
	if before == nil {
		return n - 1, nil
	}
	at, err := o.rdb.LIndex(ctx, store.WaitlistOrder, before.Index).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, failed(err)
	}
	if at == before.Email {
		return before.Index - 1, nil
	}
	pos, err := o.rdb.LPos(ctx, store.WaitlistOrder, before.Email, redis.LPosArgs{}).Result()
	switch {
	case err == nil:
		return pos - 1, nil
	case errors.Is(err, redis.Nil): // erased: the entries before it have not moved
		return min(before.Index, n) - 1, nil
	}
	return 0, failed(err)
}

func (m *matcher) waitlist(e WaitlistEntry) bool {
	for _, s := range []string{e.Email, e.Name, e.Association, e.Role, e.Size, e.Origin} {
		if m.in(s) {
			return true
		}
	}
	return false
}
