// Package throttle bounds failed sign-ins with budgets in Redis that every replica shares (budget.go:
// known browsers, unknown browsers of an account, client addresses; failures slow down, then stop),
// counts the sign-up form's failures per client address, and rate-limits requests (rate.go).
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

// Limits are the budgets: failures allowed within Window per known browser (Device), per account for
// every unknown browser together (Account) and per client address (IP), and how failures slow down
// before a budget is used up (DelayAfter, MaxDelay). 0 disables a limit.
type Limits struct {
	Device  int
	Account int
	IP      int
	Window  time.Duration
	// DelayAfter failures of a browser or of an account's unknown browsers, each further attempt
	// waits: 1 s, doubling, at most MaxDelay. 0: no delays.
	DelayAfter int
	MaxDelay   time.Duration
}

// Limiter counts failures.
type Limiter struct {
	rdb redis.UniversalClient
	now func() time.Time
}

// New returns a Limiter whose budgets run on now (nil: time.Now); Redis's own clock only ends the
// keys of budgets long over.
func New(rdb redis.UniversalClient, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{rdb: rdb, now: now}
}

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

// roundUp is d in whole seconds, rounded up (Retry-After counts seconds; a wait of 0.2 s is 1 s).
func roundUp(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return (d + time.Second - 1).Truncate(time.Second)
}
