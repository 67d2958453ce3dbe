package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/forms/internal/smtptest"
	"github.com/formsservice/formsservice/services/forms/notify"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Delivery timings for tests. Nothing is retried or taken over by real time: a test moves the delivery
// group's idle times on with agePending (and a worker's own clock with testClock), and waits for whole
// worker passes (waitForPasses) before saying that something did not happen. An attempt gets 10 s of
// real time, ample on a loaded machine (an attempt that times out after the receiver took the message
// sends it twice).
const (
	retryAfter       = time.Minute
	maxRetryInterval = 3 * time.Minute // between 2× and 4× retryAfter: both the doubling and the cap show
	// margin is how far from a boundary a test ages a message: more than the real time that can pass
	// between the aging and the worker's look at it, however slow the machine.
	margin = 10 * time.Second
	// testWorkerWait is how long a test's worker waits for work in one pass (see Worker.workerWait).
	testWorkerWait = 20 * time.Millisecond
)

func testDelivery(smtpAddr, webhookURL string) config.Delivery {
	d := config.Delivery{
		Timeout:          config.Duration(10 * time.Second),
		RetryAfter:       config.Duration(retryAfter),
		MaxRetryInterval: config.Duration(maxRetryInterval),
	}
	if smtpAddr != "" {
		d.SMTP = &config.SMTP{Addr: smtpAddr, From: "forms@example.net", To: []string{"team@example.net"}}
	}
	if webhookURL != "" {
		d.Webhook = &config.Webhook{URL: webhookURL}
	}
	return d
}

// agePendingScript adds ARGV[2] ms to the idle time of every pending message of group ARGV[1], keeping
// its consumer and its delivery count: XCLAIM to the consumer that holds it, with IDLE, and JUSTID, which
// leaves the count alone. It answers how many messages it aged.
var agePendingScript = redis.NewScript(`
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 10000)
for _, p in ipairs(pending) do
  redis.call('XCLAIM', KEYS[1], ARGV[1], p[2], 0, p[1], 'IDLE', p[3] + tonumber(ARGV[2]), 'JUSTID')
end
return #pending`)

// agePending stands in for d passing on Redis's clock for the delivery group: every pending message has
// been idle d longer, atomically (no worker sees half of it). Redis's clock cannot be injected; its idle
// times can be set. It fails the test when nothing is pending.
func agePending(t *testing.T, rdb redis.UniversalClient, d time.Duration) {
	t.Helper()
	n, err := agePendingScript.Run(t.Context(), rdb, []string{store.ContactStream}, store.DeliveryGroup, d.Milliseconds()).Int()
	if err != nil {
		t.Fatalf("aging the pending messages: %v", err)
	}
	if n == 0 {
		t.Fatal("agePending: nothing is pending")
	}
}

// advance moves time on by d for a worker and for Redis together: its clock, and the idle time of every
// pending message.
func advance(t *testing.T, rdb redis.UniversalClient, clk *testClock, d time.Duration) {
	t.Helper()
	agePending(t, rdb, d)
	clk.Advance(d)
}

// waitForPasses waits until each worker has completed a whole pass that started after the call: what
// stands in for "the worker had its chance" before a test says nothing happened.
func waitForPasses(t *testing.T, what string, workers ...*Worker) {
	t.Helper()
	for _, w := range workers {
		n0 := w.passes.Load()
		testwait.For(t, 10*time.Second, "a whole worker pass ("+w.consumer+") "+what, func() bool { return w.passes.Load() >= n0+2 })
	}
}

// heldBy is who holds the pending messages: consumer -> count.
func heldBy(t *testing.T, rdb redis.UniversalClient) map[string]int64 {
	t.Helper()
	p, err := rdb.XPending(t.Context(), store.ContactStream, store.DeliveryGroup).Result()
	if err != nil {
		t.Fatal(err)
	}
	return p.Consumers
}

func expectHeldBy(t *testing.T, rdb redis.UniversalClient, consumer string, n int64) {
	t.Helper()
	if got := heldBy(t, rdb); len(got) != 1 || got[consumer] != n {
		t.Fatalf("pending messages held by %v, want %d by %s", got, n, consumer)
	}
}

// hook is a webhook receiver that fails its first `fail` calls with 503.
type hook struct {
	*httptest.Server
	mu   sync.Mutex
	got  []notify.WebhookPayload
	fail atomic.Int32
	// every call's headers and body, failed ones included
	headers []http.Header
	bodies  [][]byte
}

func startHook(t *testing.T) *hook {
	h := &hook{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p notify.WebhookPayload
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &p)
		h.mu.Lock()
		h.headers, h.bodies = append(h.headers, r.Header.Clone()), append(h.bodies, body)
		h.mu.Unlock()
		if h.fail.Add(-1) >= 0 {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		h.mu.Lock()
		h.got = append(h.got, p)
		h.mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hook) delivered() []notify.WebhookPayload {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]notify.WebhookPayload(nil), h.got...)
}

// calls counts the calls, failed ones included.
func (h *hook) calls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.bodies)
}

// testWorker is a delivery worker of its own (another replica, or one that the test kills).
type testWorker struct {
	worker *Worker
	reg    *prometheus.Registry
	stop   func()
}

// startWorker runs a delivery worker named name on d; clk, when not nil, is its clock.
func startWorker(t *testing.T, rdb redis.UniversalClient, d config.Delivery, name string, clk *testClock) *testWorker {
	t.Helper()
	src := &formstest.Source{}
	cfg := formstest.Config()
	cfg.Forms.Delivery = d
	src.Set(t, cfg)
	var now func() time.Time
	if clk != nil {
		now = clk.Now
	}
	return runWorker(t, rdb, src, name, now)
}

// runWorker runs a delivery worker named name (default: New's) on src's configuration, until the test
// ends; now, when not nil, is its clock.
func runWorker(t *testing.T, rdb redis.UniversalClient, src config.Source, name string, now func() time.Time) *testWorker {
	t.Helper()
	reg := prometheus.NewRegistry()
	w, err := New(Options{Config: src, Redis: rdb, Registerer: reg, ConsumerName: name, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	w.workerWait = testWorkerWait
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return &testWorker{worker: w, reg: reg, stop: stop}
}

// attempts counts the worker's SMTP attempts.
func (w *testWorker) attempts() float64 {
	return testutil.ToFloat64(w.worker.m.deliveryAttempts.WithLabelValues("smtp"))
}

func pendingCount(t *testing.T, rdb redis.UniversalClient) int64 {
	t.Helper()
	p, err := rdb.XPending(t.Context(), store.ContactStream, store.DeliveryGroup).Result()
	if err != nil {
		t.Fatal(err)
	}
	return p.Count
}

func TestDelivery_ContactMessage_IsMailedAndPostedToWebhook(t *testing.T) {
	mailSrv := smtptest.Start(t, smtptest.Options{})
	wh := startHook(t)
	cfg := formstest.Config()
	cfg.Forms.Delivery = testDelivery(mailSrv.Addr, wh.URL)
	h := newHarness(t, harnessOpts{cfg: cfg}) // the harness's own worker delivers

	h.submit(store.ContactRecord{Name: "Ada", Email: "Ada@Example.com", Message: "Please call me back <soon> & thanks.", Topic: "support"})
	mails := mailSrv.Wait(t, 1, 5*time.Second)
	if !strings.Contains(mails[0].Data, "Reply-To: \"Ada\" <Ada@Example.com>") || !strings.Contains(mails[0].Data, "Please call me back <soon> & thanks.") {
		t.Fatalf("mail:\n%s", mails[0].Data)
	}
	testwait.For(t, 5*time.Second, "the webhook", func() bool { return len(wh.delivered()) == 1 })
	p := wh.delivered()[0]
	if p.Contact.Topic != "support" || !strings.Contains(p.Text, "&lt;soon&gt; &amp; thanks") {
		t.Fatalf("webhook payload %+v", p)
	}
	testwait.For(t, 2*time.Second, "the acknowledgement", func() bool { return pendingCount(t, h.rdb) == 0 })
	if h.counter("formsservice_forms_delivery_attempts_total", "channel", "smtp") != 1 ||
		h.counter("formsservice_forms_delivery_attempts_total", "channel", "webhook") != 1 {
		t.Fatal("attempts not counted")
	}
	// The lag is observed just after the acknowledgement reaches Redis, so it is waited for, not read at
	// once (CI under -race read it in between).
	testwait.For(t, 2*time.Second, "the delivery lag observed", func() bool {
		return h.counter("formsservice_forms_delivery_lag_seconds") == 1
	})
	// The message stays stored (for export) after delivery.
	if h.rdb.XLen(t.Context(), store.ContactStream).Val() != 1 {
		t.Fatal("message gone after delivery")
	}
}

// The retry schedule, exactly: a failed message is tried again once it has been idle RetryAfter, then
// twice that, then at most MaxRetryInterval; never before. The channel that took it (mail) is not sent
// to again.
func TestDelivery_FailingWebhook_IsRetriedWithBackoffWithoutResendingMail(t *testing.T) {
	mailSrv := smtptest.Start(t, smtptest.Options{})
	wh := startHook(t)
	wh.fail.Store(3)
	cfg := formstest.Config()
	cfg.Forms.Delivery = testDelivery(mailSrv.Addr, wh.URL)
	h := newHarness(t, harnessOpts{cfg: cfg})

	h.submit(validContact)
	// after failure n, the wait before attempt n+1: RetryAfter × 2^(n−1), capped at MaxRetryInterval
	for n, wait := range []time.Duration{retryAfter, 2 * retryAfter, maxRetryInterval} {
		calls := n + 1
		testwait.For(t, 5*time.Second, fmt.Sprintf("webhook call %d", calls), func() bool { return wh.calls() == calls })
		agePending(t, h.rdb, wait-margin)
		waitForPasses(t, "with the message idle just short of its backoff", h.worker)
		if got := wh.calls(); got != calls {
			t.Fatalf("attempt %d came before the message had been idle %s (%d calls)", calls+1, wait, got)
		}
		agePending(t, h.rdb, 2*margin)
		testwait.For(t, 5*time.Second, fmt.Sprintf("attempt %d once the message has been idle %s", calls+1, wait),
			func() bool { return wh.calls() == calls+1 })
	}
	testwait.For(t, 5*time.Second, "the webhook after three failures", func() bool { return len(wh.delivered()) == 1 })
	testwait.For(t, 2*time.Second, "the acknowledgement", func() bool { return pendingCount(t, h.rdb) == 0 })
	if n := len(mailSrv.Mails()); n != 1 {
		t.Fatalf("%d mails, want 1: a webhook retry must not resend the mail", n)
	}
	if n := h.counter("formsservice_forms_delivery_attempts_total", "channel", "smtp"); n != 1 {
		t.Fatalf("%v SMTP attempts, want 1", n)
	}
	if h.counter("formsservice_forms_delivery_failures_total", "channel", "webhook") != 3 {
		t.Fatal("failures not counted")
	}
}

func TestDelivery_SMTPTemporaryFailure_IsRetried(t *testing.T) {
	mailSrv := smtptest.Start(t, smtptest.Options{})
	mailSrv.FailNext(1)
	cfg := formstest.Config()
	cfg.Forms.Delivery = testDelivery(mailSrv.Addr, "")
	h := newHarness(t, harnessOpts{cfg: cfg})
	h.submit(validContact)
	testwait.For(t, 5*time.Second, "the refused transaction", func() bool { return mailSrv.Sessions() == 1 })
	agePending(t, h.rdb, retryAfter-margin)
	waitForPasses(t, "with the message idle just short of RetryAfter", h.worker)
	if n := mailSrv.Sessions(); n != 1 {
		t.Fatalf("%d SMTP transactions before RetryAfter, want 1", n)
	}
	agePending(t, h.rdb, 2*margin)
	mailSrv.Wait(t, 1, 5*time.Second)
	if mailSrv.Sessions() != 2 {
		t.Fatalf("%d SMTP transactions, want 2", mailSrv.Sessions())
	}
}

func TestDelivery_StoredWhileNoDeliveryConfigured_IsDeliveredOnceConfigured(t *testing.T) {
	h := newHarness(t, harnessOpts{}) // no delivery target: the worker idles
	h.submit(validContact)
	waitForPasses(t, "without a delivery target", h.worker)
	mailSrv := smtptest.Start(t, smtptest.Options{})
	cfg := formstest.Config()
	cfg.Forms.Delivery = testDelivery(mailSrv.Addr, "")
	h.src.Set(t, cfg) // a live reload
	mailSrv.Wait(t, 1, 5*time.Second)
}

func TestDelivery_ProcessDiedBetweenStoreAndDelivery_MessageIsDeliveredLater(t *testing.T) {
	// The web process stores and answers 201; no worker is running (the process died right after).
	h := newHarness(t, harnessOpts{})
	h.submit(validContact)

	mailSrv := smtptest.Start(t, smtptest.Options{})
	startWorker(t, h.rdb, testDelivery(mailSrv.Addr, ""), "replica-after-restart", nil)
	mailSrv.Wait(t, 1, 5*time.Second)
	testwait.For(t, 2*time.Second, "the acknowledgement", func() bool { return pendingCount(t, h.rdb) == 0 })
}

func TestDelivery_ConsumerDiedAfterReading_MessageIsTakenOverByAnotherReplica(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.submit(validContact)
	// A replica read the message and died before delivering: it sits in the pending list under its name.
	if err := store.EnsureDeliveryGroup(t.Context(), h.rdb); err != nil {
		t.Fatal(err)
	}
	got, err := h.rdb.XReadGroup(t.Context(), &redis.XReadGroupArgs{Group: store.DeliveryGroup, Consumer: "crashed-replica",
		Streams: []string{store.ContactStream, ">"}, Count: 10, Block: -1}).Result() // -1: no BLOCK (0 would wait forever)
	if err != nil || len(got[0].Messages) != 1 {
		t.Fatalf("reading as the doomed replica: %v %v", got, err)
	}

	mailSrv := smtptest.Start(t, smtptest.Options{})
	survivor := startWorker(t, h.rdb, testDelivery(mailSrv.Addr, ""), "survivor", nil)
	// Until the message has been idle RetryAfter, its consumer may still be sending it: it is not taken.
	waitForPasses(t, "with the message just read", survivor.worker)
	expectHeldBy(t, h.rdb, "crashed-replica", 1)
	agePending(t, h.rdb, retryAfter-margin)
	waitForPasses(t, "with the message idle just short of RetryAfter", survivor.worker)
	expectHeldBy(t, h.rdb, "crashed-replica", 1)
	if n := mailSrv.Sessions(); n != 0 {
		t.Fatalf("taken over and sent before RetryAfter (%d SMTP transactions)", n)
	}
	agePending(t, h.rdb, 2*margin)
	mailSrv.Wait(t, 1, 5*time.Second)
	testwait.For(t, 2*time.Second, "the acknowledgement", func() bool { return pendingCount(t, h.rdb) == 0 })
}

func TestDelivery_WorkerKilledMidDelivery_AnotherWorkerDelivers(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	mailSrv := smtptest.Start(t, smtptest.Options{})
	mailSrv.StallNext(1) // the first worker's SMTP transaction hangs
	d := testDelivery(mailSrv.Addr, "")
	first := startWorker(t, h.rdb, d, "doomed", nil)

	h.submit(validContact)
	testwait.For(t, 5*time.Second, "the first worker to be mid-delivery", func() bool { return mailSrv.Sessions() == 1 })
	first.stop() // killed mid-attempt: the message stays pending under its name, unacknowledged
	expectHeldBy(t, h.rdb, "doomed", 1)

	second := startWorker(t, h.rdb, d, "survivor", nil)
	agePending(t, h.rdb, retryAfter-margin)
	waitForPasses(t, "with the message idle just short of RetryAfter", second.worker)
	expectHeldBy(t, h.rdb, "doomed", 1)
	agePending(t, h.rdb, 2*margin)
	mailSrv.Wait(t, 1, 5*time.Second)
	testwait.For(t, 2*time.Second, "the acknowledgement", func() bool { return pendingCount(t, h.rdb) == 0 })
	if n := mailSrv.Sessions(); n != 2 {
		t.Fatalf("%d SMTP transactions, want 2 (the killed one and the survivor's)", n)
	}
}

func TestDelivery_TwoReplicas_DeliverEachMessageOnce(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	mailSrv := smtptest.Start(t, smtptest.Options{})
	a := startWorker(t, h.rdb, testDelivery(mailSrv.Addr, ""), "a", nil)
	b := startWorker(t, h.rdb, testDelivery(mailSrv.Addr, ""), "b", nil)
	for range 20 {
		h.submit(validContact)
	}
	mailSrv.Wait(t, 20, 10*time.Second)
	testwait.For(t, 2*time.Second, "the acknowledgements", func() bool { return pendingCount(t, h.rdb) == 0 })
	waitForPasses(t, "after the last acknowledgement", a.worker, b.worker) // nothing is sent again
	if n := len(mailSrv.Mails()); n != 20 {
		t.Fatalf("%d mails for 20 messages", n)
	}
	if n := a.attempts() + b.attempts(); n != 20 {
		t.Fatalf("%v attempts for 20 messages (a %v, b %v)", n, a.attempts(), b.attempts())
	}
}

// A worker that reads a batch from a slow relay holds every message of it until it is sent: another
// replica does not take the later ones over as abandoned (which would mail them twice), even though the
// batch takes several times RetryAfter. Once that worker is gone, the other replica does take over.
func TestDelivery_SlowRelayBatch_NotTakenOverWhileItsWorkerIsSending(t *testing.T) {
	h := newHarness(t, harnessOpts{}) // no delivery target: the messages wait in the stream
	const n = 5
	for range n {
		h.submit(validContact)
	}
	mailSrv := smtptest.Start(t, smtptest.Options{})
	mailSrv.Gate() // each transaction waits until the test lets it through
	d := testDelivery(mailSrv.Addr, "")
	d.Timeout = config.Duration(25 * time.Second) // within the 2 × Timeout ≤ RetryAfter rule
	const sending = 20 * time.Second              // how long each message takes the relay: the batch takes 100 s
	clk := &testClock{}
	reader := startWorker(t, h.rdb, d, "reader", clk)
	testwait.For(t, 5*time.Second, "the first worker to read the batch", func() bool {
		p, err := h.rdb.XPending(t.Context(), store.ContactStream, store.DeliveryGroup).Result() // NOGROUP until it starts
		return err == nil && p.Count == n
	})
	second := startWorker(t, h.rdb, d, "idle-replica", nil)

	for k := 1; k <= n; k++ {
		testwait.For(t, 5*time.Second, fmt.Sprintf("the reader to send message %d", k), func() bool {
			return mailSrv.Sessions() == k && mailSrv.Waiting() == 1
		})
		advance(t, h.rdb, clk, sending) // message k takes `sending` at the relay
		n0 := second.worker.passes.Load()
		testwait.For(t, 10*time.Second, "a whole pass of the idle replica", func() bool {
			return second.worker.passes.Load() >= n0+2 || second.attempts() > 0
		})
		if c := second.attempts(); c != 0 {
			t.Fatalf("while the reader sent message %d, the idle replica made %v attempts: %v", k, c, heldBy(t, h.rdb))
		}
		expectHeldBy(t, h.rdb, "reader", int64(n-k+1))
		if k < n {
			mailSrv.Admit(1)
		}
	}
	if got := len(mailSrv.Mails()); got != n-1 {
		t.Fatalf("%d mails, want %d", got, n-1)
	}

	// The reader dies while sending the last message; its hold ends, and after RetryAfter the other
	// replica takes the message over.
	reader.stop()
	mailSrv.Release() // the dead reader's transaction fails
	agePending(t, h.rdb, retryAfter-margin-sending)
	waitForPasses(t, "with the message idle just short of RetryAfter", second.worker)
	expectHeldBy(t, h.rdb, "reader", 1)
	agePending(t, h.rdb, 2*margin)
	mailSrv.Wait(t, n, 5*time.Second)
	testwait.For(t, 2*time.Second, "the acknowledgement", func() bool { return pendingCount(t, h.rdb) == 0 })
	if c := second.attempts(); c != 1 {
		t.Fatalf("the other replica made %v attempts, want 1", c)
	}
	if got := len(mailSrv.Mails()); got != n {
		t.Fatalf("%d mails for %d messages", got, n)
	}
}

func TestBackoff_DoublesUpToTheCap(t *testing.T) {
	d := config.Delivery{RetryAfter: config.Duration(30 * time.Second), MaxRetryInterval: config.Duration(15 * time.Minute)}
	want := []time.Duration{30 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 15 * time.Minute, 15 * time.Minute}
	for n, w := range want {
		if got := backoff(int64(n), d); got != w {
			t.Errorf("backoff(%d) = %s, want %s", n, got, w)
		}
	}
	if got := backoff(1000, d); got != 15*time.Minute {
		t.Errorf("backoff(1000) = %s", got)
	}
}
