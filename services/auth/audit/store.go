package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/platform/storeerr"
)

// StreamKey is the Redis stream that keeps the trail. One key, so one Redis Cluster slot: every write
// is one script on one node, and a read is a range over one stream.
const StreamKey = "auth:audit"

// ErrUnavailable wraps Redis failures.
var ErrUnavailable = storeerr.Unavailable("audit store unavailable")

// Limits bound the stream: entries older than Retention (by Redis's clock) and the oldest beyond
// MaxEntries are trimmed at every write; 0 leaves that bound off.
type Limits struct {
	Retention  time.Duration
	MaxEntries int64
}

// Store is the trail in Redis.
type Store struct {
	rdb    redis.UniversalClient
	limits func() Limits
}

// NewStore returns a Store; limits is read at every write (the live configuration).
func NewStore(rdb redis.UniversalClient, limits func() Limits) *Store {
	if limits == nil {
		limits = func() Limits { return Limits{} }
	}
	return &Store{rdb: rdb, limits: limits}
}

// appendScript adds the events and trims the stream by size (exact MAXLEN on each XADD) and by age
// (XTRIM MINID, from Redis's own clock, so that replicas with skewed clocks agree), in one step.
// KEYS: the stream. ARGV: max entries (0: none), retention in ms (0: none), then one JSON event each.
var appendScript = redis.NewScript(`
local maxlen = tonumber(ARGV[1])
for i = 3, #ARGV do
  if maxlen > 0 then
    redis.call('XADD', KEYS[1], 'MAXLEN', maxlen, '*', 'e', ARGV[i])
  else
    redis.call('XADD', KEYS[1], '*', 'e', ARGV[i])
  end
end
local retention = tonumber(ARGV[2])
if retention > 0 then
  local t = redis.call('TIME')
  local cutoff = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - retention
  if cutoff > 0 then redis.call('XTRIM', KEYS[1], 'MINID', cutoff) end
end
return #ARGV - 2
`)

// Append stores events, oldest first, in one round trip.
func (s *Store) Append(ctx context.Context, events ...Event) error {
	if len(events) == 0 {
		return nil
	}
	lim := s.limits()
	args := make([]any, 0, len(events)+2)
	args = append(args, max(lim.MaxEntries, 0), max(lim.Retention.Milliseconds(), 0))
	for _, e := range events {
		e.ID = ""
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		args = append(args, string(b))
	}
	if err := appendScript.Run(ctx, s.rdb, []string{StreamKey}, args...).Err(); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}

// Filter selects events. Empty fields match everything.
type Filter struct {
	User   string
	Client string
	Kinds  []Kind
	// Since and Until bound the time the store received the event (its entry ID), inclusive.
	Since, Until time.Time
	// Limit keeps the newest Limit matching events (0: all).
	Limit int
}

func (f Filter) match(e Event) bool {
	return (f.User == "" || e.User == f.User) &&
		(f.Client == "" || e.Client == f.Client) &&
		(len(f.Kinds) == 0 || slices.Contains(f.Kinds, e.Kind))
}

// queryPage is how many entries one XREVRANGE reads.
const queryPage = 500

// Query returns the matching events, oldest first. It reads the stream from the newest entry backwards,
// a page at a time, until Limit events matched or the range ends.
func (s *Store) Query(ctx context.Context, f Filter) ([]Event, error) {
	end, start := "+", "-"
	if !f.Until.IsZero() {
		end = strconv.FormatInt(f.Until.UnixMilli(), 10) // the whole millisecond: IDs are ms-seq
	}
	if !f.Since.IsZero() {
		start = strconv.FormatInt(f.Since.UnixMilli(), 10)
	}
	var out []Event
	for {
		msgs, err := s.rdb.XRevRangeN(ctx, StreamKey, end, start, queryPage).Result()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		for _, m := range msgs {
			raw, _ := m.Values["e"].(string)
			var e Event
			if json.Unmarshal([]byte(raw), &e) != nil {
				continue // not ours: skip rather than fail the whole listing
			}
			e.ID = m.ID
			if f.match(e) {
				out = append(out, e)
				if f.Limit > 0 && len(out) == f.Limit {
					slices.Reverse(out)
					return out, nil
				}
			}
		}
		if len(msgs) < queryPage {
			slices.Reverse(out)
			return out, nil
		}
		end = "(" + msgs[len(msgs)-1].ID // exclusive (Redis 6.2+)
	}
}

// Len is the number of entries in the stream.
func (s *Store) Len(ctx context.Context) (int64, error) {
	n, err := s.rdb.XLen(ctx, StreamKey).Result()
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return n, nil
}

// EntryTime is the time the store received an entry, from its ID.
func EntryTime(id string) (time.Time, bool) {
	ms, _, ok := strings.Cut(id, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(n).UTC(), true
}
