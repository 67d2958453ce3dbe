package throttle_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/throttle"
)

// RateLua is the gate's counting of a rate limit for other packages' scripts (the token store's unit,
// D43): alternating with Allow on one counter, it lets exactly as many requests through, refuses with
// the same wait once the limit is reached, and counts nothing when it refuses.
func TestRateLua_CountsAsTheGate(t *testing.T) {
	l, _, rdb := newLimiter(t)
	script := redis.NewScript(throttle.RateLua + `return count_rates(KEYS, ARGV) or {0, 0}`)
	r := throttle.Rate{Kind: "token-user", Who: "user-1", Limit: 6, Window: time.Minute}
	viaScript := func() time.Duration {
		t.Helper()
		res, err := script.Run(ctx, rdb, []string{r.Key()}, r.RateArgs()...).Int64Slice()
		if err != nil || len(res) != 2 {
			t.Fatalf("count_rates: %v %v", res, err)
		}
		if res[0] == 0 {
			return 0
		}
		return throttle.RefusedWait(res[1])
	}
	for i := range 6 {
		var wait time.Duration
		var err error
		if i%2 == 0 {
			wait = viaScript()
		} else if wait, err = l.Allow(ctx, r.Kind, r.Who, r.Limit, r.Window); err != nil {
			t.Fatal(err)
		}
		if wait != 0 {
			t.Fatalf("request %d refused: %v", i, wait)
		}
	}
	byScript := viaScript()
	byGate, err := l.Allow(ctx, r.Kind, r.Who, r.Limit, r.Window)
	if err != nil || byScript <= 0 || byScript > time.Minute || byScript != byGate {
		t.Fatalf("over the limit: script waits %v, gate %v (%v)", byScript, byGate, err)
	}
	if n, _ := rdb.Get(ctx, r.Key()).Int(); n != 6 {
		t.Fatalf("counter %d after refusals, want 6", n)
	}
}
