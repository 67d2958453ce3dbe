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
	// waitlistOrder lists canonical addresses in sign-up order, for export (a list append is far
	// cheaper than a sorted-set insert, and an address is appended only when HSETNX created it).
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
// request: INCR, and PEXPIRE when the counter is new. A refused request gets the window's remaining
// milliseconds, as a negative number (the answer's Retry-After). limit 0 turns it off.
//
// The scripts take few arguments and answer a plain integer: on Redis, what a script costs is mostly
// passing values into Lua and tables out of it, not the commands it runs.
var rateLimitLua = `
local limit = tonumber(ARGV[1])
if limit > 0 then
  local n = redis.call('INCR', KEYS[1])
  if n == 1 then redis.call('PEXPIRE', KEYS[1], ` + strconv.FormatInt(rateWindow.Milliseconds(), 10) + `) end
  if n > limit then
    local ttl = redis.call('PTTL', KEYS[1])
    if ttl < 1 then redis.call('PEXPIRE', KEYS[1], ` + strconv.FormatInt(rateWindow.Milliseconds(), 10) + `); ttl = ` + strconv.FormatInt(rateWindow.Milliseconds(), 10) + ` end
    return -ttl
  end
end
`

// waitlistScript: KEYS rate, entries, order; ARGV limit, canonical address, record.
// Answers 1 stored, 2 duplicate, or -ms rate-limited.
var waitlistScript = redis.NewScript(rateLimitLua + `
if redis.call('HSETNX', KEYS[2], ARGV[2], ARGV[3]) == 0 then return 2 end
redis.call('RPUSH', KEYS[3], ARGV[2])
return 1
`)

// contactScript: KEYS rate, idempotency, stream; ARGV limit, record, "1" when an Idempotency-Key was
// sent. A replay answers like the first request and stores nothing. Answers 1 stored, 3 replayed, or
// -ms rate-limited.
var contactScript = redis.NewScript(rateLimitLua + `
if ARGV[3] == '1' then
  if redis.call('EXISTS', KEYS[2]) == 1 then return 3 end
end
local id = redis.call('XADD', KEYS[3], '*', 'm', ARGV[2])
if ARGV[3] == '1' then redis.call('SET', KEYS[2], id, 'PX', ` + strconv.FormatInt(idempotencyLifetime.Milliseconds(), 10) + `) end
return 1
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

func (s *store) addWaitlist(ctx context.Context, client netip.Addr, limit int, canonical string, record []byte) (storeResult, error) {
	keys := []string{waitlistRatePrefix + rateKeyPart(client), waitlistEntries, waitlistOrder}
	n, err := waitlistScript.Run(ctx, s.rdb, keys, limit, canonical, record).Int64()
	if err != nil {
		return storeResult{}, err
	}
	return scriptResult(n)
}

func (s *store) addContact(ctx context.Context, client netip.Addr, limit int, idempotencyKey string, record []byte) (storeResult, error) {
	hasKey := "0"
	if idempotencyKey != "" {
		hasKey = "1"
	}
	keys := []string{contactRatePrefix + rateKeyPart(client), idempotencyRecordKey(idempotencyKey), contactStream}
	n, err := contactScript.Run(ctx, s.rdb, keys, limit, record, hasKey).Int64()
	if err != nil {
		return storeResult{}, err
	}
	return scriptResult(n)
}

// idempotencyRecordKey stores a hash of the client's key: its length is then fixed, and the key, which
// a client may have derived from the message, is not kept.
func idempotencyRecordKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return contactIdemPrefix + hex.EncodeToString(sum[:])
}

func scriptResult(n int64) (storeResult, error) {
	switch {
	case n < 0:
		return storeResult{outcome: rateLimited, retryAfter: time.Duration(-n) * time.Millisecond}, nil
	case n == 1:
		return storeResult{outcome: stored}, nil
	case n == 2:
		return storeResult{outcome: duplicate}, nil
	case n == 3:
		return storeResult{outcome: replayed}, nil
	}
	return storeResult{}, fmt.Errorf("script: unexpected answer %d", n)
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
