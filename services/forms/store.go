package forms

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis keys. Every key of one endpoint carries the same hash tag ({waitlist} or {contact}), so each
// submission's script touches one slot and runs on one Redis Cluster master in one round trip: the
// per-IP rate-limit counter, the idempotency record, the uniqueness check and the durable record are
// decided together and atomically. The price is that one endpoint's data lives on one master; forms
// traffic is a few submissions per second and a waitlist of a million addresses is a few hundred MB, far
// inside one Redis. Splitting the rate-limit counter into the client IP's own slot would cost a second,
// sequential round trip on Cluster (the counter must gate the write, so the two cannot be pipelined).
const (
	// waitlistEntries is a hash: canonical address -> JSON record. HSETNX makes the entry unique.
	waitlistEntries = "fs:{waitlist}:entries"
	// waitlistOrder is a sorted set: canonical address scored by sign-up time (ms), for ordered export.
	waitlistOrder      = "fs:{waitlist}:order"
	waitlistRatePrefix = "fs:{waitlist}:rate:"

	// contactStream holds every stored contact message (field "m": the JSON record) until erased; the
	// delivery workers read it through the consumer group deliveryGroup.
	contactStream       = "fs:{contact}:messages"
	contactRatePrefix   = "fs:{contact}:rate:"
	contactIdemPrefix   = "fs:{contact}:idem:"
	contactDoneSuffix   = ":delivered" // fs:{contact}:<id>:delivered — channels already delivered
	contactDonePrefix   = "fs:{contact}:"
	deliveryGroup       = "delivery"
	contactRecordField  = "m"
	rateWindow          = time.Minute
	idempotencyLifetime = 24 * time.Hour
)

// The rate limit is a fixed one-minute window per client per endpoint, started by the client's first
// request: INCR, and PEXPIRE when the counter is new. The answer to a refused request carries the
// window's remaining time (Retry-After). limit 0 turns it off.
const rateLimitLua = `
local limit = tonumber(ARGV[1])
if limit > 0 then
  local n = redis.call('INCR', KEYS[1])
  if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
  if n > limit then
    local ttl = redis.call('PTTL', KEYS[1])
    if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]); ttl = tonumber(ARGV[2]) end
    return {0, ttl}
  end
end
`

// waitlistScript: KEYS rate, entries, order; ARGV limit, window ms, canonical address, record, now ms.
var waitlistScript = redis.NewScript(rateLimitLua + `
if redis.call('HSETNX', KEYS[2], ARGV[3], ARGV[4]) == 0 then return {2} end
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[3])
return {1}
`)

// contactScript: KEYS rate, idempotency, stream; ARGV limit, window ms, record, idempotency lifetime ms,
// "1" when an Idempotency-Key was sent. A replay answers like the first request and stores nothing.
var contactScript = redis.NewScript(rateLimitLua + `
if ARGV[5] == '1' then
  local first = redis.call('GET', KEYS[2])
  if first then return {3, first} end
end
local id = redis.call('XADD', KEYS[3], '*', 'm', ARGV[3])
if ARGV[5] == '1' then redis.call('SET', KEYS[2], id, 'PX', ARGV[4]) end
return {1, id}
`)

// outcome is what the store decided.
type outcome int

const (
	stored outcome = iota + 1
	duplicate
	replayed
	rateLimited
)

// storeResult is one submission's outcome; retryAfter is set for rateLimited.
type storeResult struct {
	outcome    outcome
	retryAfter time.Duration
	id         string
}

// store runs the submission scripts. It holds no state besides the client.
type store struct {
	rdb redis.UniversalClient
}

// rateKeyPart is the rate-limit identity of a client: its IPv4 address, or the /64 prefix of an IPv6
// address (one subscriber usually holds a whole /64, so counting single IPv6 addresses counts nothing).
func rateKeyPart(ip netip.Addr) string {
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

func (s *store) addWaitlist(ctx context.Context, client netip.Addr, limit int, canonical string, record []byte, now time.Time) (storeResult, error) {
	keys := []string{waitlistRatePrefix + rateKeyPart(client), waitlistEntries, waitlistOrder}
	v, err := waitlistScript.Run(ctx, s.rdb, keys, limit, rateWindow.Milliseconds(), canonical, record, now.UnixMilli()).Slice()
	if err != nil {
		return storeResult{}, err
	}
	return parseScriptResult(v)
}

func (s *store) addContact(ctx context.Context, client netip.Addr, limit int, idempotencyKey string, record []byte) (storeResult, error) {
	hasKey := "0"
	if idempotencyKey != "" {
		hasKey = "1"
	}
	keys := []string{contactRatePrefix + rateKeyPart(client), idempotencyRecordKey(idempotencyKey), contactStream}
	v, err := contactScript.Run(ctx, s.rdb, keys, limit, rateWindow.Milliseconds(), record, idempotencyLifetime.Milliseconds(), hasKey).Slice()
	if err != nil {
		return storeResult{}, err
	}
	return parseScriptResult(v)
}

// idempotencyRecordKey stores a hash of the client's key: its length is then fixed, and the key, which
// a client may have derived from the message, is not kept.
func idempotencyRecordKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return contactIdemPrefix + hex.EncodeToString(sum[:])
}

func parseScriptResult(v []any) (storeResult, error) {
	if len(v) == 0 {
		return storeResult{}, fmt.Errorf("script: empty answer")
	}
	code, _ := v[0].(int64)
	var r storeResult
	switch code {
	case 0:
		r.outcome = rateLimited
		if len(v) > 1 {
			ms, _ := v[1].(int64)
			r.retryAfter = time.Duration(ms) * time.Millisecond
		}
	case 1:
		r.outcome = stored
	case 2:
		r.outcome = duplicate
	case 3:
		r.outcome = replayed
	default:
		return r, fmt.Errorf("script: unexpected answer %v", v)
	}
	if len(v) > 1 && r.outcome != rateLimited {
		r.id, _ = v[1].(string)
	}
	return r, nil
}

// deliveredKey records which channels already took a message, so that a retry after a partial failure
// does not send the mail twice when only the webhook failed.
func deliveredKey(id string) string { return contactDonePrefix + id + contactDoneSuffix }

// streamTime is when a message was stored: the millisecond part of its stream ID.
func streamTime(id string) time.Time {
	ms, _, _ := strings.Cut(id, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(n)
}
