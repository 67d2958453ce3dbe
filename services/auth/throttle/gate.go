package throttle

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The gate (docs/architecture.md D38): a request's rate limits and its throttle reservations are one
// script call, not one call each. Rate limits are checked first, and when one refuses nothing else is
// counted; then every budget is checked before any is counted, so a refused attempt counts against no
// budget. On a single Redis server the keys of a request go to one call, whatever their slots. On a
// Redis Cluster a script may only name keys of one hash slot, so the keys are grouped by hash tag (a
// rate limit and the budget of the same client address share theirs) and the groups, one call each,
// go in one pipeline; what one group counted while another refused is given back (settle).

// Rate is a rate limit counted in the same call as a reservation (Limiter.Allow on its own): at most
// Limit requests of Kind by Who per Window. Limit <= 0 or Who == "" counts nothing.
type Rate struct {
	Kind   string
	Who    string
	Limit  int
	Window time.Duration
}

func (r Rate) key() string { return counterKey("rate:"+r.Kind, r.Who) }

// gateScript counts rate limits (the first ARGV[1] keys; two arguments each: limit, window ms) and
// reserves budgets (the other keys; four arguments each: limit, window ms, delay after, max delay ms) at
// ARGV[2], the caller's clock (ms). Budgets are hashes of n (attempts counted), s (the window's start)
// and d (the time before which no attempt may start); Redis's clock only removes the key of a budget
// long over. The reply has one entry per key: a rate limit's {1, pttl} (counted) or {0, pttl}
// (refused); a budget's {n, the wait the next attempt needs if this one fails, ms until the window
// ends} (counted), {-1, ms until the window ends} (used up) or {-2, ms until d} (slowed down); false for
// a key left alone because another refused. A refused rate limit counts nothing; a refused budget counts
// no budget (the rate limits are counted: the request was made).
var gateScript = redis.NewScript(`
local nr, now = tonumber(ARGV[1]), tonumber(ARGV[2])
local out, refused = {}, false
for i = 1, nr do
  local n = tonumber(redis.call('GET', KEYS[i]) or '0')
  if n >= tonumber(ARGV[1 + 2*i]) then refused = true; out[i] = {0, redis.call('PTTL', KEYS[i])} end
end
if refused then
  for i = 1, #KEYS do if not out[i] then out[i] = false end end
  return out
end
for i = 1, nr do
  local n = redis.call('INCR', KEYS[i])
  if n == 1 or redis.call('PTTL', KEYS[i]) < 0 then redis.call('PEXPIRE', KEYS[i], ARGV[2 + 2*i]) end
  out[i] = {1, redis.call('PTTL', KEYS[i])}
end
local b0, st = 2 + 2*nr, {}
for j = nr + 1, #KEYS do
  local a = b0 + 4*(j - nr - 1)
  local limit, window = tonumber(ARGV[a+1]), tonumber(ARGV[a+2])
  local v = redis.call('HMGET', KEYS[j], 'n', 's', 'd')
  local n, s, d = tonumber(v[1] or '0'), tonumber(v[2] or '0'), tonumber(v[3] or '0')
  local reset = n > 0 and now - s >= window
  if reset then n = 0; d = 0 end
  if n >= limit then refused = true; out[j] = {-1, s + window - now}
  elseif now < d then refused = true; out[j] = {-2, d - now} end
  st[j] = {n, s, reset}
end
if refused then
  for j = nr + 1, #KEYS do if not out[j] then out[j] = false end end
  return out
end
for j = nr + 1, #KEYS do
  local a = b0 + 4*(j - nr - 1)
  local limit, window, after, maxd = tonumber(ARGV[a+1]), tonumber(ARGV[a+2]), tonumber(ARGV[a+3]), tonumber(ARGV[a+4])
  local n, s = st[j][1], st[j][2]
  if st[j][3] then redis.call('HSET', KEYS[j], 'd', 0) end
  if n == 0 then s = now end
  n = n + 1
  local wait = 0
  if after > 0 and n >= after and n < limit then wait = math.min(1000 * math.pow(2, n - after), maxd) end
  redis.call('HSET', KEYS[j], 'n', n, 's', s)
  redis.call('PEXPIRE', KEYS[j], window + maxd + 60000)
  out[j] = {n, wait, s + window - now}
end
return out
`)

// gateResult is what the gate answered: the longest wait a refusing rate limit asks for and its kind
// (0, "": none refused), and each budget's reply in the order given (nil: left alone).
type gateResult struct {
	rateWait time.Duration
	rateKind string
	budgets  [][]int64
}

// hashTag is the part of a key that Redis Cluster hashes: between the first '{' and the next '}'.
func hashTag(key string) string {
	if _, rest, ok := strings.Cut(key, "{"); ok {
		if tag, _, ok := strings.Cut(rest, "}"); ok && tag != "" {
			return tag
		}
	}
	return key
}

// gate runs the rate limits and reserves the budgets at now (ms): one script call on a single server,
// one per hash tag, pipelined, on anything else (a Cluster).
func (l *Limiter) gate(ctx context.Context, now int64, rates []Rate, bs []budget, window, maxDelay time.Duration, also func(p redis.Pipeliner)) (gateResult, error) {
	type group struct {
		rates   []int // indexes into rates
		budgets []int // indexes into bs
	}
	var groups []*group
	_, single := l.rdb.(*redis.Client)
	byTag := map[string]*group{}
	find := func(key string) *group {
		tag := hashTag(key)
		if single {
			tag = ""
		}
		g := byTag[tag]
		if g == nil {
			g = &group{}
			byTag[tag] = g
			groups = append(groups, g)
		}
		return g
	}
	for i, r := range rates {
		g := find(r.key())
		g.rates = append(g.rates, i)
	}
	for i, b := range bs {
		g := find(b.key)
		g.budgets = append(g.budgets, i)
	}
	cmds := make([]*redis.Cmd, len(groups))
	err := l.evalShaRetry(ctx, gateScript, func() error {
		_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for gi, g := range groups {
				keys := make([]string, 0, len(g.rates)+len(g.budgets))
				args := []any{len(g.rates), now}
				for _, i := range g.rates {
					keys = append(keys, rates[i].key())
					args = append(args, rates[i].Limit, rates[i].Window.Milliseconds())
				}
				for _, i := range g.budgets {
					b := bs[i]
					w := window
					if b.window > 0 {
						w = b.window
					}
					keys = append(keys, b.key)
					args = append(args, b.limit, w.Milliseconds(), b.delayAfter, maxDelay.Milliseconds())
				}
				cmds[gi] = gateScript.EvalSha(ctx, p, keys, args...)
			}
			if also != nil {
				also(p)
			}
			return nil
		})
		if errors.Is(err, redis.Nil) {
			err = nil // a read of the caller's (also) found nothing: its own answer says so
		}
		return err
	})
	res := gateResult{budgets: make([][]int64, len(bs))}
	for gi, g := range groups {
		entries, cerr := cmds[gi].Slice()
		if cerr != nil || len(entries) != len(g.rates)+len(g.budgets) {
			if err == nil {
				err = cerr
			}
			continue
		}
		for k, i := range g.rates {
			e := ints(entries[k])
			if len(e) == 2 && e[0] == 0 {
				if w := roundUp(max(time.Duration(e[1])*time.Millisecond, time.Millisecond)); w > res.rateWait {
					res.rateWait, res.rateKind = w, rates[i].Kind
				}
			}
		}
		for k, i := range g.budgets {
			res.budgets[i] = ints(entries[len(g.rates)+k])
		}
	}
	return res, err
}

// ints is a script's reply entry as integers (nil for false).
func ints(v any) []int64 {
	vs, _ := v.([]any)
	out := make([]int64, 0, len(vs))
	for _, x := range vs {
		n, ok := x.(int64)
		if !ok {
			return nil
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
