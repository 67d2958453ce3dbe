package audit

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/platform/storeerr"
)

// StreamKey is the Redis stream that keeps the security events, AttemptsKey the one that keeps what
// anyone can cause without a credential (TrailOf). One key each, so one Redis Cluster slot each: a
// write is one script on one node, and a read is a range over one stream.
const (
	StreamKey   = "auth:audit"
	AttemptsKey = "auth:audit:attempts"
)

// ChainPurpose is the HKDF info string the chain's keys are derived with (keys.Set.Secrets).
const ChainPurpose = "formsservice auth audit-chain v1"

// ErrUnavailable wraps Redis failures.
var ErrUnavailable = storeerr.Unavailable("audit store unavailable")

// Limits bound each stream: entries older than Retention (by Redis's clock) and the oldest beyond
// MaxEntries are trimmed at every write; 0 leaves that bound off.
type Limits struct {
	Retention  time.Duration
	MaxEntries int64
}

// ChainKeys sign (Current) and verify (all) the security stream's chain.
type ChainKeys struct {
	Current []byte
	Others  [][]byte
}

// Store is the trail in Redis.
type Store struct {
	rdb    redis.UniversalClient
	limits func() Limits
	chain  *ChainKeys

	mu   sync.Mutex
	head string // the MAC of the security stream's newest entry, as this store last saw it
}

// NewStore returns a Store; limits is read at every write (the live configuration).
func NewStore(rdb redis.UniversalClient, limits func() Limits) *Store {
	if limits == nil {
		limits = func() Limits { return Limits{} }
	}
	return &Store{rdb: rdb, limits: limits}
}

// Chained makes the store link every security event to the one before it: each entry carries the MAC of
// its predecessor (p) and its own (h), an HMAC-SHA256 of both under keys derived from the signing key,
// which Redis does not hold. An edit, a deletion or an insertion inside the stream breaks the chain
// (Verify); trimming only shortens it from the old end.
func (s *Store) Chained(k ChainKeys) *Store {
	s.chain = &k
	return s
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
` + trimLua + `
return #ARGV - 2
`)

const trimLua = `
local retention = tonumber(ARGV[2])
if retention > 0 then
  local t = redis.call('TIME')
  local cutoff = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - retention
  if cutoff > 0 then redis.call('XTRIM', KEYS[1], 'MINID', cutoff) end
end
`

// chainScript is appendScript for the chained stream: it adds the events only if the stream's newest
// entry is still the one their MACs follow (ARGV[3], "" for none or an entry from before the chain),
// else it adds nothing and answers that entry's MAC, so that the caller computes the MACs again (another
// replica wrote meanwhile). ARGV: max entries, retention in ms, the expected head, then per event its
// JSON, its predecessor's MAC and its MAC.
var chainScript = redis.NewScript(`
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local head = ''
if #last > 0 then
  local f = last[1][2]
  for i = 1, #f, 2 do if f[i] == 'h' then head = f[i + 1] end end
end
if head ~= ARGV[3] then return {0, head} end
local maxlen = tonumber(ARGV[1])
for i = 4, #ARGV, 3 do
  if maxlen > 0 then
    redis.call('XADD', KEYS[1], 'MAXLEN', maxlen, '*', 'e', ARGV[i], 'p', ARGV[i + 1], 'h', ARGV[i + 2])
  else
    redis.call('XADD', KEYS[1], '*', 'e', ARGV[i], 'p', ARGV[i + 1], 'h', ARGV[i + 2])
  end
end
` + trimLua + `
return {1, ''}
`)

// chainMAC is an entry's MAC: its predecessor's MAC and its JSON, under key.
func chainMAC(key []byte, prev, entry string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(prev))
	m.Write([]byte{'\n'})
	m.Write([]byte(entry))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Append stores events, oldest first: the security events in the security stream, the rest in the
// attempts stream (TrailOf; unkept ones nowhere), one round trip per stream.
func (s *Store) Append(ctx context.Context, events ...Event) error {
	var security, attempts []string
	for _, e := range events {
		e.ID = ""
		if e.Time.IsZero() { // the recorder stamps every event; a caller of Append may not have
			e.Time = time.Now().UTC()
		}
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		switch TrailOf(e) {
		case Security:
			security = append(security, string(b))
		case Attempts:
			attempts = append(attempts, string(b))
		}
	}
	lim := s.limits()
	bounds := []any{max(lim.MaxEntries, 0), max(lim.Retention.Milliseconds(), 0)}
	if len(attempts) > 0 {
		args := append(append(make([]any, 0, len(attempts)+2), bounds...), toAny(attempts)...)
		if err := appendScript.Run(ctx, s.rdb, []string{AttemptsKey}, args...).Err(); err != nil {
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	if len(security) == 0 {
		return nil
	}
	if s.chain == nil {
		args := append(append(make([]any, 0, len(security)+2), bounds...), toAny(security)...)
		if err := appendScript.Run(ctx, s.rdb, []string{StreamKey}, args...).Err(); err != nil {
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		return nil
	}
	return s.appendChained(ctx, bounds, security)
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, v := range ss {
		out[i] = v
	}
	return out
}

// appendChained adds entries to the security stream after the head this store last saw, and again
// after the real head when another writer moved it.
func (s *Store) appendChained(ctx context.Context, bounds []any, entries []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range 16 {
		args := append(make([]any, 0, 3+3*len(entries)), bounds...)
		args = append(args, s.head)
		prev := s.head
		for _, e := range entries {
			h := chainMAC(s.chain.Current, prev, e)
			args = append(args, e, prev, h)
			prev = h
		}
		res, err := chainScript.Run(ctx, s.rdb, []string{StreamKey}, args...).Slice()
		if err != nil || len(res) != 2 {
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		if ok, _ := res[0].(int64); ok == 1 {
			s.head = prev
			return nil
		}
		s.head, _ = res[1].(string)
	}
	return fmt.Errorf("%w: the audit chain's head kept moving", ErrUnavailable)
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

// Query returns the matching events of both streams, oldest first (by the time they were recorded). It reads each stream from its newest entry backwards, a page at a time, until Limit events
// matched or the range ends.
func (s *Store) Query(ctx context.Context, f Filter) ([]Event, error) {
	security, err := s.queryStream(ctx, StreamKey, f)
	if err != nil {
		return nil, err
	}
	attempts, err := s.queryStream(ctx, AttemptsKey, f)
	if err != nil {
		return nil, err
	}
	out := append(security, attempts...)
	// The two streams' IDs are their own; the time an event was recorded orders them together (one
	// replica's events in the order it recorded them; across replicas, as their clocks say).
	slices.SortStableFunc(out, func(a, b Event) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		return compareIDs(a.ID, b.ID)
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[len(out)-f.Limit:]
	}
	return out, nil
}

// compareIDs orders stream entry IDs ("ms-seq").
func compareIDs(a, b string) int {
	am, as, _ := strings.Cut(a, "-")
	bm, bs, _ := strings.Cut(b, "-")
	an, _ := strconv.ParseInt(am, 10, 64)
	bn, _ := strconv.ParseInt(bm, 10, 64)
	if c := cmp.Compare(an, bn); c != 0 {
		return c
	}
	aq, _ := strconv.ParseInt(as, 10, 64)
	bq, _ := strconv.ParseInt(bs, 10, 64)
	return cmp.Compare(aq, bq)
}

// queryStream is Query over one stream.
func (s *Store) queryStream(ctx context.Context, key string, f Filter) ([]Event, error) {
	end, start := "+", "-"
	if !f.Until.IsZero() {
		end = strconv.FormatInt(f.Until.UnixMilli(), 10) // the whole millisecond: IDs are ms-seq
	}
	if !f.Since.IsZero() {
		start = strconv.FormatInt(f.Since.UnixMilli(), 10)
	}
	var out []Event
	for {
		msgs, err := s.rdb.XRevRangeN(ctx, key, end, start, queryPage).Result()
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

// Len is the number of entries in both streams.
func (s *Store) Len(ctx context.Context) (int64, error) {
	var n int64
	for _, key := range []string{StreamKey, AttemptsKey} {
		m, err := s.rdb.XLen(ctx, key).Result()
		if err != nil {
			return 0, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		n += m
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
