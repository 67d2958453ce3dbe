package backchannel_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/backchannel"
	"github.com/formsservice/formsservice/services/auth/sso"
	"github.com/formsservice/formsservice/services/platform/config"
)

func newQueue(t *testing.T) *backchannel.Queue {
	srv := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	return backchannel.NewQueue(rdb)
}

// A claimed job is leased: no second claim takes it until the lease ends (a worker that died mid-attempt
// leaves it to be sent again); a retry is due when it says, and Done removes it.
func TestQueue_ClaimLeasesRetryWaitsDoneRemoves(t *testing.T) {
	q, ctx := newQueue(t), context.Background()
	t0 := time.UnixMilli(1_800_000_000_000)
	if err := q.Add(ctx, t0, backchannel.Job{Client: "app", Subject: "u1"}, backchannel.Job{Client: "app2", SID: "s1"}); err != nil {
		t.Fatal(err)
	}
	if jobs, _ := q.Claim(ctx, t0.Add(-time.Millisecond), time.Minute, 10); len(jobs) != 0 {
		t.Fatalf("claimed before due: %v", jobs)
	}
	jobs, err := q.Claim(ctx, t0, time.Minute, 1)
	if err != nil || len(jobs) != 1 || jobs[0].ID == "" {
		t.Fatalf("claim one: %v %v", jobs, err)
	}
	rest, _ := q.Claim(ctx, t0, time.Minute, 10)
	if len(rest) != 1 || rest[0].ID == jobs[0].ID {
		t.Fatalf("the second claim: %v, want the other job only", rest)
	}
	if again, _ := q.Claim(ctx, t0.Add(59*time.Second), time.Minute, 10); len(again) != 0 {
		t.Fatalf("claimed while leased: %v", again)
	}
	if again, _ := q.Claim(ctx, t0.Add(time.Minute), time.Minute, 10); len(again) != 2 {
		t.Fatalf("after the lease: %v, want both again", again)
	}
	j := jobs[0]
	j.Attempts = 1
	if err := q.Retry(ctx, j, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := q.Done(ctx, rest[0].ID); err != nil {
		t.Fatal(err)
	}
	if n, _ := q.Pending(ctx); n != 1 {
		t.Fatalf("pending %d, want 1", n)
	}
	if got, _ := q.Claim(ctx, t0.Add(time.Hour), time.Minute, 10); len(got) != 1 || got[0] != j {
		t.Fatalf("the retry: %v, want %v", got, j)
	}
}

// The schedule: 2, 8, 32, 128 minutes between five attempts.
func TestBackoff_FourTimesTheWaitBefore(t *testing.T) {
	want := []time.Duration{2 * time.Minute, 8 * time.Minute, 32 * time.Minute, 128 * time.Minute}
	for i, w := range want {
		if got := backchannel.Backoff(i + 1); got != w {
			t.Errorf("Backoff(%d) = %v, want %v", i+1, got, w)
		}
	}
	if backchannel.MaxAttempts != len(want)+1 {
		t.Errorf("MaxAttempts %d", backchannel.MaxAttempts)
	}
}

// Only clients with a URI hear of logouts; a client that requires sid gets one token per session of its
// grants (a grant of unknown session is left out for it), any other one token naming the user.
func TestNotifier_WhoIsToldWhat(t *testing.T) {
	q, ctx := newQueue(t), context.Background()
	a := config.Auth{Clients: []config.OAuthClient{
		{ClientID: "needs-sid", BackchannelLogoutURI: "https://a.example/bcl", BackchannelLogoutSessionRequired: true},
		{ClientID: "sub-only", BackchannelLogoutURI: "https://b.example/bcl"},
		{ClientID: "deaf"},
	}}
	t0 := time.UnixMilli(1_800_000_000_000)
	woke := 0
	n := backchannel.NewNotifier(q, func() backchannel.Targets { return backchannel.TargetsOf(a) }, func() time.Time { return t0 }, func() { woke++ })
	clients := map[string]string{"f1": "needs-sid", "f2": "needs-sid", "f3": "needs-sid", "f4": "sub-only", "f5": "sub-only", "f6": "deaf"}
	sessions := map[string]string{"f1": "sessA", "f2": "sessA", "f3": "", "f4": "sessA", "f5": "sessB", "f6": "sessA"}
	if err := n.SignedOutEverywhere(ctx, "u1", clients, sessions); err != nil {
		t.Fatal(err)
	}
	jobs, _ := q.Claim(ctx, t0, time.Minute, 100)
	got := map[backchannel.Job]bool{}
	for _, j := range jobs {
		j.ID = ""
		got[j] = true
	}
	want := map[backchannel.Job]bool{{Client: "needs-sid", Subject: "u1", SID: sidOf(t, "sessA")}: true, {Client: "sub-only", Subject: "u1"}: true}
	if len(got) != len(want) || !got[backchannel.Job{Client: "sub-only", Subject: "u1"}] {
		t.Fatalf("jobs %v, want %v", got, want)
	}
	for j := range want {
		if !got[j] {
			t.Errorf("missing %v in %v", j, got)
		}
	}
	if woke != 1 {
		t.Errorf("woke the worker %d times", woke)
	}
	none := backchannel.NewNotifier(q, func() backchannel.Targets { return backchannel.TargetsOf(config.Auth{}) }, nil, nil)
	if none.Enabled() {
		t.Error("enabled without a client with a URI")
	}
}

func sidOf(t *testing.T, session string) string {
	t.Helper()
	s := sso.SID(session)
	if s == "" || s == session {
		t.Fatalf("sid of %q: %q", session, s)
	}
	return s
}
