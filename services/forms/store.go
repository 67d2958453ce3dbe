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

	"github.com/formsservice/formsservice/services/platform/clientip"
	"github.com/redis/go-redis/v9"
)

// Redis keys. Every key of one endpoint carries the same hash tag ({waitlist} or {contact}), so each
// script call (see batcher) touches one slot and runs on one Redis Cluster master in one round trip: the
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

// The scripts store a batch of submissions — one, or several that arrived together (see batcher) — each
// decided in turn and atomically: the rate limit, then the idempotency record, the uniqueness check and the
// durable record. They answer one integer per submission: 1 stored, 2 duplicate, 3 replayed, or minus the
// milliseconds left in the client's rate-limit window.
//
// The rate limit is a fixed one-minute window per client per endpoint, started by the client's first
// request: INCR, and PEXPIRE when the counter is new. limit 0 turns it off.
var rateLimitLua = `
local function rate(key, limit)
  if limit <= 0 then return 0 end
  local n = redis.call('INCR', key)
  if n == 1 then redis.call('PEXPIRE', key, ` + ms(rateWindow) + `) end
  if n <= limit then return 0 end
  local ttl = redis.call('PTTL', key)
  if ttl < 1 then redis.call('PEXPIRE', key, ` + ms(rateWindow) + `); ttl = ` + ms(rateWindow) + ` end
  return -ttl
end
local out = {}
`

// waitlistScript: KEYS entries, order, then each submission's rate key; ARGV per submission: limit,
// canonical address, record.
var waitlistScript = redis.NewScript(rateLimitLua + `
for i = 1, #KEYS - 2 do
  local r = rate(KEYS[i + 2], tonumber(ARGV[3*i - 2]))
  if r == 0 then
    if redis.call('HSETNX', KEYS[1], ARGV[3*i - 1], ARGV[3*i]) == 0 then
      r = 2
    else
      redis.call('RPUSH', KEYS[2], ARGV[3*i - 1])
      r = 1
    end
  end
  out[i] = r
end
return out
`)

// contactScript: KEYS stream, then each submission's rate key and idempotency key; ARGV per submission:
// limit, record, "1" when an Idempotency-Key was sent. A replay stores nothing.
var contactScript = redis.NewScript(rateLimitLua + `
for i = 1, (#KEYS - 1) / 2 do
  local r = rate(KEYS[2*i], tonumber(ARGV[3*i - 2]))
  if r == 0 then
    local keyed = ARGV[3*i] == '1'
    if keyed and redis.call('EXISTS', KEYS[2*i + 1]) == 1 then
      r = 3
    else
      local id = redis.call('XADD', KEYS[1], '*', 'm', ARGV[3*i - 1])
      if keyed then redis.call('SET', KEYS[2*i + 1], id, 'PX', ` + ms(idempotencyLifetime) + `) end
      r = 1
    end
  end
  out[i] = r
end
return out
`)

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

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

// store runs the submission scripts through one batcher per endpoint. Records are copied into the
// operation (string(record)): a queued operation may outlive the handler that gave up waiting for it.
type store struct {
	rdb      redis.UniversalClient
	waitlist *batcher
	contact  *batcher
}

func newStore(rdb redis.UniversalClient) *store {
	return &store{
		rdb:      rdb,
		waitlist: newBatcher(rdb, waitlistScript, []string{waitlistEntries, waitlistOrder}),
		contact:  newBatcher(rdb, contactScript, []string{contactStream}),
	}
}

func (s *store) addWaitlist(ctx context.Context, client netip.Addr, limit int, canonical string, record []byte) (storeResult, error) {
	n, err := s.waitlist.do(ctx, []string{waitlistRatePrefix + clientip.Key(client)}, []any{limit, canonical, string(record)})
	if err != nil {
		return storeResult{}, err
	}
	return scriptResult(n)
}

func (s *store) addContact(ctx context.Context, client netip.Addr, limit int, idempotencyKey string, record []byte) (storeResult, error) {
	keyed := "0"
	if idempotencyKey != "" {
		keyed = "1"
	}
	n, err := s.contact.do(ctx, []string{contactRatePrefix + clientip.Key(client), idempotencyRecordKey(idempotencyKey)}, []any{limit, string(record), keyed})
	if err != nil {
		return storeResult{}, err
	}
	return scriptResult(n)
}

// idempotencyRecordKey stores a hash of the client's key: its length is then fixed, and the key, which
// a client may have derived from the message, is not kept.
func idempotencyRecordKey(key string) string {
	if key == "" {
		return contactIdemPrefix + "-" // never read or written: the script checks the flag first
	}
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

var errShortAnswer = fmt.Errorf("script: fewer answers than submissions")
