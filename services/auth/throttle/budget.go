package throttle

import (
	"context"
	"fmt"
	"slices"
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
// Each attempt is reserved before the password is checked (one script call with the request's rate
// limit, gate.go) and settled after: a wrong password keeps it, a right one gives it back (and starts the browser's
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
	// Rate is the kind of the rate limit that refused the request (Reserve's rates), "" for a budget.
	Rate   string
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
// it counts nothing and says why. rates are the request's rate limits, counted in the same call (the
// gate, gate.go): when one refuses, no budget is counted and the refusal names it (Refusal.Rate).
func (l *Limiter) Reserve(ctx context.Context, a Attempt, lim Limits, rates ...Rate) (*Reservation, *Refusal, error) {
	return l.reserve(ctx, rates, l.budgets(a, lim), lim.Window, lim.MaxDelay, nil)
}

// ReserveWith is Reserve with the caller's own commands (also queues them: reads the sign-in needs
// whatever the answer, such as the account an address names) in the same round trip (D44). also may be
// called again when the pipeline is sent again; the commands of its last call carry the answers.
func (l *Limiter) ReserveWith(ctx context.Context, a Attempt, lim Limits, also func(p redis.Pipeliner), rates ...Rate) (*Reservation, *Refusal, error) {
	return l.reserve(ctx, rates, l.budgets(a, lim), lim.Window, lim.MaxDelay, also)
}

// reserve takes one attempt from each budget, with the rate limits, in one gate call (gate.go).
func (l *Limiter) reserve(ctx context.Context, rates []Rate, bs []budget, window, maxDelay time.Duration, also func(p redis.Pipeliner)) (*Reservation, *Refusal, error) {
	now := l.now().UnixMilli()
	r := &Reservation{l: l, now: now}
	rates = slices.DeleteFunc(slices.Clone(rates), func(r Rate) bool { return r.Limit <= 0 || r.Who == "" })
	if len(bs) == 0 && len(rates) == 0 && also == nil {
		return r, nil, nil
	}
	gr, err := l.gate(ctx, now, rates, bs, window, maxDelay, also)
	var refusal *Refusal
	if gr.rateWait > 0 {
		refusal = &Refusal{Rate: gr.rateKind, Wait: gr.rateWait}
	}
	for i, b := range bs {
		res := gr.budgets[i]
		if len(res) < 2 {
			continue // left alone, or not answered (err says why)
		}
		ms := time.Duration(max(res[1], 1)) * time.Millisecond
		if res[0] < 0 {
			ref := &Refusal{Budget: b.name, Wait: roundUp(ms), Locked: res[0] == -1}
			if refusal == nil || refusal.Rate == "" && (ref.Locked && !refusal.Locked || ref.Locked == refusal.Locked && ref.Wait > refusal.Wait) {
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
		// On a Cluster the budgets of other hash slots were counted in calls of their own: given back.
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

// QueueSucceeded is Succeeded queued in the caller's pipeline p (sent with Limiter.Pipelined, which
// loads the scripts when Redis has not seen them): a sign-in settles its attempt in the round trip that
// starts its session (D44). The function it returns says whether it was recorded, after p is sent.
func (r *Reservation) QueueSucceeded(ctx context.Context, p redis.Pipeliner) func() error {
	held := r.held
	r.held = nil
	cmds := r.queueSettle(ctx, p, held, true)
	return func() error {
		for _, c := range cmds {
			if err := c.Err(); err != nil {
				return fmt.Errorf("%w: %v", ErrUnavailable, err)
			}
		}
		return nil
	}
}

// queueSettle queues the settling of held: a success starts a known browser's budget afresh, anything
// else gives the attempt back.
func (r *Reservation) queueSettle(ctx context.Context, p redis.Pipeliner, held []budget, success bool) []redis.Cmder {
	cmds := make([]redis.Cmder, 0, len(held))
	for _, b := range held {
		if success && b.name == BudgetDevice {
			cmds = append(cmds, p.Del(ctx, b.key))
			continue
		}
		cmds = append(cmds, releaseScript.EvalSha(ctx, p, []string{b.key}, b.delayAfter))
	}
	return cmds
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
			r.queueSettle(ctx, p, held, success)
			return nil
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}
