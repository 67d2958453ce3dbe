package audit_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/audit"
)

var chainKeys = audit.ChainKeys{Current: []byte("0123456789abcdef0123456789abcdef")}

// Where each event is kept: a refusal naming no user nowhere, what anyone can cause without a
// credential in the attempts stream, the rest (and the replays that reveal a stolen credential) in the
// security stream.
func TestTrailOf(t *testing.T) {
	for _, c := range []struct {
		e    audit.Event
		want audit.Trail
	}{
		{audit.Event{Kind: audit.SignIn, Outcome: audit.Failure, Reason: "csrf"}, audit.Unkept},
		{audit.Event{Kind: audit.Introspection, Outcome: audit.Failure, Reason: "unauthorized"}, audit.Unkept},
		{audit.Event{Kind: audit.ResetRequested, Outcome: audit.Failure, Reason: "unknown_account"}, audit.Unkept},
		{audit.Event{Kind: audit.SignIn, Outcome: audit.Failure, Reason: "bad_password", User: "u1"}, audit.Attempts},
		{audit.Event{Kind: audit.Lockout, Outcome: audit.Failure, User: "u1"}, audit.Attempts},
		{audit.Event{Kind: audit.SignUp, Outcome: audit.Success, User: "u1"}, audit.Attempts},
		{audit.Event{Kind: audit.ResetRequested, Outcome: audit.Success, User: "u1"}, audit.Attempts},
		{audit.Event{Kind: audit.SignIn, Outcome: audit.Success, User: "u1"}, audit.Security},
		{audit.Event{Kind: audit.MFARemoved, Outcome: audit.Success, User: "u1"}, audit.Security},
		{audit.Event{Kind: audit.UserDeleted, Outcome: audit.Success, User: "u1", Actor: audit.ActorCLI}, audit.Security},
		{audit.Event{Kind: audit.CodeReplay, Outcome: audit.Failure, User: "u1"}, audit.Security},
		{audit.Event{Kind: audit.RefreshReuse, Outcome: audit.Failure}, audit.Security},
	} {
		if got := audit.TrailOf(c.e); got != c.want {
			t.Errorf("%s %s %q user %q: trail %d, want %d", c.e.Kind, c.e.Outcome, c.e.Reason, c.e.User, got, c.want)
		}
	}
}

// Each stream holds its own events, capped on its own: a flood of attempts pushes no security event
// out, and the listing reads both in the order they were recorded.
func TestAppend_EachStreamItsOwnAndCappedOnItsOwn(t *testing.T) {
	rdb := newRedis(t)
	s := audit.NewStore(rdb, func() audit.Limits { return audit.Limits{MaxEntries: 10} }).Chained(chainKeys)
	ctx := context.Background()
	if err := s.Append(ctx, audit.Event{Kind: audit.SignIn, Outcome: audit.Success, User: "owner"}); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if err := s.Append(ctx, audit.Event{Kind: audit.SignIn, Outcome: audit.Failure, Reason: "bad_password", User: fmt.Sprint("u", i)},
			audit.Event{Kind: audit.SignIn, Outcome: audit.Failure, Reason: "csrf"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := rdb.XLen(ctx, audit.StreamKey).Val(); n != 1 {
		t.Fatalf("security stream: %d entries, want 1", n)
	}
	if n := rdb.XLen(ctx, audit.AttemptsKey).Val(); n != 10 {
		t.Fatalf("attempts stream: %d entries, want its cap, 10", n)
	}
	evs, err := s.Query(ctx, audit.Filter{})
	if err != nil || len(evs) != 11 || evs[0].User != "owner" || evs[10].User != "u49" {
		t.Fatalf("the listing: %d events %v", len(evs), err)
	}
	if evs, _ := s.Query(ctx, audit.Filter{Limit: 3}); len(evs) != 3 || evs[2].User != "u49" {
		t.Fatalf("the newest 3: %+v", evs)
	}
}

// appendN appends n security events through s.
func appendN(t *testing.T, s *audit.Store, from, n int) {
	t.Helper()
	for i := range n {
		if err := s.Append(context.Background(), audit.Event{Kind: audit.SignIn, Outcome: audit.Success, User: fmt.Sprint("u", from+i)}); err != nil {
			t.Fatal(err)
		}
	}
}

func verify(t *testing.T, rdb redis.UniversalClient) audit.Verification {
	t.Helper()
	v, err := audit.NewStore(rdb, nil).Verify(context.Background(), chainKeys)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The security stream is a chain that two replicas extend in turns; it holds from its first chained
// entry (older unchained entries before it are fine) through trimming, and an edit, a deletion inside
// the stream or an inserted entry breaks it at that entry.
func TestChain_TwoWritersHold_EditDeleteInsertBreak(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) *redis.Client {
		rdb := newRedis(t)
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: audit.StreamKey, Values: []any{"e", `{"kind":"signin","outcome":"success"}`}}).Err(); err != nil {
			t.Fatal(err) // an entry from before the chain
		}
		a := audit.NewStore(rdb, func() audit.Limits { return audit.Limits{MaxEntries: 1000} }).Chained(chainKeys)
		b := audit.NewStore(rdb, func() audit.Limits { return audit.Limits{MaxEntries: 1000} }).Chained(chainKeys)
		for i := range 5 {
			appendN(t, a, 10*i, 2)
			appendN(t, b, 10*i+5, 2)
		}
		return rdb
	}
	t.Run("intact", func(t *testing.T) {
		rdb := setup(t)
		if v := verify(t, rdb); !v.Intact() || v.Entries != 21 || v.Chained != 20 {
			t.Fatalf("%+v", v)
		}
		if err := rdb.XTrimMaxLen(ctx, audit.StreamKey, 7).Err(); err != nil {
			t.Fatal(err)
		}
		if v := verify(t, rdb); !v.Intact() || v.Chained != 7 {
			t.Fatalf("after trimming from the old end: %+v", v)
		}
	})
	t.Run("deleted inside", func(t *testing.T) {
		rdb := setup(t)
		msgs := rdb.XRange(ctx, audit.StreamKey, "-", "+").Val()
		rdb.XDel(ctx, audit.StreamKey, msgs[10].ID)
		if v := verify(t, rdb); v.Intact() || v.BreakAt != msgs[11].ID || !strings.Contains(v.BreakWhy, "deleted or inserted") {
			t.Fatalf("%+v", v)
		}
	})
	t.Run("edited", func(t *testing.T) {
		rdb := setup(t)
		msgs := rdb.XRange(ctx, audit.StreamKey, "-", "+").Val()
		rdb.Del(ctx, audit.StreamKey) // a stream entry is rewritten by rewriting the stream, with its IDs
		for i, m := range msgs {
			vals := []any{}
			for _, f := range []string{"e", "p", "h"} {
				if v, ok := m.Values[f].(string); ok {
					if f == "e" && i == 12 {
						v = strings.Replace(v, `"success"`, `"failure"`, 1)
					}
					vals = append(vals, f, v)
				}
			}
			if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: audit.StreamKey, ID: m.ID, Values: vals}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if v := verify(t, rdb); v.Intact() || v.BreakAt != msgs[12].ID || !strings.Contains(v.BreakWhy, "does not match its content") {
			t.Fatalf("%+v", v)
		}
	})
	t.Run("inserted", func(t *testing.T) {
		rdb := setup(t)
		rdb.XAdd(ctx, &redis.XAddArgs{Stream: audit.StreamKey, Values: []any{"e", `{"kind":"signin","outcome":"success","user":"x"}`}})
		if v := verify(t, rdb); v.Intact() || !strings.Contains(v.BreakWhy, "without a chain link") {
			t.Fatalf("%+v", v)
		}
		// A forged link (a MAC made without the key) breaks it too.
		rdb2 := setup(t)
		last := rdb2.XRevRangeN(ctx, audit.StreamKey, "+", "-", 1).Val()[0]
		rdb2.XAdd(ctx, &redis.XAddArgs{Stream: audit.StreamKey, Values: []any{"e", `{"kind":"signin"}`, "p", last.Values["h"], "h", "forged"}})
		if v := verify(t, rdb2); v.Intact() || !strings.Contains(v.BreakWhy, "does not match") {
			t.Fatalf("a forged MAC: %+v", v)
		}
	})
}

// A refusal that names no user is counted, logged at most 10 times a second per kind, and never stored.
func TestRecorder_RefusalsNamingNoUser_CountedSampledNotStored(t *testing.T) {
	rdb := newRedis(t)
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	fixed := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	rec, err := audit.New(audit.Options{Store: audit.NewStore(rdb, nil), Log: audit.NewLog(&logs), Registerer: reg,
		Now: func() time.Time { return fixed }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- rec.Run(ctx) }()
	for range 500 {
		rec.Record(context.Background(), audit.Event{Kind: audit.ResetRequested, Outcome: audit.Failure, Reason: "csrf"})
	}
	rec.Record(context.Background(), audit.Event{Kind: audit.SignIn, Outcome: audit.Success, User: "u1"})
	if err := rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _ := audit.NewStore(rdb, nil).Len(context.Background()); n != 1 {
		t.Fatalf("%d entries stored, want only the sign-in", n)
	}
	if lines := strings.Count(logs.String(), "\n"); lines != 11 {
		t.Fatalf("%d log lines, want 10 of the refusals and the sign-in", lines)
	}
	if n := counter(t, reg, "formsservice_audit_events_total", map[string]string{"kind": "password.reset_requested", "outcome": "failure"}); n != 500 {
		t.Fatalf("counted %v refusals, want 500", n)
	}
	if n := counter(t, reg, "formsservice_audit_unlogged_total", nil); n != 490 {
		t.Fatalf("formsservice_audit_unlogged_total = %v, want 490", n)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
