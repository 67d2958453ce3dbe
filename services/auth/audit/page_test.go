package audit_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/audit"
)

// Pages of both streams merged, newest first, each after the last entry of the one before: every
// matching event once, none of another user, and entries with one ID in both streams both listed; events
// added between pages do not shift the pages after.
func TestPage_BothStreamsNewestFirstWithoutLossOrRepeat(t *testing.T) {
	rdb := newRedis(t)
	s := audit.NewStore(rdb, nil)
	ctx := context.Background()
	// Two entries with one ID, one per stream: the merge must keep both in a stable order.
	for i, key := range []string{audit.StreamKey, audit.AttemptsKey} {
		raw := fmt.Sprintf(`{"kind":"signin","outcome":"%s","user":"u1","reason":"same-id-%d"}`, []string{"success", "failure"}[i], i)
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: "1-1", Values: []any{"e", raw}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 9 {
		e := audit.Event{Kind: audit.SignIn, Outcome: audit.Success, User: "u1", Detail: map[string]string{"n": fmt.Sprint(i)}}
		if i%3 == 0 {
			e.Outcome, e.Reason = audit.Failure, "bad_password" // the attempts stream
		}
		if err := s.Append(ctx, e, audit.Event{Kind: audit.SignIn, Outcome: audit.Success, User: "u2"}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	var order []string
	var after *audit.Cursor
	for page := 0; ; page++ {
		got, next, err := s.Page(ctx, audit.Filter{User: "u1"}, after, 4)
		if err != nil || page > 4 {
			t.Fatalf("page %d: %v", page, err)
		}
		for _, e := range got {
			key := audit.StreamNames[e.At.Stream] + "/" + e.ID
			if seen[key] || e.User != "u1" {
				t.Fatalf("page %d: %s again, or another user's (%s)", page, key, e.User)
			}
			seen[key] = true
			order = append(order, key)
		}
		if page == 0 { // an event recorded between pages is newer than every page: not on the next ones
			if err := s.Append(ctx, audit.Event{Kind: audit.SignIn, Outcome: audit.Success, User: "u1"}); err != nil {
				t.Fatal(err)
			}
		}
		if next == nil {
			break
		}
		after = next
	}
	if len(order) != 11 || order[9] != "security/1-1" || order[10] != "attempts/1-1" {
		t.Fatalf("%d events: %v; want 11, the two with ID 1-1 last, security first", len(order), order)
	}
	if !(audit.Cursor{Stream: 1, ID: "12-0"}).Valid() || (audit.Cursor{Stream: 2, ID: "12-0"}).Valid() || (audit.Cursor{ID: "12"}).Valid() {
		t.Fatal("Cursor.Valid")
	}
}
