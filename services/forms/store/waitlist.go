package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"strconv"
	"time"

	"github.com/formsservice/formsservice/services/platform/clientip"
	"github.com/formsservice/formsservice/services/platform/config"
)

// MaxResends caps the confirmation mails a pending address is sent again when it is signed up again:
// the re-sends come after resendAfter, then 2×, then 4× (the window doubles after each), and after the
// third no more until the entry expires, so that the form cannot be used to mail an address from the
// site's domain without end.
const MaxResends = 3

// waitlistLua stores sign-ups. KEYS: run, entries, order, ids, pending, outbox, per-day counts
// (daily.go), then per submission its
// rate key, idempotency key, in-flight key and resend key. ARGV per submission: limit, canonical
// address, record, the hash of the entry when an Idempotency-Key was sent (else ""), "1" when the answer
// waits for durability, and for the double opt-in (else "") the entry's id, when it expires (ms) and the
// resend window (ms).
//
// The address is unique by HSETNX, and RPUSH appends it to the sign-up order only when HSETNX created it.
// An Idempotency-Key is kept with the first answer ("<hash>:1" created, "<hash>:2" duplicate), so a
// replay gets that answer (3, or 6 for a duplicate) and the same key with another entry is refused (4),
// as on /contact (contactLua).
//
// With the double opt-in a new entry is pending: its id is indexed, its expiry noted, its confirmation
// mail queued in the outbox. A pending address signed up again is a duplicate whose mail is queued again
// once per resend window (the resend key), a window that doubles after each re-send, at most MaxResends
// times (counted in the record as "resent"); an unsubscribed one signs up anew (1), with a new id, so the
// links of its earlier mails no longer work, keeping the suppression record: the new record carries the
// last unsubscription's time and the unsubscribed record itself ("suppressed"), which the expiry of an
// unconfirmed sign-up restores (expireScript).
var waitlistLua = firstRun + rateLimitLua + tallyLua + `
local function pend(a, k)
  redis.call('HSET', KEYS[4], ARGV[a + 6], ARGV[a + 2])
  redis.call('ZADD', KEYS[5], ARGV[a + 7], ARGV[a + 2])
  redis.call('XADD', KEYS[6], '*', 'a', ARGV[a + 2])
  redis.call('SET', KEYS[k + 4], '1', 'PX', ARGV[a + 8])
end
for i = 1, (#KEYS - 7) / 4 do
  local k, a = 7 + 4 * (i - 1), 8 * (i - 1)
  local r = rate(KEYS[k + 1], tonumber(ARGV[a + 1]))
  if r == 0 then
    local hash = ARGV[a + 4]
    local seen = false
    if hash ~= '' then seen = redis.call('GET', KEYS[k + 2]) end
    if seen then
      local h, first = string.match(seen, '^(%x+):(%d)$')
      if h ~= hash then r = 4
      elseif redis.call('EXISTS', KEYS[k + 3]) == 1 then r = 5
      elseif first == '2' then r = 6
      else r = 3 end
    else
      local optin = ARGV[a + 6] ~= ''
      if redis.call('HSETNX', KEYS[2], ARGV[a + 2], ARGV[a + 3]) == 1 then
        redis.call('RPUSH', KEYS[3], ARGV[a + 2])
        if optin then pend(a, k) end
        r = 1
        arrived = arrived + 1
      else
        r = 2
        if optin then
          local old = cjson.decode(redis.call('HGET', KEYS[2], ARGV[a + 2]))
          if old.state == 'unsubscribed' then
            if old.id then redis.call('HDEL', KEYS[4], old.id) end
            local rec = cjson.decode(ARGV[a + 3])
            old.suppressed = nil -- the one unsubscription before it: superseded by this one
            rec.unsubscribed_at = old.unsubscribed_at
            rec.suppressed = old
            redis.call('HSET', KEYS[2], ARGV[a + 2], cjson.encode(rec))
            pend(a, k)
            r = 1
            arrived = arrived + 1
          elseif old.state == 'pending' then
            local resent = tonumber(old.resent) or 0
            if resent < ` + strconv.Itoa(MaxResends) + ` and redis.call('SET', KEYS[k + 4], '1', 'NX', 'PX', tonumber(ARGV[a + 8]) * 2 ^ (resent + 1)) then
              old.resent = resent + 1
              redis.call('HSET', KEYS[2], ARGV[a + 2], cjson.encode(old))
              redis.call('ZADD', KEYS[5], ARGV[a + 7], ARGV[a + 2])
              redis.call('XADD', KEYS[6], '*', 'a', ARGV[a + 2])
            end
          end
        end
      end
      if hash ~= '' then
        redis.call('SET', KEYS[k + 2], hash .. ':' .. r, 'PX', ` + ms(idempotencyLifetime) + `)
        if ARGV[a + 5] == '1' then redis.call('SET', KEYS[k + 3], KEYS[1], 'PX', ` + ms(inFlightLifetime) + `) end
      end
    end
  end
  out[i] = r
end
tally(KEYS[7])
return remember(KEYS[1], out)
`

// WaitlistSubmission is one sign-up for AddWaitlist.
type WaitlistSubmission struct {
	Client    netip.Addr
	Limit     int // the client's rate limit per minute (0: none)
	Canonical string
	Idem      Idempotency // idem.Message is the validated entry the key is bound to
	Record    []byte
	// OptIn, when set, makes the entry pending (the record says so too) and queues its confirmation mail.
	OptIn *OptIn
}

// OptIn is what the double opt-in needs of a new sign-up.
type OptIn struct {
	ID          string        // the record's id
	Until       time.Time     // when it expires unconfirmed
	ResendAfter time.Duration // the resend window of a pending address signed up again
}

// AddWaitlist stores a sign-up unless the address is there already or its Idempotency-Key replays an
// earlier one, within the client's rate limit, as durable as level asks. A level the store cannot keep
// is refused with an *Unmet before anything is written.
func (s *Store) AddWaitlist(ctx context.Context, sub WaitlistSubmission, level config.Durability) (Result, error) {
	if err := s.guard.Allow(ctx, level); err != nil {
		return Result{}, err
	}
	op := storeOp{level: level}
	hash, waits, idemKey := "", "0", idempotencyKey(waitlistIdemPrefix, sub.Idem.Origin, sub.Idem.Key)
	if sub.Idem.Key != "" {
		sum := sha256.Sum256(sub.Idem.Message)
		hash = hex.EncodeToString(sum[:])
		if answerWaits(level) {
			waits = "1"
			op.settle = idemKey + contactBusySuffix
		}
	}
	id, until, resend, resendKey := "", int64(0), int64(0), waitlistResendPrefix+"-"
	if o := sub.OptIn; o != nil {
		id, until, resend = o.ID, o.Until.UnixMilli(), max(o.ResendAfter.Milliseconds(), 1)
		resendKey = ResendKey(sub.Canonical)
	}
	op.keys = []string{waitlistRatePrefix + clientip.Key(sub.Client), idemKey, idemKey + contactBusySuffix, resendKey}
	op.args = []any{sub.Limit, sub.Canonical, string(sub.Record), hash, waits, id, until, resend}
	n, err := s.waitlist.do(ctx, op)
	if err != nil {
		return Result{}, err
	}
	return scriptResult(n)
}

// ResendKey throttles the confirmation mail of a pending address: a hash of it, so that no address
// appears in a key's name.
func ResendKey(canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return waitlistResendPrefix + hex.EncodeToString(sum[:16])
}

// idempotencyKey is where a key's record lives under prefix: a hash of the origin and the key (see
// IdempotencyRecordKey).
func idempotencyKey(prefix, origin, key string) string {
	if key == "" {
		return prefix + "-" // never read or written: the script checks the hash first
	}
	h := sha256.New()
	h.Write([]byte(origin))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return prefix + hex.EncodeToString(h.Sum(nil))
}
