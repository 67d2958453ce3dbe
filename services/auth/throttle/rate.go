package throttle

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// allowScript counts one request in a fixed window: at most ARGV[1] per ARGV[2] ms. Reply: {allowed
// (1 or 0), pttl}. Over the limit nothing more is counted, so the key never outlives its window.
var allowScript = redis.NewScript(`
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n >= tonumber(ARGV[1]) then return {0, redis.call('PTTL', KEYS[1])} end
n = redis.call('INCR', KEYS[1])
if n == 1 or redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return {1, redis.call('PTTL', KEYS[1])}
`)

// Allow counts a request of kind ("authorize-ip", "token-user", …) by who against limit per window,
// shared by every replica through Redis. It returns 0 when the request may go ahead, or how long to
// wait. limit <= 0 allows everything.
func (l *Limiter) Allow(ctx context.Context, kind, who string, limit int, window time.Duration) (time.Duration, error) {
	if limit <= 0 || who == "" {
		return 0, nil
	}
	res, err := allowScript.Run(ctx, l.rdb, []string{counterKey("rate:"+kind, who)}, limit, window.Milliseconds()).Int64Slice()
	if err != nil || len(res) != 2 {
		return 0, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if res[0] == 1 {
		return 0, nil
	}
	return roundUp(max(time.Duration(res[1])*time.Millisecond, time.Millisecond)), nil
}
