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

// PipelinedAlong sends a pipeline with other commands beside the limiter's script again only when the
// limiter's own script was missing (it counted nothing then): another script's NOSCRIPT leaves it as it
// was, with the rate limit counted once and the other command's error on that command.
func TestPipelinedAlong_OthersNoScript_CountsOnce(t *testing.T) {
	l, _, rdb := newLimiter(t)
	r := throttle.Rate{Kind: "token-ip", Who: "192.0.2.1", Limit: 100, Window: time.Minute}
	other := redis.NewScript(`return 1 -- a script Redis has not seen`)
	for round, flush := range []bool{true, false} {
		if flush { // neither script known: the limiter's is loaded and the pipeline sent again
			if err := rdb.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		var q *throttle.Queued
		var cmd *redis.Cmd
		if err := l.PipelinedAlong(ctx, func(p redis.Pipeliner) error {
			q = l.Queue(ctx, p, r)
			cmd = other.EvalSha(ctx, p, []string{"k"})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if wait, err := q.Wait(); wait != 0 || err != nil {
			t.Fatalf("round %d: %v %v", round, wait, err)
		}
		if !redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			t.Fatalf("round %d: the other script's answer: %v", round, cmd.Err())
		}
		if n, _ := rdb.Get(ctx, r.Key()).Int(); n != round+1 {
			t.Fatalf("round %d: counted %d times in all, want %d", round, n, round+1)
		}
	}
}
