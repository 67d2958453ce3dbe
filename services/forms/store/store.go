package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/platform/clientip"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/redisclient"
)

// The scripts store a batch of submissions — one, or several that arrived together (see batcher) — each
// decided in turn and atomically: the rate limit, then the idempotency record, the uniqueness check and the
// durable record. They answer one integer per submission: 1 stored, 2 duplicate, 3 replayed, 4 an
// Idempotency-Key reused with another message, 5 an Idempotency-Key whose first request still waits for
// its durability, or minus the milliseconds left in the client's rate-limit window.
//
// A script call is idempotent: it carries a run key (KEYS[1], unique per call) under which its
// first run leaves its answer for runLifetime, and a second run of the same call answers that instead of
// deciding again. go-redis sends a command again when its answer does not come within the read timeout
// although the server may have run it; without the run key a slow Redis would store a contact message
// twice, or answer a first sign-up "duplicate".
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
local function remember(key, out)
  redis.call('SET', key, cjson.encode(out), 'PX', ` + ms(runLifetime) + `)
  return out
end
local out = {}
`

// firstRun answers a call's earlier answer when this is a second run of it; KEYS[1] is the run key.
const firstRun = `
local earlier = redis.call('GET', KEYS[1])
if earlier then return cjson.decode(earlier) end
`

// contactLua: KEYS run, stream, spam folder, per-day counts (daily.go), then each submission's rate key, idempotency key and
// in-flight key; ARGV per submission: limit, record, the hash of the message when an Idempotency-Key was
// sent (else ""), "1" when the answer will wait for durability (answerWaits), and its spam verdict
// (spamArg: "" ham, "-" refused, else the verdict kept beside the record in the spam folder). The
// idempotency record holds that hash: the same key with the same message replays (stores nothing), with
// another message it is refused (4). While the request that stored it still waits for durability, its
// in-flight key (value: the run key) is set, and the same key is answered "in flight" (5); the call's
// settle script removes it once the answer is decided. Spam is answered as ham: 1.
var contactLua = firstRun + rateLimitLua + spamLua + tallyLua + `
for i = 1, (#KEYS - 4) / 3 do
  local r = rate(KEYS[3*i + 2], tonumber(ARGV[5*i - 4]))
  if r == 0 then
    local hash = ARGV[5*i - 2]
    local seen = false
    if hash ~= '' then seen = redis.call('GET', KEYS[3*i + 3]) end
    if seen then
      if seen ~= hash then r = 4
      elseif redis.call('EXISTS', KEYS[3*i + 4]) == 1 then r = 5
      else r = 3 end
    else
      keep(KEYS[2], KEYS[3], ARGV[5*i - 3], ARGV[5*i])
      count(ARGV[5*i])
      if hash ~= '' then
        redis.call('SET', KEYS[3*i + 3], hash, 'PX', ` + ms(idempotencyLifetime) + `)
        if ARGV[5*i - 1] == '1' then redis.call('SET', KEYS[3*i + 4], KEYS[1], 'PX', ` + ms(inFlightLifetime) + `) end
      end
      r = 1
    end
  end
  out[i] = r
end
tally(KEYS[4])
return remember(KEYS[1], out)
`

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// Outcome is what the store decided.
type Outcome int

const (
	Stored Outcome = iota + 1
	Duplicate
	Replayed
	RateLimited
	KeyReused // an Idempotency-Key sent before with another message
	InFlight  // an Idempotency-Key whose first request is still waiting for its answer
	// ReplayedDuplicate is a waitlist Idempotency-Key seen before, whose first answer was Duplicate.
	ReplayedDuplicate
)

// Result is one submission's outcome; RetryAfter is set for RateLimited.
type Result struct {
	Outcome    Outcome
	RetryAfter time.Duration
}

// Store runs the submission scripts through one batcher per endpoint, behind the guard that refuses a
// level the store cannot keep. Records are copied into the operation (string(record)): a queued
// operation may outlive the handler that gave up waiting for it.
type Store struct {
	rdb      redis.UniversalClient
	guard    *Guard
	waitlist *batcher
	contact  *batcher
	forms    formBatchers // the declared forms' (declared.go)
}

// New returns the store of the forms on rdb.
func New(rdb redis.UniversalClient, o Options) (*Store, error) {
	g, err := newGuard(rdb, o)
	if err != nil {
		return nil, err
	}
	return &Store{
		rdb:      rdb,
		guard:    g,
		waitlist: newBatcher(rdb, g, waitlistLua, []string{WaitlistEntries, WaitlistOrder, WaitlistIDs, WaitlistPending, WaitlistOutbox, WaitlistDaily}, "fs:{waitlist}"+runPrefix),
		contact:  newBatcher(rdb, g, contactLua, []string{ContactStream, ContactQueue.Spam, ContactDaily}, "fs:{contact}"+runPrefix),
	}, nil
}

// Guard is the store's durability guard (its Run belongs in the service's background work).
func (s *Store) Guard() *Guard { return s.guard }

// Ready reports whether the store answers and can keep level's promise.
func (s *Store) Ready(ctx context.Context, level config.Durability) error {
	if err := redisclient.Ping(ctx, s.rdb); err != nil {
		return err
	}
	return s.guard.Allow(ctx, level)
}

// Idempotency is a submission's Idempotency-Key, scoped to the origin that sent it and bound
// to the message it carried. The zero value means "no key".
type Idempotency struct {
	Origin, Key string
	Message     []byte // what the key is bound to: the validated message, not the bytes of the body
}

// AddContact stores a contact message's record unless idem replays an earlier one, within client's rate
// limit (limit per minute, 0: none), as durable as level asks (see AddWaitlist).
func (s *Store) AddContact(ctx context.Context, client netip.Addr, limit int, idem Idempotency, record []byte, level config.Durability) (Result, error) {
	return s.AddContactJudged(ctx, client, limit, idem, record, Verdict{}, level)
}

// AddContactJudged is AddContact for a message with its spam verdict: spam goes to the spam folder
// (or, refused, nowhere) and is answered as ham.
func (s *Store) AddContactJudged(ctx context.Context, client netip.Addr, limit int, idem Idempotency, record []byte, verdict Verdict, level config.Durability) (Result, error) {
	if err := s.guard.Allow(ctx, level); err != nil {
		return Result{}, err
	}
	op := storeOp{level: level}
	hash, waits, idemKey := "", "0", IdempotencyRecordKey(idem.Origin, idem.Key)
	if idem.Key != "" {
		sum := sha256.Sum256(idem.Message)
		hash = hex.EncodeToString(sum[:])
		if answerWaits(level) {
			waits = "1"
			op.settle = idemKey + contactBusySuffix
		}
	}
	op.keys = []string{contactRatePrefix + clientip.Key(client), idemKey, idemKey + contactBusySuffix}
	op.args = []any{limit, string(record), hash, waits, verdict.arg()}
	n, err := s.contact.do(ctx, op)
	if err != nil {
		return Result{}, err
	}
	return scriptResult(n)
}

// IdempotencyRecordKey is where a key's record lives: a hash of the origin and the key. Keys are the
// client's to choose, so two sites (origins) that happen to pick the same key are two keys; the length
// is fixed; and a key, which a client may have derived from the message, is not kept.
func IdempotencyRecordKey(origin, key string) string {
	if key == "" {
		return contactIdemPrefix + "-" // never read or written: the script checks the hash first
	}
	h := sha256.New()
	h.Write([]byte(origin))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return contactIdemPrefix + hex.EncodeToString(h.Sum(nil))
}

func scriptResult(n int64) (Result, error) {
	switch {
	case n < 0:
		return Result{Outcome: RateLimited, RetryAfter: time.Duration(-n) * time.Millisecond}, nil
	case n == 1:
		return Result{Outcome: Stored}, nil
	case n == 2:
		return Result{Outcome: Duplicate}, nil
	case n == 3:
		return Result{Outcome: Replayed}, nil
	case n == 4:
		return Result{Outcome: KeyReused}, nil
	case n == 5:
		return Result{Outcome: InFlight}, nil
	case n == 6:
		return Result{Outcome: ReplayedDuplicate}, nil
	}
	return Result{}, fmt.Errorf("script: unexpected answer %d", n)
}
