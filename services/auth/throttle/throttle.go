// Package throttle bounds failed sign-ins per account and per client address with counters in Redis,
// so that every replica sees the same counts. A counter starts at the first failure and lasts one
// window; at the limit, sign-in is refused until the window ends.
package throttle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrUnavailable wraps Redis failures.
var ErrUnavailable = errors.New("throttle store unavailable")

// Limits are the failures allowed per account and per address within Window; 0 disables a limit.
type Limits struct {
	Account int
	IP      int
	Window  time.Duration
}

// Limiter counts failures.
type Limiter struct{ rdb redis.UniversalClient }

// New returns a Limiter.
func New(rdb redis.UniversalClient) *Limiter { return &Limiter{rdb: rdb} }

// The key holds a hash of the account or address: bounded length, and no e-mail address in key names.
func counterKey(kind, v string) string {
	h := sha256.Sum256([]byte(strings.ToLower(v)))
	return "auth:throttle:" + kind + ":{" + hex.EncodeToString(h[:16]) + "}"
}

// Check returns how long to wait before trying again (0: go ahead) and whether the account has failures
// on record (only then does a success need Reset).
func (l *Limiter) Check(ctx context.Context, account, ip string, lim Limits) (wait time.Duration, accountFailed bool, err error) {
	type counter struct {
		account bool
		limit   int
		get     *redis.StringCmd
		ttl     *redis.DurationCmd
	}
	var cs []counter
	_, err = l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if lim.Account > 0 && account != "" {
			k := counterKey("account", account)
			cs = append(cs, counter{true, lim.Account, p.Get(ctx, k), p.PTTL(ctx, k)})
		}
		if lim.IP > 0 && ip != "" {
			k := counterKey("ip", ip)
			cs = append(cs, counter{false, lim.IP, p.Get(ctx, k), p.PTTL(ctx, k)})
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, false, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	for _, c := range cs {
		n, _ := c.get.Int()
		if c.account && n > 0 {
			accountFailed = true
		}
		if n >= c.limit {
			wait = max(wait, c.ttl.Val())
		}
	}
	return roundUp(wait), accountFailed, nil
}

var failScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 or redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {n, redis.call('PTTL', KEYS[1])}
`)

// Fail records a failed sign-in and returns how long to wait if it reached a limit.
func (l *Limiter) Fail(ctx context.Context, account, ip string, lim Limits) (time.Duration, error) {
	var wait time.Duration
	for _, c := range []struct {
		kind, v string
		limit   int
	}{{"account", account, lim.Account}, {"ip", ip, lim.IP}} {
		if c.limit <= 0 || c.v == "" {
			continue
		}
		res, err := failScript.Run(ctx, l.rdb, []string{counterKey(c.kind, c.v)}, lim.Window.Milliseconds()).Int64Slice()
		if err != nil || len(res) != 2 {
			return 0, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		if int(res[0]) >= c.limit {
			wait = max(wait, time.Duration(res[1])*time.Millisecond)
		}
	}
	return roundUp(wait), nil
}

// reserveScript takes one attempt from a counter before the password is checked: below the limit it
// counts the attempt at once (starting the window on the first), at the limit it counts nothing and
// answers the time left. Check and count are one step, so that no number of replicas or cores can let
// more attempts through than the limit. ARGV: limit, window in ms. Reply: {count or -1, pttl}.
var reserveScript = redis.NewScript(`
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n >= tonumber(ARGV[1]) then return {-1, redis.call('PTTL', KEYS[1])} end
n = redis.call('INCR', KEYS[1])
if n == 1 or redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return {n, redis.call('PTTL', KEYS[1])}
`)

// releaseScript gives an attempt back (its outcome was not a failure); DECR keeps the key's expiry, and a
// counter that expired meanwhile is not recreated.
var releaseScript = redis.NewScript(`
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n > 0 then redis.call('DECR', KEYS[1]) end
return 1
`)

// Reservation is one sign-in attempt already counted as a failure against the account and the address;
// its outcome settles it: Failed keeps the count, Succeeded resets the account and gives the address's
// attempt back, Release (the password could not be checked) gives both back.
type Reservation struct {
	l    *Limiter
	held []string // counter keys this reservation counted in
	// limitReached: a counter reached its limit with this attempt; its window ends after wait.
	limitReached bool
	wait         time.Duration
	account      string
}

// Reserve counts an attempt against every configured limit before the password is checked. When a
// limit is already reached it counts nothing and returns how long to wait (and a nil Reservation).
// The counters of the account and of the address live in different Cluster slots: each is reserved
// atomically on its own (one script each, pipelined), and an attempt refused by one gives the other back.
func (l *Limiter) Reserve(ctx context.Context, account, ip string, lim Limits) (*Reservation, time.Duration, error) {
	type counter struct {
		key   string
		limit int
		cmd   *redis.Cmd
	}
	var cs []*counter
	if lim.Account > 0 && account != "" {
		cs = append(cs, &counter{key: counterKey("account", account), limit: lim.Account})
	}
	if lim.IP > 0 && ip != "" {
		cs = append(cs, &counter{key: counterKey("ip", ip), limit: lim.IP})
	}
	r := &Reservation{l: l, account: account}
	if len(cs) == 0 {
		return r, 0, nil
	}
	run := func() error {
		_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, c := range cs {
				c.cmd = reserveScript.EvalSha(ctx, p, []string{c.key}, c.limit, lim.Window.Milliseconds())
			}
			return nil
		})
		return err
	}
	err := run()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		if err = reserveScript.Load(ctx, l.rdb).Err(); err == nil {
			err = run()
		}
	}
	var refused time.Duration
	for _, c := range cs {
		res, cerr := c.cmd.Int64Slice()
		if cerr != nil || len(res) != 2 {
			if err == nil {
				err = cerr
			}
			continue
		}
		if res[0] < 0 {
			refused = max(refused, time.Duration(res[1])*time.Millisecond, time.Millisecond)
			continue
		}
		r.held = append(r.held, c.key)
		if int(res[0]) >= c.limit {
			r.limitReached = true
			r.wait = max(r.wait, time.Duration(res[1])*time.Millisecond)
		}
	}
	if err != nil || refused > 0 {
		r.Release(context.WithoutCancel(ctx))
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		return nil, roundUp(refused), nil
	}
	return r, 0, nil
}

// Failed settles a wrong password: the attempt stays counted. It returns how long to wait when this
// attempt used up a limit (0 otherwise).
func (r *Reservation) Failed() time.Duration {
	if !r.limitReached {
		return 0
	}
	return roundUp(r.wait)
}

// Succeeded settles a right password: the account's failures are cleared and the address's attempt is
// given back (only failures count against an address).
func (r *Reservation) Succeeded(ctx context.Context) error {
	var err error
	for _, k := range r.held {
		if r.account != "" && k == counterKey("account", r.account) {
			err = errors.Join(err, r.l.rdb.Del(ctx, k).Err())
			continue
		}
		err = errors.Join(err, releaseScript.Run(ctx, r.l.rdb, []string{k}).Err())
	}
	r.held = nil
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}

// Release gives the attempt back: the password could not be checked (the store or the hashing pool was
// unavailable), so it was no guess.
func (r *Reservation) Release(ctx context.Context) {
	for _, k := range r.held {
		_ = releaseScript.Run(ctx, r.l.rdb, []string{k}).Err()
	}
	r.held = nil
}

// Reset clears the account's counter after a successful sign-in (the address keeps its count).
func (l *Limiter) Reset(ctx context.Context, account string) error {
	if err := l.rdb.Del(ctx, counterKey("account", account)).Err(); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}

func roundUp(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d.Truncate(time.Second) + time.Second
}
