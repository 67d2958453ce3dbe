package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// Pages of the trail, newest first, for the admin API (GET /admin/v1/audit, D59). Both streams are read
// backwards from a position and merged in one order: by entry ID, newest first, and at an equal ID the
// security stream's entry before the attempts stream's. A Cursor is the last entry of a page; the next
// page is everything after it in that order, so events recorded meanwhile never shift a page (they are
// newer than its first).

// Streams in the order Cursor.Stream numbers them.
var pageStreams = []string{StreamKey, AttemptsKey}

// StreamNames name the streams for a reader: "security", "attempts" (Cursor.Stream indexes it).
var StreamNames = []string{"security", "attempts"}

// Cursor is the position of an entry: its stream (an index of StreamNames) and ID.
type Cursor struct {
	Stream int
	ID     string
}

var entryID = regexp.MustCompile(`^[0-9]{1,20}-[0-9]{1,20}$`)

// Valid reports whether c can be a position (a stream of the trail, an entry ID's form).
func (c Cursor) Valid() bool {
	return c.Stream >= 0 && c.Stream < len(pageStreams) && entryID.MatchString(c.ID)
}

// Entry is an event and where it is kept.
type Entry struct {
	Event
	At Cursor
}

// Page returns at most limit events matching f (Limit is not used), newest first, after the position
// after (nil: from the newest), and the position of the page's last event when more follow (nil when
// none do). f's Since and Until bound the time the store received the event, inclusive, as in Query.
func (s *Store) Page(ctx context.Context, f Filter, after *Cursor, limit int) ([]Entry, *Cursor, error) {
	if limit <= 0 {
		return nil, nil, nil
	}
	var all []Entry
	for stream, key := range pageStreams {
		got, err := s.pageStream(ctx, key, stream, f, after, limit+1)
		if err != nil {
			return nil, nil, err
		}
		all = append(all, got...)
	}
	slices.SortFunc(all, func(a, b Entry) int {
		if c := compareIDs(b.At.ID, a.At.ID); c != 0 {
			return c
		}
		return a.At.Stream - b.At.Stream
	})
	if len(all) <= limit {
		return all, nil, nil
	}
	all = all[:limit]
	next := all[limit-1].At
	return all, &next, nil
}

// pageStream reads up to n matching entries of one stream, newest first, after the position after.
func (s *Store) pageStream(ctx context.Context, key string, stream int, f Filter, after *Cursor, n int) ([]Entry, error) {
	end, start := "+", "-"
	if !f.Until.IsZero() {
		end = strconv.FormatInt(f.Until.UnixMilli(), 10)
	}
	if !f.Since.IsZero() {
		start = strconv.FormatInt(f.Since.UnixMilli(), 10)
	}
	if after != nil {
		// After (ID, s) in the order: an earlier ID, or the same ID in a later stream.
		if stream > after.Stream {
			end = after.ID
		} else {
			end = "(" + after.ID
		}
	}
	var out []Entry
	for {
		msgs, err := s.rdb.XRevRangeN(ctx, key, end, start, queryPage).Result()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		for _, m := range msgs {
			if !within(m.ID, f.Since, f.Until) {
				continue // the cursor's bound was later than Until
			}
			raw, _ := m.Values["e"].(string)
			var e Event
			if json.Unmarshal([]byte(raw), &e) != nil {
				continue // not ours
			}
			e.ID = m.ID
			if f.match(e) {
				out = append(out, Entry{Event: e, At: Cursor{Stream: stream, ID: m.ID}})
				if len(out) == n {
					return out, nil
				}
			}
		}
		if len(msgs) < queryPage {
			return out, nil
		}
		end = "(" + msgs[len(msgs)-1].ID
	}
}

// within reports whether the entry id was received between since and until (zero: unbounded), to the
// millisecond, inclusive.
func within(id string, since, until time.Time) bool {
	t, ok := EntryTime(id)
	if !ok {
		return false
	}
	ms := t.UnixMilli()
	return (since.IsZero() || ms >= since.UnixMilli()) && (until.IsZero() || ms <= until.UnixMilli())
}
