package throttle_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/throttle"
)

// clock is a clock the test moves.
type clock struct{ ms atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ms.Store(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli())
	return c
}
func (c *clock) now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *clock) advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

func newLimiter(t *testing.T) (*throttle.Limiter, *clock, *redis.Client) {
	t.Helper()
	srv := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 32})
	t.Cleanup(func() { rdb.Close() })
	c := newClock()
	return throttle.New(rdb, c.now), c, rdb
}

var ctx = context.Background()

// fail reserves an attempt and settles it as a wrong password; it returns the wait and the budgets used
// up, or fails the test when the attempt was refused.
func fail(t *testing.T, l *throttle.Limiter, a throttle.Attempt, lim throttle.Limits) (time.Duration, []string) {
	t.Helper()
	r, ref, err := l.Reserve(ctx, a, lim)
	if err != nil || ref != nil {
		t.Fatalf("attempt refused: %+v %v", ref, err)
	}
	w, used, err := r.Failed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return w, used
}

// Failures of an account's unknown browsers slow down (1 s, doubling, at most MaxDelay) before they
// stop, and the stop lasts until the window ends, on the limiter's clock.
func TestReserve_FailuresSlowDownThenStop(t *testing.T) {
	l, c, _ := newLimiter(t)
	lim := throttle.Limits{Account: 6, IP: 100, Window: time.Minute, DelayAfter: 2, MaxDelay: 3 * time.Second}
	a := throttle.Attempt{Account: "ada@example.com", IP: "192.0.2.1"}
	if w, used := fail(t, l, a, lim); w != 0 || used != nil {
		t.Fatalf("first failure: wait %s %v", w, used)
	}
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second} {
		w, used := fail(t, l, a, lim)
		if w != want || used != nil {
			t.Fatalf("failure %d: wait %s %v, want %s", i+2, w, used, want)
		}
		// An attempt before the wait is over is refused, slowed down (not locked), and counts nothing.
		_, ref, err := l.Reserve(ctx, a, lim)
		if err != nil || ref == nil || ref.Locked || ref.Budget != throttle.BudgetAccount || ref.Wait != want {
			t.Fatalf("attempt during the wait: %+v %v, want slowed for %s", ref, err, want)
		}
		c.advance(want)
	}
	w, used := fail(t, l, a, lim) // the sixth: the budget is used up
	if !slices.Equal(used, []string{throttle.BudgetAccount}) || w <= 40*time.Second || w > time.Minute {
		t.Fatalf("sixth failure: wait %s used up %v, want the account's budget until the window ends", w, used)
	}
	_, ref, _ := l.Reserve(ctx, a, lim)
	if ref == nil || !ref.Locked || ref.Wait != w {
		t.Fatalf("after the limit: %+v, want locked for %s", ref, w)
	}
	c.advance(w)
	if w, used := fail(t, l, a, lim); w != 0 || used != nil {
		t.Fatalf("after the window: wait %s %v, want a fresh budget", w, used)
	}
}

// A browser that holds the account's device cookie has a budget of its own: an exhausted budget of the
// account's unknown browsers (or of an address) does not touch it, and its failures touch neither. Its
// success starts its budget afresh; an unknown browser's success gives its attempt back but keeps the
// failures others made.
func TestReserve_KnownBrowserHasItsOwnBudget(t *testing.T) {
	l, _, _ := newLimiter(t)
	lim := throttle.Limits{Device: 2, Account: 2, IP: 2, Window: time.Minute}
	unknown := throttle.Attempt{Account: "ada@example.com", IP: "192.0.2.1"}
	known := throttle.Attempt{Account: "ada@example.com", Device: "browser-1", IP: "192.0.2.1"}
	fail(t, l, unknown, lim)
	if _, used := fail(t, l, unknown, lim); !slices.Equal(used, []string{throttle.BudgetAccount, throttle.BudgetAddress}) {
		t.Fatalf("used up %v, want the account's and the address's", used)
	}
	if _, ref, _ := l.Reserve(ctx, unknown, lim); ref == nil || !ref.Locked {
		t.Fatal("an unknown browser after the account's limit was let through")
	}
	r, ref, err := l.Reserve(ctx, known, lim)
	if err != nil || ref != nil {
		t.Fatalf("the known browser was refused: %+v %v", ref, err)
	}
	if err := r.Succeeded(ctx); err != nil {
		t.Fatal(err)
	}
	// The known browser's failures are its own: another known browser still has its whole budget.
	fail(t, l, known, lim)
	if _, used := fail(t, l, known, lim); !slices.Equal(used, []string{throttle.BudgetDevice}) {
		t.Fatalf("used up %v, want the device's", used)
	}
	if _, ref, _ := l.Reserve(ctx, known, lim); ref == nil || ref.Budget != throttle.BudgetDevice {
		t.Fatalf("the known browser after its own limit: %+v", ref)
	}
	other := throttle.Attempt{Account: "ada@example.com", Device: "browser-2", IP: "192.0.2.1"}
	if _, ref, _ := l.Reserve(ctx, other, lim); ref != nil {
		t.Fatalf("another known browser was refused: %+v", ref)
	}

	// An unknown browser's success gives its own attempt back only.
	l2, _, _ := newLimiter(t)
	fail(t, l2, unknown, lim)
	r, _, _ = l2.Reserve(ctx, unknown, lim)
	_ = r.Succeeded(ctx)
	if _, used := fail(t, l2, unknown, lim); !slices.Equal(used, []string{throttle.BudgetAccount, throttle.BudgetAddress}) {
		t.Fatalf("after a success of an unknown browser: used up %v, want the other failure kept", used)
	}
	// An outage gives the attempt back.
	l3, _, _ := newLimiter(t)
	for range 5 {
		r, ref, _ := l3.Reserve(ctx, unknown, lim)
		if ref != nil {
			t.Fatal("a released attempt still counts")
		}
		r.Release(ctx)
	}
}

// Reserve-before-hash: any number of parallel attempts get no more reservations than the budget allows,
// with delays or without (a delay is set when a failure is settled, so attempts in flight together are
// bounded by the limit alone).
func TestReserve_ParallelAttempts_NoMoreThanTheBudget(t *testing.T) {
	for _, c := range []struct {
		name       string
		delayAfter int
		want       int
	}{{"no delays", 0, 10}, {"delays after 3", 3, 10}} {
		t.Run(c.name, func(t *testing.T) {
			l, _, _ := newLimiter(t)
			lim := throttle.Limits{Account: 10, IP: 1000, Window: time.Minute, DelayAfter: c.delayAfter, MaxDelay: time.Minute}
			var granted atomic.Int32
			var wg sync.WaitGroup
			for i := range 200 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					a := throttle.Attempt{Account: "ada@example.com", IP: "192.0.2." + string(rune('0'+i%10))}
					r, ref, err := l.Reserve(ctx, a, lim)
					if err != nil {
						t.Error(err)
						return
					}
					if ref == nil {
						granted.Add(1)
						_, _, _ = r.Failed(ctx)
					}
				}()
			}
			wg.Wait()
			if n := int(granted.Load()); n != c.want {
				t.Fatalf("%d of 200 parallel attempts reserved, want %d", n, c.want)
			}
		})
	}
}

// Attempts in flight together that succeed (a load test, a double submit, a family on one account) are
// never slowed down: only a settled failure makes the next attempt wait.
func TestReserve_ParallelSuccessesAreNeverSlowed(t *testing.T) {
	l, _, _ := newLimiter(t)
	lim := throttle.Limits{Account: 100, IP: 1000, Window: time.Minute, DelayAfter: 2, MaxDelay: time.Minute}
	a := throttle.Attempt{Account: "ada@example.com", IP: "192.0.2.1"}
	for round := range 2 {
		var held []*throttle.Reservation
		for range 20 { // twenty at once, none settled yet
			r, ref, err := l.Reserve(ctx, a, lim)
			if err != nil || ref != nil {
				t.Fatalf("round %d: an attempt in flight beside successes was refused: %+v %v", round, ref, err)
			}
			held = append(held, r)
		}
		for _, r := range held {
			if err := r.Succeeded(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
}
