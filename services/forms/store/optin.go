package store

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The double opt-in's store (docs/architecture.md, D24): state changes of an entry found by its id, the
// expiry of pending entries, the waitlist's retention, the outbox of confirmation mails, and the key
// that signs the links. Each state change is one script, so a confirmation and an unsubscription, or
// an expiry, never interleave.

// lookupLua finds the entry of id (ARGV[1]) through the id index, checking the record still has that id.
const lookupLua = `
local addr = redis.call('HGET', KEYS[2], ARGV[1])
if not addr then return 0 end
local raw = redis.call('HGET', KEYS[1], addr)
if not raw then return 0 end
local rec = cjson.decode(raw)
if rec.id ~= ARGV[1] then return 0 end
`

// confirmLua: KEYS entries, ids, pending; ARGV id, the time. 1 confirmed now, 2 already confirmed,
// 3 unsubscribed since, 0 not there (expired, erased, or an id it never had).
var confirmScript = redis.NewScript(lookupLua + `
if rec.state == 'confirmed' then return 2 end
if rec.state ~= 'pending' then return 3 end
rec.state = 'confirmed'
rec.confirmed_at = ARGV[2]
redis.call('HSET', KEYS[1], addr, cjson.encode(rec))
redis.call('ZREM', KEYS[3], addr)
return 1`)

// unsubscribeLua: KEYS entries, ids, pending; ARGV id, the time. 1 unsubscribed now, 2 already, 0 not
// there. A pending entry unsubscribed is no longer waiting to expire: it is kept, as the record that
// the address asked for no mail.
var unsubscribeScript = redis.NewScript(lookupLua + `
if rec.state == 'unsubscribed' then return 2 end
rec.state = 'unsubscribed'
rec.unsubscribed_at = ARGV[2]
redis.call('HSET', KEYS[1], addr, cjson.encode(rec))
redis.call('ZREM', KEYS[3], addr)
return 1`)

// LinkOutcome is what a confirmation or unsubscription link did.
type LinkOutcome int

const (
	LinkGone    LinkOutcome = iota // no entry has this id (expired, erased, signed up anew)
	LinkDone                       // the state changed now
	LinkAlready                    // the entry was in that state already
	LinkRefused                    // a confirmation of an entry unsubscribed since
)

func linkResult(n int64, err error) (LinkOutcome, error) {
	switch {
	case err != nil:
		return LinkGone, err
	case n == 1:
		return LinkDone, nil
	case n == 2:
		return LinkAlready, nil
	case n == 3:
		return LinkRefused, nil
	}
	return LinkGone, nil
}

// ConfirmWaitlist confirms the pending entry of id.
func ConfirmWaitlist(ctx context.Context, rdb redis.UniversalClient, id string, now time.Time) (LinkOutcome, error) {
	return linkResult(confirmScript.Run(ctx, rdb, []string{WaitlistEntries, WaitlistIDs, WaitlistPending}, id, stamp(now)).Int64())
}

// UnsubscribeWaitlist marks the entry of id unsubscribed.
func UnsubscribeWaitlist(ctx context.Context, rdb redis.UniversalClient, id string, now time.Time) (LinkOutcome, error) {
	return linkResult(unsubscribeScript.Run(ctx, rdb, []string{WaitlistEntries, WaitlistIDs, WaitlistPending}, id, stamp(now)).Int64())
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// expireScript erases pending entries whose time is up: KEYS entries, ids, pending, order; ARGV now
// (ms), how many at most. An entry confirmed or unsubscribed meanwhile is only taken off the list of
// pending ones. A sign-up of an address that had unsubscribed goes back to that unsubscribed record
// (kept as "suppressed" by waitlistLua), its id indexed again, instead of being erased. The order list is searched from its end, where recent (so pending) entries are.
var expireScript = redis.NewScript(`
local due = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local n = 0
for _, addr in ipairs(due) do
  redis.call('ZREM', KEYS[3], addr)
  local raw = redis.call('HGET', KEYS[1], addr)
  if raw then
    local rec = cjson.decode(raw)
    if rec.state == 'pending' then
      if rec.id then redis.call('HDEL', KEYS[2], rec.id) end
      if type(rec.suppressed) == 'table' then
        local old = rec.suppressed
        redis.call('HSET', KEYS[1], addr, cjson.encode(old))
        if old.id then redis.call('HSET', KEYS[2], old.id, addr) end
      else
        redis.call('HDEL', KEYS[1], addr)
        redis.call('LREM', KEYS[4], -1, addr)
      end
      n = n + 1
    end
  end
end
return {n, #due}`)

// sweepPage bounds one script call of a sweep, so that a long sweep never blocks Redis for long.
const sweepPage = 100

// ExpirePending erases the entries left unconfirmed past their time and returns how many.
func ExpirePending(ctx context.Context, rdb redis.UniversalClient, now time.Time) (int64, error) {
	var total int64
	for {
		res, err := expireScript.Run(ctx, rdb, []string{WaitlistEntries, WaitlistIDs, WaitlistPending, WaitlistOrder},
			now.UnixMilli(), sweepPage).Int64Slice()
		if err != nil || len(res) != 2 {
			return total, err
		}
		total += res[0]
		if res[1] < sweepPage {
			return total, nil
		}
	}
}

// retentionScript erases the oldest entries, walking the sign-up order from position ARGV[3] while they
// were signed up before ARGV[1] (the first 19 characters of an RFC 3339 time: to the second, which
// compares as text); it looks at ARGV[2] positions at most. KEYS entries, ids, pending, order. An address
// signed up again after unsubscribing has a new created_at at its old place (its record keeps the
// unsubscription as "suppressed"): it is passed, not a stop, so the entries behind it are still reached.
// It answers {erased positions, positions looked at, positions passed}.
var retentionScript = redis.NewScript(`
local n, seen, passed = 0, 0, 0
local i = tonumber(ARGV[3])
while seen < tonumber(ARGV[2]) do
  local addr = redis.call('LINDEX', KEYS[4], i)
  if not addr then break end
  seen = seen + 1
  local raw = redis.call('HGET', KEYS[1], addr)
  local erase = true
  if raw then
    local rec = cjson.decode(raw)
    if string.sub(rec.created_at or '', 1, 19) >= ARGV[1] then
      if type(rec.suppressed) ~= 'table' then break end
      erase = false
    else
      redis.call('HDEL', KEYS[1], addr)
      if rec.id then redis.call('HDEL', KEYS[2], rec.id) end
      redis.call('ZREM', KEYS[3], addr)
    end
  end
  if erase then
    if i == 0 then
      redis.call('LPOP', KEYS[4])
    else -- behind a passed entry: mark the position and remove the mark, the first from the head
      redis.call('LSET', KEYS[4], i, '\0erased')
      redis.call('LREM', KEYS[4], 1, '\0erased')
    end
    n = n + 1
  else
    i = i + 1
    passed = passed + 1
  end
end
return {n, seen, passed}`)

// TrimWaitlist erases waitlist entries signed up before now−retention, whatever their state, and
// returns how many list positions it removed.
func TrimWaitlist(ctx context.Context, rdb redis.UniversalClient, retention time.Duration, now time.Time) (int64, error) {
	cutoff := now.Add(-retention).UTC().Format("2006-01-02T15:04:05")
	var total, from int64
	for {
		res, err := retentionScript.Run(ctx, rdb, []string{WaitlistEntries, WaitlistIDs, WaitlistPending, WaitlistOrder}, cutoff, sweepPage, from).Int64Slice()
		if err != nil || len(res) != 3 {
			return total, err
		}
		total += res[0]
		from += res[2] // the passed entries stay where they are: the next page starts behind them
		if res[1] < sweepPage {
			return total, nil
		}
	}
}

// WaitlistEntry reads the record of a canonical address.
func WaitlistEntry(ctx context.Context, rdb redis.UniversalClient, canonical string) (WaitlistRecord, bool, error) {
	raw, err := rdb.HGet(ctx, WaitlistEntries, canonical).Result()
	if errors.Is(err, redis.Nil) {
		return WaitlistRecord{}, false, nil
	}
	if err != nil {
		return WaitlistRecord{}, false, err
	}
	var rec WaitlistRecord
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return WaitlistRecord{}, false, fmt.Errorf("waitlist entry %q: %w", canonical, err)
	}
	return rec, true, nil
}

// OutboxMail is one queued confirmation mail: its stream id and the address.
type OutboxMail struct {
	ID, Address string
}

// EnsureOutboxGroup creates the mailers' consumer group (and the stream) when missing.
func EnsureOutboxGroup(ctx context.Context, rdb redis.UniversalClient) error {
	err := rdb.XGroupCreateMkStream(ctx, WaitlistOutbox, OutboxGroup, "0").Err()
	if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
		return err
	}
	return nil
}

// ReadOutbox takes up to count new mails for consumer, waiting up to block for one.
func ReadOutbox(ctx context.Context, rdb redis.UniversalClient, consumer string, count int64, block time.Duration) ([]OutboxMail, error) {
	streams, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: OutboxGroup, Consumer: consumer,
		Streams: []string{WaitlistOutbox, ">"}, Count: count, Block: block}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []OutboxMail
	for _, s := range streams {
		out = append(out, outboxMails(s.Messages)...)
	}
	return out, nil
}

// ClaimOutbox takes over up to count mails that waited longer than minIdle with another attempt (a
// failed one, or one whose consumer died): the same test-and-take as XAUTOCLAIM.
func ClaimOutbox(ctx context.Context, rdb redis.UniversalClient, consumer string, minIdle time.Duration, count int64) ([]OutboxMail, error) {
	msgs, _, err := rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: WaitlistOutbox, Group: OutboxGroup,
		Consumer: consumer, MinIdle: minIdle, Start: "0-0", Count: count}).Result()
	if err != nil {
		return nil, err
	}
	return outboxMails(msgs), nil
}

func outboxMails(msgs []redis.XMessage) []OutboxMail {
	out := make([]OutboxMail, 0, len(msgs))
	for _, m := range msgs {
		a, _ := m.Values["a"].(string)
		out = append(out, OutboxMail{ID: m.ID, Address: a})
	}
	return out
}

// OutboxDone drops a mail that was sent, or given up.
func OutboxDone(ctx context.Context, rdb redis.UniversalClient, id string) error {
	pipe := rdb.TxPipeline()
	pipe.XAck(ctx, WaitlistOutbox, OutboxGroup, id)
	pipe.XDel(ctx, WaitlistOutbox, id)
	_, err := pipe.Exec(ctx)
	return err
}

// LinkKey is the key that signs the double opt-in's links: 32 random bytes made by the first replica
// that needs it and kept in the store, so that every replica shares it and it outlives restarts.
// Deleting it makes every link sent so far invalid.
func LinkKey(ctx context.Context, rdb redis.UniversalClient) ([]byte, error) {
	fresh := make([]byte, 32)
	_, _ = rand.Read(fresh)
	if err := rdb.SetNX(ctx, waitlistLinkKey, fresh, 0).Err(); err != nil {
		return nil, err
	}
	key, err := rdb.Get(ctx, waitlistLinkKey).Bytes()
	if err != nil {
		return nil, err
	}
	if len(key) < 32 {
		return nil, fmt.Errorf("the waitlist's link key in %s is too short", waitlistLinkKey)
	}
	return key, nil
}
