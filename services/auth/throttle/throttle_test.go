package throttle_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formsservice/formsservice/services/auth/throttle"
)

// Sign-ups count whatever their outcome, per client address and per e-mail address, reserved before
// anything is created: 100 parallel probes get exactly the budget, a refusal counts nothing, and the
// window ends on the limiter's clock.
func TestReserveSignup_ExactlyTheBudgetUnderParallelProbes(t *testing.T) {
	l, c, _ := newLimiter(t)
	lim := throttle.SignupLimits{PerIP: 10, PerAddress: 3, Window: time.Hour}
	probe := func(email func(i int) string, ip func(i int) string) (granted int32, budgets map[string]int) {
		var n atomic.Int32
		var mu sync.Mutex
		budgets = map[string]int{}
		var wg sync.WaitGroup
		for i := range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, ref, err := l.ReserveSignup(ctx, email(i), ip(i), lim)
				if err != nil {
					t.Error(err)
					return
				}
				if ref == nil {
					n.Add(1)
					return
				}
				mu.Lock()
				budgets[ref.Budget]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		return n.Load(), budgets
	}
	// One address farming accounts.
	n, refused := probe(func(i int) string { return fmt.Sprintf("farm%d@example.com", i) }, func(int) string { return "192.0.2.1" })
	if n != 10 || refused[throttle.BudgetSignupAddress] != 90 {
		t.Fatalf("one client address: %d sign-ups let through, refusals %v; want 10 and 90", n, refused)
	}
	// One e-mail address from many client addresses (mail bombing it).
	n, refused = probe(func(int) string { return "ada@example.com" }, func(i int) string { return fmt.Sprintf("198.51.100.%d", i) })
	if n != 3 || refused[throttle.BudgetSignupEmail] != 97 {
		t.Fatalf("one e-mail address: %d sign-ups let through, refusals %v; want 3 and 97", n, refused)
	}
	// A refused sign-up took nothing from the other budget: another address of the 97 clients is free.
	if _, ref, _ := l.ReserveSignup(ctx, "grace@example.com", "198.51.100.50", lim); ref != nil {
		t.Fatalf("a client whose earlier sign-up was refused: %+v", ref)
	}
	// A released reservation (the store failed) is given back.
	r, _, _ := l.ReserveSignup(ctx, "linus@example.com", "203.0.113.1", lim)
	r.Release(ctx)
	for range 3 {
		if _, ref, _ := l.ReserveSignup(ctx, "linus@example.com", "203.0.113.1", lim); ref != nil {
			t.Fatalf("after a release: %+v", ref)
		}
	}
	_, ref, _ := l.ReserveSignup(ctx, "ada@example.com", "203.0.113.2", lim)
	if ref == nil || !ref.Locked || ref.Wait <= 59*time.Minute {
		t.Fatalf("over the e-mail address's budget: %+v, want locked for the rest of the hour", ref)
	}
	c.advance(time.Hour)
	if _, ref, _ := l.ReserveSignup(ctx, "ada@example.com", "203.0.113.2", lim); ref != nil {
		t.Fatalf("after the window: %+v", ref)
	}
}
