package throttle_test

import (
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/throttle"
)

// The sign-up form's counters: per address, blocked at the limit until the window ends.
func TestLimiter_BlocksAtTheLimitUntilTheWindowEnds(t *testing.T) {
	l, _, rdb := newLimiter(t)
	lim := throttle.Limits{Account: 2, IP: 3, Window: 1500 * time.Millisecond}

	if wait, _ := l.Fail(ctx, "Ada@example.com", "192.0.2.1", lim); wait != 0 {
		t.Fatalf("first failure: wait %s", wait)
	}
	wait, _ := l.Fail(ctx, "ada@example.com", "192.0.2.1", lim) // accounts compare in lower case
	if wait <= 0 || wait > 2*time.Second {
		t.Fatalf("at the account limit: wait %s, want about the window", wait)
	}
	if w, failed, err := l.Check(ctx, "ada@example.com", "192.0.2.99", lim); err != nil || w <= 0 || !failed {
		t.Fatalf("the account is blocked from any address: %s %v %v", w, failed, err)
	}
	if w, failed, _ := l.Check(ctx, "grace@example.com", "192.0.2.99", lim); w != 0 || failed {
		t.Fatalf("another account from another address: %s %v", w, failed)
	}
	// The address reaches its own limit through another account.
	if w, _ := l.Fail(ctx, "grace@example.com", "192.0.2.1", lim); w <= 0 {
		t.Fatalf("address at its limit: %s", w)
	}
	if w, _, _ := l.Check(ctx, "someone@example.com", "192.0.2.1", lim); w <= 0 {
		t.Fatalf("a blocked address lets another account through: %s", w)
	}
	testredis.EndLifetimes(t, rdb, "auth:throttle:*", lim.Window) // the window passes
	if w, _, _ := l.Check(ctx, "ada@example.com", "192.0.2.1", lim); w != 0 {
		t.Fatalf("after the window: wait %s", w)
	}
}
