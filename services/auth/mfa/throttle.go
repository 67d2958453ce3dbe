package mfa

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Limits bound wrong second-factor codes per user: Failures within Window, counted as the sign-in
// throttle counts passwords (reserved before the code is checked, so parallel guesses get no more
// checks than the budget). 0 Failures: no bound.
type Limits struct {
	Failures int
	Window   time.Duration
}

// reserveScript is the sign-in throttle's: below the limit count the attempt at once (starting the
// window on the first), at the limit count nothing and answer the time left. ARGV: limit, window in ms.
// Reply: {count or -1, pttl}.
var reserveScript = redis.NewScript(`
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n >= tonumber(ARGV[1]) then return {-1, redis.call('PTTL', KEYS[1])} end
n = redis.call('INCR', KEYS[1])
if n == 1 or redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return {n, redis.call('PTTL', KEYS[1])}
`)

var releaseScript = redis.NewScript(`
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n > 0 then redis.call('DECR', KEYS[1]) end
return 1
`)

// Attempt is one code, counted as a failure before it is checked; its outcome settles it.
type Attempt struct {
	s     *Store
	user  string
	held  bool
	last  bool // this attempt used up the budget
	wait  time.Duration
	limit Limits
}

// Reserve counts an attempt against the user's budget. When the budget is used up it counts nothing
// and returns how long to wait (and a nil Attempt).
func (s *Store) Reserve(ctx context.Context, user string, lim Limits) (*Attempt, time.Duration, error) {
	a := &Attempt{s: s, user: user, limit: lim}
	if lim.Failures <= 0 {
		return a, 0, nil
	}
	res, err := reserveScript.Run(ctx, s.rdb, []string{failuresKey(user)}, lim.Failures, lim.Window.Milliseconds()).Int64Slice()
	if err != nil || len(res) != 2 {
		return nil, 0, unavailable(errors.Join(err, fmt.Errorf("reply %v", res)))
	}
	if res[0] < 0 {
		return nil, roundUp(max(time.Duration(res[1])*time.Millisecond, time.Millisecond)), nil
	}
	a.held = true
	if int(res[0]) >= lim.Failures {
		a.last, a.wait = true, time.Duration(res[1])*time.Millisecond
	}
	return a, 0, nil
}

// Failed settles a wrong code: it stays counted. It returns how long to wait when this attempt used up
// the budget (0 otherwise).
func (a *Attempt) Failed() time.Duration {
	if !a.last {
		return 0
	}
	return roundUp(a.wait)
}

// Succeeded settles a right code: the user's failures are cleared.
func (a *Attempt) Succeeded(ctx context.Context) error {
	if !a.held {
		return nil
	}
	a.held = false
	if err := a.s.rdb.Del(ctx, failuresKey(a.user)).Err(); err != nil {
		return unavailable(err)
	}
	return nil
}

// Release gives the attempt back: the code could not be checked (the store failed), so it was no guess.
func (a *Attempt) Release(ctx context.Context) {
	if a.held {
		a.held = false
		_ = releaseScript.Run(ctx, a.s.rdb, []string{failuresKey(a.user)}).Err()
	}
}

func roundUp(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d.Truncate(time.Second) + time.Second
}
