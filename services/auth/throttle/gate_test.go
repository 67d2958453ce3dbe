package throttle_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/throttle"
)

// trips counts round trips to Redis (a command or a pipeline).
type trips struct{ n atomic.Int64 }

func (c *trips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(1); return next(ctx, cmds) }
}

// A rate limit and a reservation go to Redis together (D38): on a single server one round trip; on a
// Cluster one script per hash slot, and what one slot counted while another refused is given back. A
// refused rate limit counts no budget; a refused budget still counts the request against the rate.
func TestReserve_WithRate_OneCall_SameOutcomesOnServerAndCluster(t *testing.T) {
	single := func(t *testing.T) redis.UniversalClient {
		srv := testredis.Start(t)
		return redis.NewClient(&redis.Options{Addr: srv.Addr()})
	}
	cluster := func(t *testing.T) redis.UniversalClient {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: testredis.StartCluster(t, 3, 0).Addrs()})
	}
	for name, open := range map[string]func(*testing.T) redis.UniversalClient{"server": single, "cluster": cluster} {
		t.Run(name, func(t *testing.T) {
			rdb := open(t)
			t.Cleanup(func() { rdb.Close() })
			count := &trips{}
			rdb.AddHook(count)
			c := newClock()
			l := throttle.New(rdb, c.now)
			lim := throttle.Limits{Account: 3, IP: 100, Window: time.Minute}
			a := throttle.Attempt{Account: "ada@example.com", IP: "192.0.2.1"}
			rate := func(who string) throttle.Rate {
				return throttle.Rate{Kind: "authorize-ip", Who: who, Limit: 2, Window: time.Minute}
			}
			for i := range 2 {
				before := count.n.Load()
				r, ref, err := l.Reserve(ctx, a, lim, rate("192.0.2.1"))
				if err != nil || ref != nil {
					t.Fatalf("attempt %d refused: %+v %v", i, ref, err)
				}
				// The first loads the script (its first EVALSHA answers NOSCRIPT).
				if n := count.n.Load() - before; name == "server" && i == 1 && n != 1 {
					t.Errorf("rate limit and reservation: %d round trips, want 1", n)
				}
				if _, _, err := r.Failed(ctx); err != nil {
					t.Fatal(err)
				}
			}
			// The third request is over the rate: refused by it, and the account's budget is not touched.
			_, ref, err := l.Reserve(ctx, a, lim, rate("192.0.2.1"))
			if err != nil || ref == nil || ref.Rate != "authorize-ip" || ref.Wait != time.Minute {
				t.Fatalf("over the rate: %+v %v, want a refusal by authorize-ip for 60 s", ref, err)
			}
			// So the account has one failure left (3 - 2), and the next uses it up.
			r, ref, err := l.Reserve(ctx, a, lim, rate("192.0.2.2"))
			if err != nil || ref != nil {
				t.Fatalf("the account's last attempt was taken by a refused request: %+v %v", ref, err)
			}
			if _, used, _ := r.Failed(ctx); len(used) != 1 || used[0] != throttle.BudgetAccount {
				t.Fatalf("used up %v, want the account's budget", used)
			}
			// A budget's refusal still counts the request against its rate limit (192.0.2.2: 2 of 2).
			if _, ref, _ := l.Reserve(ctx, a, lim, rate("192.0.2.2")); ref == nil || ref.Budget != throttle.BudgetAccount {
				t.Fatalf("used-up account: %+v", ref)
			}
			if _, ref, _ := l.Reserve(ctx, throttle.Attempt{Account: "bob@example.com", IP: "192.0.2.2"}, lim, rate("192.0.2.2")); ref == nil || ref.Rate == "" {
				t.Fatalf("the rate limit did not count a request a budget refused: %+v", ref)
			}
			// The address's budget was given back by the refused attempts on either kind of store: two
			// failures and one more, nothing from the three refusals.
			for i := range 97 {
				r, ref, err := l.Reserve(ctx, throttle.Attempt{Account: "carol" + string(rune('a'+i%26)) + "@example.com", IP: "192.0.2.1"}, throttle.Limits{IP: 100, Window: time.Minute})
				if err != nil || ref != nil {
					t.Fatalf("address attempt %d refused: %+v %v", i, ref, err)
				}
				if _, _, err := r.Failed(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if _, ref, _ := l.Reserve(ctx, throttle.Attempt{IP: "192.0.2.1"}, throttle.Limits{IP: 100, Window: time.Minute}); ref == nil || ref.Budget != throttle.BudgetAddress {
				t.Fatalf("the address's budget counted %+v; want exactly 100 failures", ref)
			}
		})
	}
}
