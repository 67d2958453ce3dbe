package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"

	"github.com/formsservice/formsservice/services/platform/clientip"
	"github.com/formsservice/formsservice/services/platform/config"
)

// waitlistLua stores sign-ups. KEYS: run, entries, order, then per submission its rate key, idempotency
// key and in-flight key. ARGV per submission: limit, canonical address, record, the hash of the entry
// when an Idempotency-Key was sent (else ""), and "1" when the answer waits for durability.
//
// The address is unique by HSETNX, and RPUSH appends it to the sign-up order only when HSETNX created it.
// An Idempotency-Key is kept with the first answer ("<hash>:1" created, "<hash>:2" duplicate), so a
// replay gets that answer (3, or 6 for a duplicate) and the same key with another entry is refused (4),
// as on /contact (contactLua).
var waitlistLua = firstRun + rateLimitLua + `
for i = 1, (#KEYS - 3) / 3 do
  local k, a = 3 * i, 5 * (i - 1)
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
      if redis.call('HSETNX', KEYS[2], ARGV[a + 2], ARGV[a + 3]) == 0 then
        r = 2
      else
        redis.call('RPUSH', KEYS[3], ARGV[a + 2])
        r = 1
      end
      if hash ~= '' then
        redis.call('SET', KEYS[k + 2], hash .. ':' .. r, 'PX', ` + ms(idempotencyLifetime) + `)
        if ARGV[a + 5] == '1' then redis.call('SET', KEYS[k + 3], KEYS[1], 'PX', ` + ms(inFlightLifetime) + `) end
      end
    end
  end
  out[i] = r
end
return remember(KEYS[1], out)
`

// AddWaitlist stores a sign-up (its canonical address and record) unless the address is there already
// or idem replays an earlier sign-up, within client's rate limit (limit per minute, 0: none), as durable
// as level asks. idem.Message is the validated entry the key is bound to.
func (s *Store) AddWaitlist(ctx context.Context, client netip.Addr, limit int, canonical string, idem Idempotency, record []byte, level config.Durability) (Result, error) {
	op := storeOp{level: level}
	hash, waits, idemKey := "", "0", idempotencyKey(waitlistIdemPrefix, idem.Origin, idem.Key)
	if idem.Key != "" {
		sum := sha256.Sum256(idem.Message)
		hash = hex.EncodeToString(sum[:])
		if level != config.DurabilityProcess {
			waits = "1"
			op.settle = idemKey + contactBusySuffix
		}
	}
	op.keys = []string{waitlistRatePrefix + clientip.Key(client), idemKey, idemKey + contactBusySuffix}
	op.args = []any{limit, canonical, string(record), hash, waits}
	n, err := s.waitlist.do(ctx, op)
	if err != nil {
		return Result{}, err
	}
	return scriptResult(n)
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
