package auditsink_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/auditsink"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/stdwebhooks"
)

const (
	secret      = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	otherSecret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
)

func newRedis(t *testing.T) *redis.Client {
	t.Helper()
	srv := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// clock is the workers' clock: the leases, the backoff and webhook-timestamp follow it.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now()} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// receiver is a SIEM's endpoint: it verifies each call's signature with the standard-webhooks library,
// answers as status says, and keeps each call's events once by webhook-id, as a receiver de-duplicates.
type receiver struct {
	srv      *httptest.Server
	verifier *standardwebhooks.Webhook

	mu      sync.Mutex
	calls   []string // the webhook-id of every signed call, retries included
	refused int      // calls whose signature did not verify
	seen    map[string]bool
	events  map[string][]audit.Event // per trail, in the order they were accepted
	status  func(call int) int       // the answer to the call-th signed call (1-based); nil: 204
	hold    chan struct{}            // when set, the next call is kept (and reported here) and never answered
}

func newReceiver(t *testing.T, secret string) *receiver {
	t.Helper()
	v, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{verifier: v, seen: map[string]bool{}, events: map[string][]audit.Event{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve)) // 127.0.0.1, port 0
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	if err := r.verifier.Verify(body, req.Header); err != nil {
		r.mu.Lock()
		r.refused++
		r.mu.Unlock()
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	id := req.Header.Get(standardwebhooks.HeaderWebhookID)
	r.mu.Lock()
	r.calls = append(r.calls, id)
	n := len(r.calls)
	status := http.StatusNoContent
	if r.status != nil {
		status = r.status(n)
	}
	if status/100 == 2 && !r.seen[id] {
		r.seen[id] = true
		var p auditsink.Payload
		if err := json.Unmarshal(body, &p); err != nil || p.Type != auditsink.PayloadType {
			r.mu.Unlock()
			http.Error(w, "not an audit batch", http.StatusBadRequest)
			return
		}
		r.events[p.Data.Trail] = append(r.events[p.Data.Trail], p.Data.Events...)
	}
	hold := r.hold
	r.hold = nil
	r.mu.Unlock()
	if hold != nil { // accepted, but the answer never reaches the sender
		close(hold)
		<-req.Context().Done()
		return
	}
	w.WriteHeader(status)
}

func (r *receiver) snapshot() (calls []string, refused int, events map[string][]audit.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	events = map[string][]audit.Event{}
	for k, v := range r.events {
		events[k] = slices.Clone(v)
	}
	return slices.Clone(r.calls), r.refused, events
}

type fixture struct {
	rdb   redis.UniversalClient
	store *audit.Store
	clock *clock
	recv  *receiver
}

func newFixture(t *testing.T, receiverSecret string, limits audit.Limits) *fixture {
	return newFixtureOn(t, newRedis(t), receiverSecret, limits)
}

func newFixtureOn(t *testing.T, rdb redis.UniversalClient, receiverSecret string, limits audit.Limits) *fixture {
	store := audit.NewStore(rdb, func() audit.Limits { return limits }).Chained(audit.ChainKeys{Current: bytes.Repeat([]byte{7}, 32)})
	return &fixture{rdb: rdb, store: store, clock: newClock(), recv: newReceiver(t, receiverSecret)}
}

// worker starts a replica's worker signing with secrets, its metrics in reg and its log in logs.
func (f *fixture) worker(t *testing.T, name string, batch int, reg *prometheus.Registry, logs io.Writer, secrets ...string) *auditsink.Worker {
	t.Helper()
	signer, err := stdwebhooks.NewSigner(secrets...)
	if err != nil {
		t.Fatal(err)
	}
	if logs == nil {
		logs = io.Discard
	}
	w, err := auditsink.New(auditsink.Options{Redis: f.rdb, URL: f.recv.srv.URL + "/audit?token=s3cret", Signer: signer, BatchSize: batch,
		Timeout: 5 * time.Second, Lease: 30 * time.Second, Now: f.clock.Now, Name: name, Registerer: reg,
		Log: slog.New(slog.NewJSONHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// record stores n security events (sign-ins) and, every third, an attempt (a wrong password), each
// numbered in detail n, through the recorder's synchronous path.
func (f *fixture) record(t *testing.T, from, n int) {
	t.Helper()
	rec, err := audit.New(audit.Options{Store: f.store})
	if err != nil {
		t.Fatal(err)
	}
	for i := from; i < from+n; i++ {
		e := audit.Event{Kind: audit.SignIn, Outcome: audit.Success, User: "u" + strconv.Itoa(i%7), Detail: map[string]string{"n": strconv.Itoa(i)}}
		if i%3 == 2 {
			e.Outcome, e.Reason = audit.Failure, "bad_password"
		}
		if err := rec.Write(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
}

// streamIDs is every entry ID of a stream, oldest first.
func streamIDs(t *testing.T, rdb redis.UniversalClient, key string) []string {
	t.Helper()
	msgs, err := rdb.XRange(context.Background(), key, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range msgs {
		ids = append(ids, m.ID)
	}
	return ids
}

func ids(events []audit.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.ID)
	}
	return out
}

// drain runs w until it has nothing left to send (at most rounds batches).
func drain(t *testing.T, w *auditsink.Worker, rounds int) {
	t.Helper()
	for range rounds {
		sent, err := w.RunOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !sent {
			return
		}
	}
	t.Fatalf("still sending after %d rounds", rounds)
}

func metric(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					if m.GetCounter() != nil {
						return m.GetCounter().GetValue()
					}
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no series %s{%s=%q}", name, label, value)
	return 0
}

// (1) Every stored event reaches the receiver once, in the order of its stream, in signed batches of
// at most BatchSize whose webhook-id is the trail and the stream ID of the batch's last event.
func TestWorker_DeliversEveryEventOnceInStreamOrder(t *testing.T) {
	f := newFixture(t, secret, audit.Limits{})
	reg := prometheus.NewRegistry()
	w := f.worker(t, "a", 40, reg, nil, secret)
	f.record(t, 0, 150) // 100 security events, 50 attempts
	drain(t, w, 20)
	f.record(t, 150, 3) // and what comes later
	drain(t, w, 20)

	calls, refused, got := f.recv.snapshot()
	security, attempts := streamIDs(t, f.rdb, audit.StreamKey), streamIDs(t, f.rdb, audit.AttemptsKey)
	if len(security) != 102 || len(attempts) != 51 {
		t.Fatalf("stored %d security events and %d attempts, want 102 and 51", len(security), len(attempts))
	}
	if !slices.Equal(ids(got["security"]), security) || !slices.Equal(ids(got["attempts"]), attempts) {
		t.Fatalf("delivered security %v\nattempts %v\nwant the streams %v\n%v", ids(got["security"]), ids(got["attempts"]), security, attempts)
	}
	// 102 = 40+40+22 and 3 later: 3+1 calls; 51 = 40+10 and 1 later: 2+1 calls.
	if refused != 0 || len(calls) != 7 || !slices.Contains(calls, "security_"+security[39]) || !slices.Contains(calls, "attempts_"+attempts[len(attempts)-1]) {
		t.Errorf("calls %v (refused %d), want 7 named by the trail and the batch's last stream ID", calls, refused)
	}
	if e := got["attempts"][0]; e.Kind != audit.SignIn || e.Outcome != audit.Failure || e.Reason != "bad_password" || e.Detail["n"] != "2" || e.Time.IsZero() {
		t.Errorf("first attempt as delivered: %+v", e)
	}
	if d := metric(t, reg, "formsservice_auth_audit_sink_total", "result", "delivered"); d != 153 {
		t.Errorf("delivered metric %v, want 153", d)
	}
	if l := metric(t, reg, "formsservice_auth_audit_sink_lag", "trail", "security"); l != 0 {
		t.Errorf("lag %v after delivering everything", l)
	}
}

// (2) A receiver that answers 500 gets the same batch again after 1s, 2s, 4s, … on the worker's clock,
// under the same webhook-id, and nothing is lost; another replica keeps to the backoff too.
func TestWorker_RetriesWithBackoffOnTheClock(t *testing.T) {
	f := newFixture(t, secret, audit.Limits{})
	f.recv.status = func(call int) int {
		if call <= 4 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	}
	reg := prometheus.NewRegistry()
	var logs bytes.Buffer
	a := f.worker(t, "a", 100, reg, &logs, secret)
	b := f.worker(t, "b", 100, prometheus.NewRegistry(), nil, secret)
	f.record(t, 0, 5) // security events n=0,1,3,4 and one attempt: two batches, the attempt's second
	ctx := context.Background()
	calls := func() int { c, _, _ := f.recv.snapshot(); return len(c) }
	step := func(w *auditsink.Worker, want int) {
		t.Helper()
		if _, err := w.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if got := calls(); got != want {
			t.Fatalf("at %s: %d calls, want %d", f.clock.Now().Format(time.StampMilli), got, want)
		}
	}
	step(a, 2) // both trails' first attempts fail: the security one (call 1), the attempts one (call 2)
	step(a, 2) // nothing before the backoff ends
	step(b, 2) // nor by another replica
	f.clock.Advance(999 * time.Millisecond)
	step(a, 2)
	f.clock.Advance(time.Millisecond)
	step(a, 4) // 1s: calls 3 and 4 fail again; the next wait is 2s
	f.clock.Advance(1999 * time.Millisecond)
	step(a, 4)
	f.clock.Advance(time.Millisecond)
	step(a, 6) // 2s later: delivered
	drain(t, a, 5)

	c, _, got := f.recv.snapshot()
	if len(c) != 6 || c[0] != c[2] || c[2] != c[4] || c[1] != c[3] || c[3] != c[5] || c[0] == c[1] {
		t.Errorf("webhook-ids %v: want each batch under one ID on every attempt", c)
	}
	if len(got["security"]) != 4 || len(got["attempts"]) != 1 {
		t.Errorf("delivered %d security events and %d attempts, want 4 and 1", len(got["security"]), len(got["attempts"]))
	}
	if d, fl := metric(t, reg, "formsservice_auth_audit_sink_total", "result", "delivered"), metric(t, reg, "formsservice_auth_audit_sink_total", "result", "failed"); d != 5 || fl != 10 {
		t.Errorf("delivered %v and failed %v, want 5 and 10 (two failed attempts of each event)", d, fl)
	}
	if !strings.Contains(logs.String(), "answered 500") || strings.Contains(logs.String(), "s3cret") {
		t.Errorf("the log says %q: want the refusal, never the URL's token", logs.String())
	}
}

// (3) Two replicas: the lease lets one deliver, so no event is sent twice; a replica killed in the
// middle of a call (the receiver had the batch, its answer never came) leaves its batch to the other
// once the lease ends, which sends the same batch under the same webhook-id: de-duplicated by it, every
// event arrives once, in order.
func TestWorker_TwoReplicas_EachEventOnce_KilledReplicaTakenOver(t *testing.T) {
	f := newFixture(t, secret, audit.Limits{})
	a := f.worker(t, "a", 25, prometheus.NewRegistry(), nil, secret)
	b := f.worker(t, "b", 25, prometheus.NewRegistry(), nil, secret)
	f.record(t, 0, 90) // 60 security events, 30 attempts

	// Both replicas at work at once until everything is there: no webhook-id twice.
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, w := range []*auditsink.Worker{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, _ = w.RunOnce(ctx)
			}
		}()
	}
	testwait.For(t, 10*time.Second, "90 events delivered", func() bool {
		_, _, got := f.recv.snapshot()
		return len(got["security"])+len(got["attempts"]) == 90
	})
	stop()
	wg.Wait()
	calls, _, _ := f.recv.snapshot()
	for i, id := range calls {
		if slices.Contains(calls[:i], id) {
			t.Fatalf("webhook-id %s sent twice by two replicas: %v", id, calls)
		}
	}

	// Replica a is killed in the middle of a call (the leases of the first part have ended: a takes one).
	f.clock.Advance(30 * time.Second)
	f.record(t, 90, 30)
	held := make(chan struct{})
	f.recv.mu.Lock()
	f.recv.hold = held
	f.recv.mu.Unlock()
	actx, kill := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _, _ = a.RunOnce(actx) }()
	<-held // the receiver has the batch
	kill()
	<-done
	before, _, _ := f.recv.snapshot()
	killed := before[len(before)-1]
	if _, err := b.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after, _, _ := f.recv.snapshot(); countOf(after, killed) != 1 {
		t.Fatalf("replica b sent a's batch %s while a's lease lasted: %v", killed, after)
	}
	f.clock.Advance(30 * time.Second) // a's lease ends
	drain(t, b, 20)

	calls, _, got := f.recv.snapshot()
	if n := countOf(calls, killed); n != 2 {
		t.Errorf("the killed replica's batch %s was sent %d times, want twice (by a, then by b under the same ID)", killed, n)
	}
	if s, at := streamIDs(t, f.rdb, audit.StreamKey), streamIDs(t, f.rdb, audit.AttemptsKey); !slices.Equal(ids(got["security"]), s) || !slices.Equal(ids(got["attempts"]), at) {
		t.Errorf("after de-duplication: security %d events, attempts %d, want the streams' %d and %d in order", len(got["security"]), len(got["attempts"]), len(s), len(at))
	}
}

func countOf(ss []string, s string) int {
	n := 0
	for _, v := range ss {
		if v == s {
			n++
		}
	}
	return n
}

// (4) The signatures are real: a receiver with another secret refuses every call, and nothing is
// counted delivered; during a rotation a call carries both signatures, and a receiver that knows only
// the old secret accepts it.
func TestWorker_Signatures_WrongSecretRefused_RotationCarriesBoth(t *testing.T) {
	f := newFixture(t, otherSecret, audit.Limits{})
	reg := prometheus.NewRegistry()
	w := f.worker(t, "a", 100, reg, nil, secret)
	f.record(t, 0, 2) // security events only
	if _, err := w.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	calls, refused, got := f.recv.snapshot()
	if refused != 1 || len(calls) != 0 || len(got["security"]) != 0 {
		t.Fatalf("a receiver with another secret: refused %d, accepted %v", refused, calls)
	}
	if d, fl := metric(t, reg, "formsservice_auth_audit_sink_total", "result", "delivered"), metric(t, reg, "formsservice_auth_audit_sink_total", "result", "failed"); d != 0 || fl != 2 {
		t.Errorf("delivered %v and failed %v, want 0 and 2", d, fl)
	}

	rotating := f.worker(t, "b", 100, prometheus.NewRegistry(), nil, secret, otherSecret) // new, then the previous
	f.clock.Advance(31 * time.Second)                                                     // past a's backoff and lease
	drain(t, rotating, 5)
	if calls, _, got := f.recv.snapshot(); len(calls) != 1 || len(got["security"]) != 2 {
		t.Errorf("signed with both secrets: %v accepted, %d events", calls, len(got["security"]))
	}
}

// (5) Events trimmed from Redis before the sink delivered them (a receiver down longer than the
// trail's bounds) are counted and logged as lost, not skipped in silence; a batch in flight that is
// trimmed whole counts too, and delivery goes on with what is kept.
func TestWorker_TrimmedBeforeDelivery_CountedLost(t *testing.T) {
	f := newFixture(t, secret, audit.Limits{MaxEntries: 5})
	down := false
	f.recv.status = func(int) int {
		if down {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	}
	reg := prometheus.NewRegistry()
	var logs bytes.Buffer
	w := f.worker(t, "a", 100, reg, &logs, secret)
	appendN := func(n int) {
		t.Helper()
		for range n {
			if err := f.store.Append(context.Background(), audit.Event{Kind: audit.UserCreated, Outcome: audit.Success, User: "u", Actor: audit.ActorCLI}); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendN(2)
	drain(t, w, 5) // 2 delivered
	appendN(10)    // 12 received, 5 kept: 5 of them were never sent
	drain(t, w, 5)
	if l, d := metric(t, reg, "formsservice_auth_audit_sink_total", "result", "lost"), metric(t, reg, "formsservice_auth_audit_sink_total", "result", "delivered"); l != 5 || d != 7 {
		t.Fatalf("lost %v and delivered %v, want 5 and 7", l, d)
	}
	down = true
	appendN(3) // a batch of 3 fails …
	if _, err := w.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	appendN(10) // … and is trimmed with 5 more before the retry
	down = false
	f.clock.Advance(time.Second)
	drain(t, w, 5)
	if l, d := metric(t, reg, "formsservice_auth_audit_sink_total", "result", "lost"), metric(t, reg, "formsservice_auth_audit_sink_total", "result", "delivered"); l != 13 || d != 12 {
		t.Errorf("lost %v and delivered %v, want 13 and 12 (25 received)", l, d)
	}
	_, _, got := f.recv.snapshot()
	if kept := streamIDs(t, f.rdb, audit.StreamKey); !slices.Equal(ids(got["security"][7:]), kept) {
		t.Errorf("after the loss the sink delivered %v, want what is kept %v", ids(got["security"][7:]), kept)
	}
	if !strings.Contains(logs.String(), `"lost":5`) || !strings.Contains(logs.String(), `"lost":8`) {
		t.Errorf("the log does not name the losses: %s", logs.String())
	}
}

// Run delivers on its own and, when it stops, gives its lease up: another replica takes over at once.
func TestWorker_Run_DeliversAndReleasesItsLease(t *testing.T) {
	f := newFixture(t, secret, audit.Limits{})
	signer, _ := stdwebhooks.NewSigner(secret)
	a, err := auditsink.New(auditsink.Options{Redis: f.rdb, URL: f.recv.srv.URL, Signer: signer, Poll: 5 * time.Millisecond, Now: f.clock.Now, Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- a.Run(ctx) }()
	f.record(t, 0, 3)
	testwait.For(t, 10*time.Second, "3 events delivered by Run", func() bool {
		_, _, got := f.recv.snapshot()
		return len(got["security"])+len(got["attempts"]) == 3
	})
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	b := f.worker(t, "b", 100, prometheus.NewRegistry(), nil, secret)
	f.record(t, 3, 1)
	drain(t, b, 5) // on the same clock: a's lease would still last had a not given it up
	if _, _, got := f.recv.snapshot(); len(got["security"]) != 3 {
		t.Errorf("after a stopped, b delivered nothing: %d security events", len(got["security"]))
	}
}

// The sink's secrets are read from their files at start-up; a missing file or one that is not a
// whsec_ secret stops the service with the key and the file named, never the content.
func TestFromConfig_ReadsTheSecretFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, prev, bad := write("new", secret+"\n"), write("old", otherSecret), write("bad", "whsec_tooShortButSecret")
	o, err := auditsink.FromConfig(config.AuditWebhook{URL: "https://siem.example/in", SecretFile: good, PreviousSecretFile: prev, BatchSize: 7, Timeout: config.Duration(time.Second)})
	if err != nil || !o.Signer.Signs() || o.BatchSize != 7 || o.Timeout != time.Second || o.URL != "https://siem.example/in" {
		t.Fatalf("FromConfig: %+v, %v", o, err)
	}
	if _, err := auditsink.FromConfig(config.AuditWebhook{URL: "https://siem.example/in", SecretFile: dir + "/missing"}); err == nil || !strings.Contains(err.Error(), "auth.audit.webhook.secretFile") {
		t.Errorf("a missing file: %v", err)
	}
	_, err = auditsink.FromConfig(config.AuditWebhook{URL: "https://siem.example/in", SecretFile: good, PreviousSecretFile: bad})
	if err == nil || !strings.Contains(err.Error(), "auth.audit.webhook.previousSecretFile") || strings.Contains(err.Error(), "tooShortButSecret") {
		t.Errorf("a malformed secret: %v", err)
	}
}

// Each step is one script on one node: the state hash's tag is its stream's key, so it lives in the
// stream's slot, and the sink works on a real 3-master Redis Cluster.
func TestWorker_OnRedisCluster(t *testing.T) {
	cluster := testredis.StartCluster(t, 3, 0)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
	t.Cleanup(func() { rdb.Close() })
	f := newFixtureOn(t, rdb, secret, audit.Limits{MaxEntries: 100})
	w := f.worker(t, "a", 10, prometheus.NewRegistry(), nil, secret)
	f.record(t, 0, 30)
	drain(t, w, 10)
	_, _, got := f.recv.snapshot()
	if !slices.Equal(ids(got["security"]), streamIDs(t, rdb, audit.StreamKey)) || !slices.Equal(ids(got["attempts"]), streamIDs(t, rdb, audit.AttemptsKey)) {
		t.Errorf("on the cluster: delivered %d security events and %d attempts, want 20 and 10", len(got["security"]), len(got["attempts"]))
	}
}

// A redirect is not followed (it would send the signed events elsewhere): the call counts as refused
// and the batch waits for the receiver's address to be right.
func TestWorker_RedirectNotFollowed(t *testing.T) {
	f := newFixture(t, secret, audit.Limits{})
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
	t.Cleanup(other.Close)
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirecting.Close)
	signer, _ := stdwebhooks.NewSigner(secret)
	reg := prometheus.NewRegistry()
	w, err := auditsink.New(auditsink.Options{Redis: f.rdb, URL: redirecting.URL, Signer: signer, Now: f.clock.Now, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	f.record(t, 0, 1)
	if _, err := w.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if elsewhere.Load() != 0 || metric(t, reg, "formsservice_auth_audit_sink_total", "result", "failed") != 1 || metric(t, reg, "formsservice_auth_audit_sink_total", "result", "delivered") != 0 {
		t.Errorf("a redirect: %d calls to its target, failed %v", elsewhere.Load(), metric(t, reg, "formsservice_auth_audit_sink_total", "result", "failed"))
	}
}
