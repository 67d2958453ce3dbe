package forms

import (
	"context"
	"encoding/json"
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

	"github.com/formsservice/formsservice/services/forms/internal/smtptest"
	"github.com/formsservice/formsservice/services/forms/notify"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Short delivery timings for tests: an attempt gets 500 ms (room for a loaded CI machine: an attempt
// that times out after the receiver took the message sends it twice), a failed or abandoned message is
// retried after 1 s, then 2 s.
func fastDelivery(smtpAddr, webhookURL string) config.Delivery {
	d := config.Delivery{
		Timeout:          config.Duration(500 * time.Millisecond),
		RetryAfter:       config.Duration(time.Second),
		MaxRetryInterval: config.Duration(2 * time.Second),
	}
	if smtpAddr != "" {
		d.SMTP = &config.SMTP{Addr: smtpAddr, From: "forms@example.net", To: []string{"team@example.net"}}
	}
	if webhookURL != "" {
		d.Webhook = &config.Webhook{URL: webhookURL}
	}
	return d
}

// hook is a webhook receiver that fails its first `fail` calls with 500.
type hook struct {
	*httptest.Server
	mu    sync.Mutex
	calls []time.Time
	got   []notify.WebhookPayload
	fail  atomic.Int32
}

func startHook(t *testing.T) *hook {
	h := &hook{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p notify.WebhookPayload
		_ = json.NewDecoder(r.Body).Decode(&p)
		h.mu.Lock()
		h.calls = append(h.calls, time.Now())
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

func (h *hook) callTimes() []time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Time(nil), h.calls...)
}

// worker is a delivery worker of its own (another replica, or one that the test kills).
type testWorker struct {
	svc  *Service
	reg  *prometheus.Registry
	stop func()
}

func startWorker(t *testing.T, rdb redis.UniversalClient, d config.Delivery, name string) *testWorker {
	t.Helper()
	src := &liveSource{}
	cfg := testConfig()
	cfg.Forms.Delivery = d
	src.set(t, cfg)
	reg := prometheus.NewRegistry()
	svc, err := New(Options{Config: src, Redis: rdb, Registerer: reg, ConsumerName: name})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = svc.Run(ctx); close(done) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return &testWorker{svc: svc, reg: reg, stop: stop}
}

func pendingCount(t *testing.T, rdb redis.UniversalClient) int64 {
	t.Helper()
	p, err := rdb.XPending(t.Context(), contactStream, deliveryGroup).Result()
	if err != nil {
		t.Fatal(err)
	}
	return p.Count
}

func TestDelivery_ContactMessage_IsMailedAndPostedToWebhook(t *testing.T) {
	mailSrv := smtptest.Start(t, smtptest.Options{})
	wh := startHook(t)
	cfg := testConfig()
	cfg.Forms.Delivery = fastDelivery(mailSrv.Addr, wh.URL)
	h := newHarness(t, harnessOpts{cfg: cfg}) // the app's own worker delivers

	h.post("/contact", `{"name":"Ada","email":"Ada@Example.com","message":"Please call me back <soon> & thanks.","topic":"support"}`).
		expect(t, 201, "created")
	mails := mailSrv.Wait(t, 1, 5*time.Second)
	if !strings.Contains(mails[0].Data, "Reply-To: \"Ada\" <Ada@Example.com>") || !strings.Contains(mails[0].Data, "Please call me back <soon> & thanks.") {
		t.Fatalf("mail:\n%s", mails[0].Data)
	}
	waitFor(t, 5*time.Second, "the webhook", func() bool { return len(wh.delivered()) == 1 })
	p := wh.delivered()[0]
	if p.Contact.Topic != "support" || !strings.Contains(p.Text, "&lt;soon&gt; &amp; thanks") {
		t.Fatalf("webhook payload %+v", p)
	}
	waitFor(t, 2*time.Second, "the acknowledgement", func() bool { return pendingCount(t, h.rdb) == 0 })
	if h.counter("formsservice_forms_delivery_attempts_total", "channel", "smtp") != 1 ||
		h.counter("formsservice_forms_delivery_attempts_total", "channel", "webhook") != 1 {
		t.Fatal("attempts not counted")
	}
	if h.counter("formsservice_forms_delivery_lag_seconds") != 1 {
		t.Fatal("delivery lag not observed")
	}
	// The message stays stored (for export) after delivery.
	if h.rdb.XLen(t.Context(), contactStream).Val() != 1 {
		t.Fatal("message gone after delivery")
	}
}

func TestDelivery_FailingWebhook_IsRetriedWithBackoffWithoutResendingMail(t *testing.T) {
	mailSrv := smtptest.Start(t, smtptest.Options{})
	wh := startHook(t)
	wh.fail.Store(2)
	cfg := testConfig()
	cfg.Forms.Delivery = fastDelivery(mailSrv.Addr, wh.URL)
	h := newHarness(t, harnessOpts{cfg: cfg})

	h.post("/contact", validContact).expect(t, 201, "created")
	waitFor(t, 10*time.Second, "the webhook after two failures", func() bool { return len(wh.delivered()) == 1 })
	calls := wh.callTimes()
	if len(calls) != 3 {
		t.Fatalf("%d webhook calls, want 3", len(calls))
	}
	// Backoff: the first retry after ~RetryAfter (1 s), the second after twice that.
	if d := calls[1].Sub(calls[0]); d < 950*time.Millisecond {
		t.Errorf("first retry after %s, want >= 1s", d)
	}
	if d := calls[2].Sub(calls[1]); d < 1950*time.Millisecond {
		t.Errorf("second retry after %s, want >= 2s", d)
	}
	waitFor(t, 2*time.Second, "the acknowledgement", func() bool { return pendingCount(t, h.rdb) == 0 })
	if n := len(mailSrv.Mails()); n != 1 {
		t.Fatalf("%d mails, want 1: a webhook retry must not resend the mail", n)
	}
	if h.counter("formsservice_forms_delivery_failures_total", "channel", "webhook") != 2 {
		t.Fatal("failures not counted")
	}
}

func TestDelivery_SMTPTemporaryFailure_IsRetried(t *testing.T) {
	mailSrv := smtptest.Start(t, smtptest.Options{})
	mailSrv.FailNext(1)
	cfg := testConfig()
	cfg.Forms.Delivery = fastDelivery(mailSrv.Addr, "")
	h := newHarness(t, harnessOpts{cfg: cfg})
	h.post("/contact", validContact).expect(t, 201, "created")
	mailSrv.Wait(t, 1, 5*time.Second)
	if mailSrv.Sessions() != 2 {
		t.Fatalf("%d SMTP transactions, want 2", mailSrv.Sessions())
	}
}

func TestDelivery_StoredWhileNoDeliveryConfigured_IsDeliveredOnceConfigured(t *testing.T) {
	h := newHarness(t, harnessOpts{}) // no delivery target: the worker idles
	h.post("/contact", validContact).expect(t, 201, "created")
	time.Sleep(300 * time.Millisecond)
	mailSrv := smtptest.Start(t, smtptest.Options{})
	cfg := testConfig()
	cfg.Forms.Delivery = fastDelivery(mailSrv.Addr, "")
	h.src.set(t, cfg) // a live reload
	mailSrv.Wait(t, 1, 5*time.Second)
}

func TestDelivery_ProcessDiedBetweenStoreAndDelivery_MessageIsDeliveredLater(t *testing.T) {
	// The web process stores and answers 201; no worker is running (the process died right after).
	h := newHarness(t, harnessOpts{})
	h.post("/contact", validContact).expect(t, 201, "created")

	mailSrv := smtptest.Start(t, smtptest.Options{})
	startWorker(t, h.rdb, fastDelivery(mailSrv.Addr, ""), "replica-after-restart")
	mailSrv.Wait(t, 1, 5*time.Second)
	waitFor(t, 2*time.Second, "the acknowledgement", func() bool { return pendingCount(t, h.rdb) == 0 })
}

func TestDelivery_ConsumerDiedAfterReading_MessageIsTakenOverByAnotherReplica(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.post("/contact", validContact).expect(t, 201, "created")
	// A replica read the message and died before delivering: it sits in the pending list under its name.
	if err := ensureGroup(t.Context(), h.rdb); err != nil {
		t.Fatal(err)
	}
	got, err := h.rdb.XReadGroup(t.Context(), &redis.XReadGroupArgs{Group: deliveryGroup, Consumer: "crashed-replica",
		Streams: []string{contactStream, ">"}, Count: 10}).Result()
	if err != nil || len(got[0].Messages) != 1 {
		t.Fatalf("reading as the doomed replica: %v %v", got, err)
	}

	mailSrv := smtptest.Start(t, smtptest.Options{})
	start := time.Now()
	startWorker(t, h.rdb, fastDelivery(mailSrv.Addr, ""), "survivor")
	mailSrv.Wait(t, 1, 5*time.Second)
	if time.Since(start) > 4*time.Second {
		t.Errorf("took %s", time.Since(start))
	}
	waitFor(t, 2*time.Second, "the acknowledgement", func() bool { return pendingCount(t, h.rdb) == 0 })
}

func TestDelivery_WorkerKilledMidDelivery_AnotherWorkerDelivers(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	mailSrv := smtptest.Start(t, smtptest.Options{})
	mailSrv.StallNext(1) // the first worker's SMTP transaction hangs
	d := fastDelivery(mailSrv.Addr, "")
	d.Timeout = config.Duration(5 * time.Second) // it would wait long...
	d.RetryAfter = config.Duration(10 * time.Second)
	first := startWorker(t, h.rdb, d, "doomed")

	h.post("/contact", validContact).expect(t, 201, "created")
	waitFor(t, 5*time.Second, "the first worker to be mid-delivery", func() bool { return mailSrv.Sessions() == 1 })
	first.stop() // ...but is killed mid-attempt: the message stays pending under its name, unacknowledged
	if pendingCount(t, h.rdb) != 1 {
		t.Fatal("the killed worker's message is not pending")
	}

	second := startWorker(t, h.rdb, fastDelivery(mailSrv.Addr, ""), "survivor")
	mailSrv.Wait(t, 1, 5*time.Second)
	waitFor(t, 2*time.Second, "the acknowledgement", func() bool { return pendingCount(t, h.rdb) == 0 })
	_ = second
}

func TestDelivery_TwoReplicas_DeliverEachMessageOnce(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	mailSrv := smtptest.Start(t, smtptest.Options{})
	startWorker(t, h.rdb, fastDelivery(mailSrv.Addr, ""), "a")
	startWorker(t, h.rdb, fastDelivery(mailSrv.Addr, ""), "b")
	for range 20 {
		h.post("/contact", validContact).expect(t, 201, "created")
	}
	mailSrv.Wait(t, 20, 10*time.Second)
	waitFor(t, 2*time.Second, "the acknowledgements", func() bool { return pendingCount(t, h.rdb) == 0 })
	time.Sleep(1200 * time.Millisecond) // longer than RetryAfter: nothing is sent again
	if n := len(mailSrv.Mails()); n != 20 {
		t.Fatalf("%d mails for 20 messages", n)
	}
}

// A worker that reads a batch from a slow relay holds every message of it until it is sent: another
// replica does not take the later ones over as abandoned (which would mail them twice), even though the
// batch takes several times RetryAfter.
func TestDelivery_SlowRelayBatch_NotTakenOverWhileItsWorkerIsSending(t *testing.T) {
	h := newHarness(t, harnessOpts{}) // no worker: the messages wait in the stream
	const n = 10
	for range n {
		h.post("/contact", validContact).expect(t, 201, "created")
	}
	mailSrv := smtptest.Start(t, smtptest.Options{Delay: 300 * time.Millisecond})
	d := fastDelivery(mailSrv.Addr, "")
	d.Timeout = config.Duration(time.Second)
	d.RetryAfter = config.Duration(2 * time.Second) // the batch takes n × 300ms = 3s
	startWorker(t, h.rdb, d, "reader")
	waitFor(t, 5*time.Second, "the first worker to read the batch", func() bool {
		p, err := h.rdb.XPending(t.Context(), contactStream, deliveryGroup).Result() // NOGROUP until it starts
		return err == nil && p.Count == n
	})
	second := startWorker(t, h.rdb, d, "idle-replica")

	mailSrv.Wait(t, n, 15*time.Second)
	waitFor(t, 5*time.Second, "the acknowledgements", func() bool { return pendingCount(t, h.rdb) == 0 })
	time.Sleep(2500 * time.Millisecond) // past RetryAfter: a wrongly taken-over message would be sent now
	if got := len(mailSrv.Mails()); got != n {
		t.Fatalf("%d mails for %d messages: a message was taken over while its worker was sending it", got, n)
	}
	if c := testutil.ToFloat64(second.svc.m.deliveryAttempts.WithLabelValues("smtp")); c != 0 {
		t.Fatalf("the idle replica made %v attempts", c)
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
