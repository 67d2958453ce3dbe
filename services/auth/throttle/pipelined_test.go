package throttle_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/throttle"
)

// A pipeline that carries the limiter's scripts beside other commands (a sign-in's session writes, its
// settled reservation and a rate limit: D44) is sent once; when Redis has forgotten the scripts (a
// restart, a failover: NOSCRIPT), only the script calls are sent again, so that no counter in the
// pipeline is counted twice.
func TestPipelined_NoScript_OnlyTheScriptCallsAreSentAgain(t *testing.T) {
	l, _, rdb := newLimiter(t)
	lim := throttle.Limits{Account: 10, IP: 10, Window: time.Hour}
	a := throttle.Attempt{Account: "someone@example.com", IP: "192.0.2.1"}
	rate := throttle.Rate{Kind: "authorize-user", Who: "user-1", Limit: 5, Window: time.Minute}

	// A reservation to settle, then Redis forgets every script.
	res, ref, err := l.Reserve(ctx, a, lim)
	if err != nil || ref != nil {
		t.Fatalf("reserve: %+v %v", ref, err)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	var limited *throttle.Queued
	var settled func() error
	var incr *redis.IntCmd
	err = l.Pipelined(ctx, func(p redis.Pipeliner) error {
		incr = p.Incr(ctx, "other-counter")
		settled = res.QueueSucceeded(ctx, p)
		limited = l.Queue(ctx, p, rate)
		return nil
	})
	if err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	if err := settled(); err != nil {
		t.Fatalf("settle: %v", err)
	}
	if wait, err := limited.Wait(); err != nil || wait != 0 {
		t.Fatalf("rate: wait %v, err %v", wait, err)
	}
	if n, _ := incr.Result(); n != 1 {
		t.Fatalf("the pipeline's own counter answered %d: it was sent again", n)
	}
	if n, _ := rdb.Get(ctx, "other-counter").Int(); n != 1 {
		t.Fatalf("the pipeline's own counter is %d after the pipeline, want 1", n)
	}
	// The rate limit counted this request once: four more are let through, the fifth after that is not.
	for i := range 4 {
		if wait, err := l.Allow(ctx, rate.Kind, rate.Who, rate.Limit, rate.Window); err != nil || wait != 0 {
			t.Fatalf("request %d after the pipeline: wait %v, err %v", i+2, wait, err)
		}
	}
	if wait, err := l.Allow(ctx, rate.Kind, rate.Who, rate.Limit, rate.Window); err != nil || wait == 0 {
		t.Fatalf("request 6 of a limit of 5: wait %v, err %v", wait, err)
	}
	// The attempt was given back: the account's budget is whole again (10 attempts, not 9), then used up.
	for i := range 10 {
		if _, ref, err := l.Reserve(ctx, a, lim); err != nil || ref != nil {
			t.Fatalf("attempt %d after the success: %+v %v", i+1, ref, err)
		}
	}
	if _, ref, err := l.Reserve(ctx, a, lim); err != nil || ref == nil {
		t.Fatalf("attempt 11 of a budget of 10 was let through (err %v)", err)
	}
}
