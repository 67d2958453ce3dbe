package throttle

import "time"

// What other packages need to count a rate limit inside scripts of their own (docs/architecture.md
// D43: the token store's unit on a single server).

// Key is the Redis key of the rate limit's counter (one hash slot: its Who's).
func (r Rate) Key() string { return r.key() }

// Counts is whether the rate limit counts anything (Limit > 0 and a Who).
func (r Rate) Counts() bool { return r.Limit > 0 && r.Who != "" }

// RateLua defines the Lua function count_rates(keys, args) for a script that counts rate limits in the
// same call as its own work. keys are the rate limits' counters (Rate.Key), args two per key: the limit
// and the window in ms (RateArgs). Exactly as the gate counts them (gateScript): when any is at its
// limit nothing is counted and it answers {i, pttl} of the first such; otherwise each is counted and it
// answers false. TestRateLua_CountsAsTheGate runs both on one counter.
const RateLua = `
local function count_rates(keys, args)
  for i = 1, #keys do
    local n = tonumber(redis.call('GET', keys[i]) or '0')
    if n >= tonumber(args[2*i - 1]) then return {i, redis.call('PTTL', keys[i])} end
  end
  for i = 1, #keys do
    local n = redis.call('INCR', keys[i])
    if n == 1 or redis.call('PTTL', keys[i]) < 0 then redis.call('PEXPIRE', keys[i], args[2*i]) end
  end
  return false
end
`

// RateArgs are r's arguments for count_rates.
func (r Rate) RateArgs() []any { return []any{r.Limit, r.Window.Milliseconds()} }

// RefusedWait is the wait Allow answers for a refusal whose counter ends in pttl ms (count_rates' reply).
func RefusedWait(pttl int64) time.Duration {
	return roundUp(max(time.Duration(pttl)*time.Millisecond, time.Millisecond))
}
