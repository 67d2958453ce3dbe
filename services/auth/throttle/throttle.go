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
