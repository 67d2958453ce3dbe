package throttle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sign-in budgets (docs/architecture.md D19). An attempt counts against:
//
//   - a known browser (one holding a device cookie of the account: package device): that browser's own
//     budget, and nothing else, so that no guess from anywhere else can lock it out;
//   - an unknown browser: the account's budget shared by every unknown browser (stricter), and its
//     client address's budget.
//
// Each attempt is reserved before the password is checked (one script per budget, pipelined: one round
// trip) and settled after: a wrong password keeps it, a right one gives it back (and starts the browser's
// budget afresh), an outage gives it back. So a burst of parallel guesses, over any number of replicas,
// gets no more password checks than a budget allows. Within the device and account budgets failures
// slow down before they stop: after DelayAfter failures each further attempt waits, 1 s doubling up to
// MaxDelay (set when a failure is settled, so that parallel successes are never slowed), and at the
// limit the budget is used up until its window ends.

// Budget names, as refusals and lockouts report them.
const (
	BudgetDevice  = "device"  // one known browser
	BudgetAccount = "account" // every unknown browser of one account
	BudgetAddress = "address" // one client address
)

// Attempt is one sign-in attempt: the account (canonical e-mail address), the browser's ID when it
// holds a valid device cookie of that account ("" otherwise), and the client address's key.
type Attempt struct {
	Account string
	Device  string
	IP      string
}

// Refusal says why an attempt was not let through: its budget, how long to wait (whole seconds,
// rounded up), and whether the budget is used up (Locked) or only slowed down.
type Refusal struct {
	Budget string
	Wait   time.Duration
	Locked bool
}

type budget struct {
	name       string
	key        string
	limit      int
	delayAfter int
	wait       time.Duration // once reserved: the delay a failure of this attempt earns
	window     time.Duration // the budget's own window (code.go); 0: the reservation's
}

func (l *Limiter) budgets(a Attempt, lim Limits) []budget {
	if a.Device != "" {
		if lim.Device <= 0 {
			return nil
		}
		return []budget{{BudgetDevice, budgetKey("device", a.Device), lim.Device, lim.DelayAfter, 0, 0}}
	}
	var bs []budget
	if lim.Account > 0 && a.Account != "" {
		bs = append(bs, budget{BudgetAccount, budgetKey("browsers", a.Account), lim.Account, lim.DelayAfter, 0, 0})
	}
	if lim.IP > 0 && a.IP != "" {
		// An address is shared by many people (a NAT, an office): its budget counts without delays.
		bs = append(bs, budget{BudgetAddress, budgetKey("addr", a.IP), lim.IP, 0, 0, 0})
	}
	return bs
}

// budgetKey holds a hash of the account, browser or address: bounded length, no address in key names.
func budgetKey(kind, v string) string { return counterKey(kind, v) }

// reserveScript takes one attempt from a budget, a hash of n (attempts counted), s (the window's start)
// and d (the time before which no attempt may start), all on the caller's clock (ARGV[3], ms).
// Used up: {-1, ms until the window ends}. Slowed down: {-2, ms until d}. Else it counts the attempt and
// answers {n, the wait the next attempt will need if this one fails, ms until the window ends}. ARGV:
// limit, window, now, delay after, max delay (ms). Redis's clock only removes the key of a budget long
// over.
var reserveScript = redis.NewScript(`
local limit, window, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local after, maxd = tonumber(ARGV[4]), tonumber(ARGV[5])
local v = redis.call('HMGET', KEYS[1], 'n', 's', 'd')
local n, s, d = tonumber(v[1] or '0'), tonumber(v[2] or '0'), tonumber(v[3] or '0')
if n > 0 and now - s >= window then n = 0; d = 0; redis.call('HSET', KEYS[1], 'd', 0) end
if n >= limit then return {-1, s + window - now} end
if now < d then return {-2, d - now} end
if n == 0 then s = now end
n = n + 1
local wait = 0
if after > 0 and n >= after and n < limit then
  wait = math.min(1000 * math.pow(2, n - after), maxd)
end
redis.call('HSET', KEYS[1], 'n', n, 's', s)
redis.call('PEXPIRE', KEYS[1], window + maxd + 60000)
return {n, wait, s + window - now}
`)

// slowScript makes the next attempt of a budget wait after a failure: d becomes now + wait unless it is
// later already. Set when the failure is known, not when the attempt is reserved, so that successful
// attempts in flight together (a load test, a double submit) are never slowed down. ARGV: now + wait.
var slowScript = redis.NewScript(`
if tonumber(redis.call('HGET', KEYS[1], 'd') or '0') < tonumber(ARGV[1]) then redis.call('HSET', KEYS[1], 'd', ARGV[1]) end
return 1
`)

// releaseScript gives an attempt back (its outcome was not a failure). Below the delays again, the
// wait the attempt had set goes too. A budget that ended meanwhile is not recreated. ARGV: delay after.
var releaseScript = redis.NewScript(`
local n = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
if n <= 0 then return 0 end
n = n - 1
redis.call('HSET', KEYS[1], 'n', n)
if n < tonumber(ARGV[1]) or tonumber(ARGV[1]) == 0 then redis.call('HSET', KEYS[1], 'd', 0) end
return n
`)

// Reservation is one attempt counted against its budgets; its outcome settles it.
type Reservation struct {
	l    *Limiter
	now  int64 // ms, the limiter's clock when reserved
	held []budget
	// next is the wait before the next attempt if this one fails; usedUp names the budgets this
	// attempt used up, whose window ends after windowLeft.
	next       time.Duration
	usedUp     []string
	windowLeft time.Duration
}

// evalShaRetry runs fn (a pipeline of EvalSha calls) and, when Redis has not seen the script yet
// (NOSCRIPT: a restart, a failover, a new Cluster node), loads it and runs fn again.
func (l *Limiter) evalShaRetry(ctx context.Context, script *redis.Script, fn func() error) error {
	err := fn()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		if err = script.Load(ctx, l.rdb).Err(); err == nil {
			err = fn()
		}
	}
	return err
}

// Reserve counts an attempt against its budgets before the password is checked. When a budget refuses
// it counts nothing (an attempt counted by another budget is given back) and says why.
func (l *Limiter) Reserve(ctx context.Context, a Attempt, lim Limits) (*Reservation, *Refusal, error) {
	return l.reserve(ctx, l.budgets(a, lim), lim.Window, lim.MaxDelay)
}

// reserve takes one attempt from each budget (one script each, pipelined).
func (l *Limiter) reserve(ctx context.Context, bs []budget, window, maxDelay time.Duration) (*Reservation, *Refusal, error) {
	now := l.now().UnixMilli()
	r := &Reservation{l: l, now: now}
	if len(bs) == 0 {
		return r, nil, nil
	}
	cmds := make([]*redis.Cmd, len(bs))
	err := l.evalShaRetry(ctx, reserveScript, func() error {
		_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, b := range bs {
				w := window
				if b.window > 0 {
					w = b.window
				}
				cmds[i] = reserveScript.EvalSha(ctx, p, []string{b.key}, b.limit, w.Milliseconds(), now, b.delayAfter, maxDelay.Milliseconds())
			}
			return nil
		})
		return err
	})
	var refusal *Refusal
	for i, b := range bs {
		res, cerr := cmds[i].Int64Slice()
		if cerr != nil || len(res) < 2 {
			err = errors.Join(err, cerr)
			continue
		}
		ms := time.Duration(max(res[1], 1)) * time.Millisecond
		if res[0] < 0 {
			ref := &Refusal{Budget: b.name, Wait: roundUp(ms), Locked: res[0] == -1}
			if refusal == nil || ref.Locked && !refusal.Locked || ref.Locked == refusal.Locked && ref.Wait > refusal.Wait {
				refusal = ref
			}
			continue
		}
		b.wait = time.Duration(res[1]) * time.Millisecond
		r.held = append(r.held, b)
		if int(res[0]) >= b.limit {
			r.usedUp = append(r.usedUp, b.name)
			if len(res) == 3 {
				r.windowLeft = max(r.windowLeft, time.Duration(res[2])*time.Millisecond)
			}
		}
		r.next = max(r.next, time.Duration(res[1])*time.Millisecond)
	}
	if err != nil || refusal != nil {
		_ = r.settle(context.WithoutCancel(ctx), false)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		return nil, refusal, nil
	}
	return r, nil, nil
}

// Failed settles a wrong password: the attempt stays counted, and where it earned a delay the next
// attempt must wait (one round trip, on this path only). It returns that wait (0: at once) and the
// budgets this failure used up (a lockout of those until their window ends, which is then the wait).
func (r *Reservation) Failed(ctx context.Context) (wait time.Duration, usedUp []string, err error) {
	var slowed []budget
	for _, b := range r.held {
		if b.wait > 0 {
			slowed = append(slowed, b)
		}
	}
	if len(slowed) > 0 {
		err = r.l.evalShaRetry(ctx, slowScript, func() error {
			_, err := r.l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, b := range slowed {
					slowScript.EvalSha(ctx, p, []string{b.key}, r.now+b.wait.Milliseconds())
				}
				return nil
			})
			return err
		})
		if err != nil {
			err = fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	r.held = nil
	if len(r.usedUp) > 0 {
		return roundUp(max(r.windowLeft, r.next)), r.usedUp, err
	}
	return roundUp(r.next), nil, err
}

// Succeeded settles a right password: a known browser's budget starts afresh, the other budgets get
// the attempt back (an account's unknown browsers keep the failures others made). One round trip.
func (r *Reservation) Succeeded(ctx context.Context) error {
	return r.settle(ctx, true)
}

// Release gives the attempt back: the password could not be checked (the store or the hashing pool was
// unavailable), so it was no guess.
func (r *Reservation) Release(ctx context.Context) {
	_ = r.settle(ctx, false)
}

func (r *Reservation) settle(ctx context.Context, success bool) error {
	if len(r.held) == 0 {
		return nil
	}
	held := r.held
	r.held = nil
	err := r.l.evalShaRetry(ctx, releaseScript, func() error {
		_, err := r.l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, b := range held {
				if success && b.name == BudgetDevice {
					p.Del(ctx, b.key)
					continue
				}
				releaseScript.EvalSha(ctx, p, []string{b.key}, b.delayAfter)
			}
			return nil
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}
