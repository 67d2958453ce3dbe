package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/auth/audit"
)

func newRedis(t *testing.T) *redis.Client {
	t.Helper()
	srv := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// redisNow is Redis's clock, which entry IDs (and so the time filters and the retention) follow.
func redisNow(t *testing.T, rdb redis.Cmdable) time.Time {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now
}

// The stream is read back filtered by user, client, kind (exact or by prefix) and time, oldest first,
// and Limit keeps the newest matches.
func TestQuery_FiltersByUserClientKindAndTime(t *testing.T) {
	rdb := newRedis(t)
	s := audit.NewStore(rdb, nil)
	ctx := context.Background()
	first := []audit.Event{
		{Kind: audit.SignIn, Outcome: audit.Success, User: "u1", Client: "app"},
		{Kind: audit.SignIn, Outcome: audit.Failure, Reason: "bad_password", User: "u2", Client: "app"},
		{Kind: audit.TokenRevoked, Outcome: audit.Success, User: "u1", Client: "other"},
	}
	if err := s.Append(ctx, first...); err != nil {
		t.Fatal(err)
	}
	// A millisecond boundary between the two batches, on Redis's clock.
	mark := redisNow(t, rdb)
	next := mark.Truncate(time.Millisecond).Add(time.Millisecond)
	testwait.For(t, time.Second, "Redis's clock past the next millisecond", func() bool { return !redisNow(t, rdb).Before(next) })
	between := redisNow(t, rdb)
	if err := s.Append(ctx, audit.Event{Kind: audit.CodeReplay, Outcome: audit.Failure, User: "u1", Client: "app"},
		audit.Event{Kind: audit.SignIn, Outcome: audit.Success, User: "u1", Client: "app"}); err != nil {
		t.Fatal(err)
	}
	kinds := func(f audit.Filter) string {
		t.Helper()
		evs, err := s.Query(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range evs {
			if e.ID == "" {
				t.Fatalf("event without its stream ID: %+v", e)
			}
			out = append(out, string(e.Kind)+"/"+e.User)
		}
		return strings.Join(out, " ")
	}
	tokens, _ := audit.ParseKinds("token.*")
	for _, c := range []struct {
		f    audit.Filter
		want string
	}{
		{audit.Filter{}, "signin/u1 signin/u2 token.revoked/u1 token.code_replay/u1 signin/u1"},
		{audit.Filter{User: "u1"}, "signin/u1 token.revoked/u1 token.code_replay/u1 signin/u1"},
		{audit.Filter{Client: "other"}, "token.revoked/u1"},
		{audit.Filter{Kinds: []audit.Kind{audit.SignIn}, User: "u1"}, "signin/u1 signin/u1"},
		{audit.Filter{Kinds: tokens}, "token.revoked/u1 token.code_replay/u1"},
		{audit.Filter{Since: between}, "token.code_replay/u1 signin/u1"},
		{audit.Filter{Until: mark}, "signin/u1 signin/u2 token.revoked/u1"},
		{audit.Filter{Limit: 2}, "token.code_replay/u1 signin/u1"},
		{audit.Filter{User: "nobody"}, ""},
	} {
		if got := kinds(c.f); got != c.want {
			t.Errorf("%+v: %q, want %q", c.f, got, c.want)
		}
	}
}

// A query longer than one page of XREVRANGE reads on until Limit matches.
func TestQuery_ReadsPastOnePage(t *testing.T) {
	rdb := newRedis(t)
	s := audit.NewStore(rdb, nil)
	ctx := context.Background()
	var evs []audit.Event
	for i := range 1200 {
		evs = append(evs, audit.Event{Kind: audit.SignIn, Outcome: audit.Success, User: fmt.Sprint("u", i%3)})
	}
	if err := s.Append(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	got, err := s.Query(ctx, audit.Filter{User: "u0"})
	if err != nil || len(got) != 400 {
		t.Fatalf("all of u0's events: %d %v, want 400", len(got), err)
	}
	got, _ = s.Query(ctx, audit.Filter{User: "u2", Limit: 350})
	if len(got) != 350 || !streamIDLess(got[0].ID, got[349].ID) {
		t.Fatalf("newest 350 of u2's, oldest first: %d, from %s to %s", len(got), got[0].ID, got[len(got)-1].ID)
	}
}

// streamIDLess orders two stream IDs ("ms-seq") as Redis does. As strings they do not: 1200 events
// appended within one millisecond run from "…-0" to "…-1199", and "…-503" sorts after "…-1199".
func streamIDLess(a, b string) bool {
	split := func(id string) (uint64, uint64) {
		ms, seq, _ := strings.Cut(id, "-")
		m, _ := strconv.ParseUint(ms, 10, 64)
		n, _ := strconv.ParseUint(seq, 10, 64)
		return m, n
	}
	am, as := split(a)
	bm, bs := split(b)
	return am < bm || am == bm && as < bs
}

// The stream never holds more than MaxEntries, and entries older than Retention (by Redis's clock) go
// at the next write.
func TestAppend_TrimsByCountAndByAge(t *testing.T) {
	rdb := newRedis(t)
	ctx := context.Background()
	lim := audit.Limits{MaxEntries: 5, Retention: time.Hour}
	s := audit.NewStore(rdb, func() audit.Limits { return lim })
	for i := range 8 {
		if err := s.Append(ctx, audit.Event{Kind: audit.SignIn, Outcome: audit.Success, User: fmt.Sprint("u", i)}); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := s.Query(ctx, audit.Filter{})
	if len(got) != 5 || got[0].User != "u3" || got[4].User != "u7" {
		t.Fatalf("after 8 events at most 5, the newest: %+v", got)
	}

	// Entries from two hours ago (an ID names the time it was stored) leave at the next write.
	old := redisNow(t, rdb).Add(-2 * time.Hour).UnixMilli()
	if err := rdb.Del(ctx, audit.StreamKey).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		raw, _ := json.Marshal(audit.Event{Kind: audit.SignIn, Outcome: audit.Success, User: fmt.Sprint("old", i)})
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: audit.StreamKey, ID: fmt.Sprintf("%d-%d", old, i), Values: []any{"e", string(raw)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := s.Len(ctx); n != 3 {
		t.Fatalf("old entries: %d", n)
	}
	if err := s.Append(ctx, audit.Event{Kind: audit.SignIn, Outcome: audit.Success, User: "new"}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Query(ctx, audit.Filter{})
	if len(got) != 1 || got[0].User != "new" {
		t.Fatalf("after a write, entries older than the retention remain: %+v", got)
	}
}

// One stream key is one Cluster slot: writes and reads work on a real 3-master Redis Cluster.
func TestStore_OnRedisCluster(t *testing.T) {
	cluster := testredis.StartCluster(t, 3, 0)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	s := audit.NewStore(rdb, func() audit.Limits { return audit.Limits{MaxEntries: 100, Retention: time.Hour} })
	for i := range 3 {
		if err := s.Append(ctx, audit.Event{Kind: audit.Logout, Outcome: audit.Success, User: fmt.Sprint("u", i)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Query(ctx, audit.Filter{User: "u1"})
	if err != nil || len(got) != 1 || got[0].Kind != audit.Logout {
		t.Fatalf("query on the cluster: %+v %v", got, err)
	}
}

// Record logs and counts at once and stores through Run in batches; Flush waits for the store. The
// request's address and user agent come from the context; a hostile user agent is bounded and loses its
// control characters.
func TestRecorder_LogsCountsAndStoresWithTheRequestsOrigin(t *testing.T) {
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

	hostile := "Mozilla/5.0\r\n{\"forged\":true}\x1b[31m" + strings.Repeat("x", 1000)
	rctx := audit.WithOrigin(context.Background(), netip.MustParseAddr("203.0.113.9"), hostile)
	for range 10 {
		rec.Record(rctx, audit.Event{Kind: audit.SignIn, Outcome: audit.Failure, Reason: "bad_password", User: "u1", Client: "app"})
	}
	if err := rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := audit.NewStore(rdb, nil).Query(context.Background(), audit.Filter{})
	if err != nil || len(got) != 10 {
		t.Fatalf("stored after Flush: %d %v, want 10", len(got), err)
	}
	e := got[0]
	if e.Addr != "203.0.113.9" || !e.Time.Equal(fixed) || len(e.UserAgent) > 256 || strings.ContainsAny(e.UserAgent, "\r\n\x1b") ||
		!strings.HasPrefix(e.UserAgent, "Mozilla/5.0{") {
		t.Fatalf("stored event: %+v", e)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 10 {
		t.Fatalf("%d log lines, want 10", len(lines))
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
		t.Fatal(err)
	}
	if line["stream"] != "audit" || line["kind"] != "signin" || line["outcome"] != "failure" || line["addr"] != "203.0.113.9" || line["user"] != "u1" {
		t.Fatalf("log line: %s", lines[0])
	}
	if n := counter(t, reg, "formsservice_audit_events_total", map[string]string{"kind": "signin", "outcome": "failure"}); n != 10 {
		t.Fatalf("formsservice_audit_events_total{kind=signin,outcome=failure} = %v", n)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A full queue never blocks the request: the event stays in the log and is counted as unstored.
func TestRecorder_FullQueue_LogOnlyAndCounted(t *testing.T) {
	rdb := newRedis(t)
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	rec, err := audit.New(audit.Options{Store: audit.NewStore(rdb, nil), Log: audit.NewLog(&logs), Registerer: reg, Queue: 2})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 { // no Run: nothing drains the queue
		rec.Record(context.Background(), audit.Event{Kind: audit.Logout, Outcome: audit.Success})
	}
	if n := strings.Count(logs.String(), `"kind":"logout"`); n != 5 {
		t.Fatalf("%d log lines, want 5", n)
	}
	if n := counter(t, reg, "formsservice_audit_unstored_total", nil); n != 3 {
		t.Fatalf("formsservice_audit_unstored_total = %v, want 3", n)
	}
}

// counter reads one series of a counter family from the registry.
func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue series
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

func TestParseKindsAndTime(t *testing.T) {
	if ks, err := audit.ParseKinds("signin, token.*"); err != nil || len(ks) != 7 || ks[0] != audit.SignIn || ks[5] != audit.ClientCredentials || ks[6] != audit.UpstreamRecheck {
		t.Fatalf("ParseKinds: %v %v", ks, err)
	}
	if _, err := audit.ParseKinds("signin,nope"); err == nil || !strings.Contains(err.Error(), "signin.lockout") {
		t.Fatalf("an unknown kind: %v, want an error listing the kinds", err)
	}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2029-12-31T10:00:00Z": time.Date(2029, 12, 31, 10, 0, 0, 0, time.UTC),
		"2029-12-31":           time.Date(2029, 12, 31, 0, 0, 0, 0, time.UTC),
		"90m":                  now.Add(-90 * time.Minute),
		"7d":                   now.Add(-7 * 24 * time.Hour),
		"":                     {},
	} {
		if got, err := audit.ParseTime(in, now); err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"yesterday", "-5m", "3x"} {
		if _, err := audit.ParseTime(bad, now); err == nil {
			t.Errorf("ParseTime(%q) accepted", bad)
		}
	}
}

// The text form is one line per event, greppable, with hostile values quoted.
func TestWriteText_OneLinePerEventQuoted(t *testing.T) {
	var b bytes.Buffer
	err := audit.WriteText(&b, []audit.Event{{Time: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), Kind: audit.SignIn, Outcome: audit.Failure,
		Reason: "bad_password", User: "u1", Client: "app", Addr: "203.0.113.9", UserAgent: "curl/8 \"x\"", Detail: map[string]string{"grants": "2"}}})
	want := `2030-01-02T03:04:05Z  signin  failure  reason=bad_password  user=u1  client=app  addr=203.0.113.9  grants=2  ua="curl/8 \"x\""` + "\n"
	if err != nil || b.String() != want {
		t.Fatalf("text:\n%q\nwant\n%q", b.String(), want)
	}
}

// Record keeps the event for Run, after the request has returned: it must own its text. Fiber hands out
// strings that share the request's buffer, which the server reuses for the next request (a -race run of
// the admin API's tests caught the audit writer reading such a string while a new request was parsed
// into it). Here the caller's bytes and its Detail map change after Record; the stored event does not.
func TestRecorder_OwnsTheEventsText(t *testing.T) {
	rdb := newRedis(t)
	rec, err := audit.New(audit.Options{Store: audit.NewStore(rdb, nil), Log: audit.NewLog(&bytes.Buffer{}), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	buf := []byte("contact 203.0.113.7 curl/8.0 u-1")
	alias := func(from, to int) string { return unsafe.String(&buf[from], to-from) } // as fiber's zero-copy strings
	detail := map[string]string{"form": alias(0, 7)}
	rctx := audit.WithOrigin(context.Background(), netip.MustParseAddr("203.0.113.7"), alias(20, 28))
	rec.Record(rctx, audit.Event{Kind: audit.SignIn, Outcome: audit.Failure, User: alias(29, 32), Detail: detail})
	copy(buf, strings.Repeat("#", len(buf))) // the next request parsed into the same buffer
	detail["form"], detail["extra"] = "changed", "added"

	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- rec.Run(ctx) }()
	if err := rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, err := audit.NewStore(rdb, nil).Query(context.Background(), audit.Filter{})
	if err != nil || len(got) != 1 {
		t.Fatalf("stored: %d %v, want 1", len(got), err)
	}
	if e := got[0]; e.User != "u-1" || e.UserAgent != "curl/8.0" || len(e.Detail) != 1 || e.Detail["form"] != "contact" {
		t.Errorf("the stored event changed with the caller's memory: %+v", e)
	}
}
