package throttle_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/throttle"
)

// An attempt is counted before the password is checked and settled after: a failure keeps it, a success
// clears the account and gives the address's attempt back, an outage gives both back, and an attempt
// refused by one counter takes nothing from the other.
func TestReserve_CountsBeforeTheCheckAndSettlesAfter(t *testing.T) {
	srv := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	l := throttle.New(rdb)
	ctx := context.Background()
	lim := throttle.Limits{Account: 2, IP: 3, Window: time.Minute}

	r, wait, err := l.Reserve(ctx, "ada@example.com", "192.0.2.1", lim)
	if err != nil || r == nil || wait != 0 {
		t.Fatalf("first reservation: %v %s %v", r, wait, err)
	}
	r.Release(ctx) // the password could not be checked: no guess
	if _, failed, _ := l.Check(ctx, "ada@example.com", "192.0.2.1", lim); failed {
		t.Fatal("a released attempt still counts against the account")
	}
	r, _, _ = l.Reserve(ctx, "ada@example.com", "192.0.2.1", lim)
	if w := r.Failed(); w != 0 {
		t.Fatalf("first failure: wait %s", w)
	}
	r, _, _ = l.Reserve(ctx, "ada@example.com", "192.0.2.1", lim)
	if w := r.Failed(); w <= 0 {
		t.Fatal("the failure that reaches the account's limit must say how long to wait")
	}
	// The account is at its limit: refused, and the address's counter is given back.
	if r, wait, _ := l.Reserve(ctx, "ada@example.com", "192.0.2.1", lim); r != nil || wait <= 0 {
		t.Fatalf("over the account's limit: %v %s", r, wait)
	}
	// The address has 2 of 3: one more attempt of another account fits; its success gives it back.
	r, _, _ = l.Reserve(ctx, "grace@example.com", "192.0.2.1", lim)
	if r == nil {
		t.Fatal("the address's third attempt was refused: a refused reservation kept its count")
	}
	if err := r.Succeeded(ctx); err != nil {
		t.Fatal(err)
	}
	if r, _, _ := l.Reserve(ctx, "grace@example.com", "192.0.2.1", lim); r == nil {
		t.Fatal("a success did not give the address's attempt back")
	}
}
