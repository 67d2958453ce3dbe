package throttle_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formsservice/formsservice/services/auth/throttle"
)

var codeLim = throttle.CodeLimits{PerUser: 5, Window: 15 * time.Minute, DelayAfter: 3, MaxDelay: time.Minute, IP: 50, IPWindow: time.Minute}

// failCode reserves a code and settles it as wrong; it fails the test when the code was refused.
func failCode(t *testing.T, l *throttle.Limiter, user, ip string, lim throttle.CodeLimits) (time.Duration, []string) {
	t.Helper()
	r, ref, err := l.ReserveCode(ctx, user, ip, lim)
	if err != nil || ref != nil {
		t.Fatalf("code refused: %+v %v", ref, err)
	}
	w, used, err := r.Failed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return w, used
}

// Fifty codes guessed in parallel for one user, each from its own address (so the address budget is no
// bound), get exactly the user's budget of checks: each is reserved before it is checked. All fifty are
// reserved before any is settled as wrong: a settled failure past DelayAfter makes the next attempt wait,
// so a guess reserved after the third failure was settled would be (rightly) refused, and how many got
// through would depend on the goroutines' timing (a -race run once saw 3).
func TestReserveCode_ParallelGuessesGetExactlyTheBudget(t *testing.T) {
	l, _, _ := newLimiter(t)
	var checked atomic.Int32
	var reserved, settle sync.WaitGroup
	var wg sync.WaitGroup
	reserved.Add(50)
	settle.Add(1)
	for i := range 50 {
		wg.Go(func() {
			r, ref, err := l.ReserveCode(ctx, "user-1", "192.0.2."+strconv.Itoa(i), codeLim)
			reserved.Done()
			if err != nil {
				t.Error(err)
				return
			}
			if ref != nil {
				if ref.Budget != throttle.BudgetCode || ref.Wait <= 0 {
					t.Errorf("refusal %+v", ref)
				}
				return
			}
			checked.Add(1)
			settle.Wait()
			_, _, _ = r.Failed(ctx)
		})
	}
	reserved.Wait()
	settle.Done()
	wg.Wait()
	if n := checked.Load(); n != int32(codeLim.PerUser) {
		t.Fatalf("%d of 50 parallel guesses checked, want %d", n, codeLim.PerUser)
	}
}

// Wrong codes slow down as wrong passwords do (1 s, then 2 s), then stop until the code budget's own
// window ends (not the address budget's shorter one), on the limiter's clock; a right code gives its
// attempt back but leaves the failures made before it.
func TestReserveCode_SlowsThenStopsForItsOwnWindow_ARightCodeKeepsEarlierFailures(t *testing.T) {
	l, c, _ := newLimiter(t)
	const user, ip = "user-1", "192.0.2.1"
	for i := range 2 {
		if w, used := failCode(t, l, user, ip, codeLim); w != 0 || used != nil {
			t.Fatalf("failure %d: wait %v used up %v", i+1, w, used)
		}
	}
	// A right code in between: its attempt is given back, the two failures stay.
	r, ref, err := l.ReserveCode(ctx, user, ip, codeLim)
	if err != nil || ref != nil {
		t.Fatalf("right code refused: %+v %v", ref, err)
	}
	if err := r.Succeeded(ctx); err != nil {
		t.Fatal(err)
	}
	if w, _ := failCode(t, l, user, ip, codeLim); w != time.Second {
		t.Fatalf("third failure: wait %v, want 1s", w)
	}
	if _, ref, _ := l.ReserveCode(ctx, user, ip, codeLim); ref == nil || ref.Locked || ref.Budget != throttle.BudgetCode || ref.Wait != time.Second {
		t.Fatalf("at once after the third failure: %+v, want slowed for 1s", ref)
	}
	c.advance(time.Second)
	if w, _ := failCode(t, l, user, ip, codeLim); w != 2*time.Second {
		t.Fatalf("fourth failure: wait %v, want 2s", w)
	}
	c.advance(2 * time.Second)
	w, used := failCode(t, l, user, ip, codeLim)
	if len(used) != 1 || used[0] != throttle.BudgetCode || w < 14*time.Minute {
		t.Fatalf("fifth failure: wait %v used up %v, want the code budget until its window ends", w, used)
	}
	c.advance(2 * time.Minute) // past the address budget's window, within the code budget's
	if _, ref, _ := l.ReserveCode(ctx, user, ip, codeLim); ref == nil || !ref.Locked || ref.Budget != throttle.BudgetCode {
		t.Fatalf("within the code window: %+v, want locked", ref)
	}
	// Another user's codes are not affected.
	if w, used := failCode(t, l, "user-2", ip, codeLim); w != 0 || used != nil {
		t.Fatalf("another user: wait %v used up %v", w, used)
	}
	c.advance(15 * time.Minute)
	if _, ref, err := l.ReserveCode(ctx, user, ip, codeLim); err != nil || ref != nil {
		t.Fatalf("after the window: %+v %v", ref, err)
	}
}

// Wrong passwords and wrong codes from one client address draw on one budget: the address's sign-in
// budget, used up by passwords, refuses codes too.
func TestReserveCode_SharesTheAddressBudgetWithPasswords(t *testing.T) {
	l, _, _ := newLimiter(t)
	lim := throttle.Limits{Account: 100, IP: 3, Window: time.Minute}
	for i := range 3 {
		fail(t, l, throttle.Attempt{Account: "someone" + string(rune('a'+i)) + "@example.com", IP: "192.0.2.9"}, lim)
	}
	cl := codeLim
	cl.IP, cl.IPWindow = lim.IP, lim.Window
	_, ref, err := l.ReserveCode(ctx, "user-1", "192.0.2.9", cl)
	if err != nil || ref == nil || ref.Budget != throttle.BudgetAddress || !ref.Locked {
		t.Fatalf("a code from an address out of sign-in budget: %+v %v, want refused by the address budget", ref, err)
	}
	if _, ref, _ := l.ReserveCode(ctx, "user-1", "192.0.2.10", cl); ref != nil {
		t.Fatalf("from another address: %+v", ref)
	}
}
