package backchannel

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ory/fosite/token/jwt"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/formsservice/formsservice/services/auth/keys"
)

// EventType is the logout token's one event (Back-Channel Logout 1.0, 2.4).
const EventType = "http://schemas.openid.net/event/backchannel-logout"

// TokenType is the logout token's typ header (Back-Channel Logout 1.0, 2.4; the explicit type of RFC 8725).
const TokenType = "logout+jwt"

// The delivery schedule: the first attempt at once, then after FirstRetry, each wait Factor times the
// one before, at most MaxAttempts attempts (2 min, 8 min, 32 min, 2 h 8 min: given up after 2 h 50 min).
const (
	MaxAttempts = 5
	FirstRetry  = 2 * time.Minute
	Factor      = 4
	// TokenLifetime is how long a logout token is valid after it is signed: it is signed when it is sent.
	TokenLifetime = 2 * time.Minute
	// DefaultTimeout bounds one attempt: connecting, sending and the answer's status.
	DefaultTimeout = 5 * time.Second
)

// Backoff is the wait after the failed attempt number n (1-based).
func Backoff(n int) time.Duration {
	d := FirstRetry
	for i := 1; i < n; i++ {
		d *= Factor
	}
	return d
}

// Worker sends the queued logout tokens.
type Worker struct {
	queue   *Queue
	signer  *keys.Signer
	issuer  func() string
	targets func() Targets
	now     func() time.Time
	client  *http.Client
	log     *slog.Logger
	lease   time.Duration
	poll    time.Duration
	slots   chan struct{}
	wakeC   chan struct{}
	wg      sync.WaitGroup
	results *prometheus.CounterVec
	pending prometheus.Gauge
	down    atomic.Bool // the queue did not answer the last claim (logged once per outage)
}

// WorkerOptions are the worker's dependencies.
type WorkerOptions struct {
	Queue   *Queue
	Signer  *keys.Signer
	Issuer  func() string
	Targets func() Targets
	Now     func() time.Time // due times, iat and exp (default time.Now)
	// Timeout bounds each attempt (default DefaultTimeout): a relying party that does not answer holds
	// one of the worker's slots that long, never a sign-out.
	Timeout time.Duration
	// Poll is how often the queue is looked at besides Wake (default 1 s): the jobs of another replica
	// or of `formsservice users`, and the retries that came due.
	Poll time.Duration
	// Concurrency bounds the attempts in flight (default 16).
	Concurrency int
	Log         *slog.Logger
	Registerer  prometheus.Registerer
}

// NewWorker builds the worker and registers its metrics.
func NewWorker(o WorkerOptions) (*Worker, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	w := &Worker{queue: o.Queue, signer: o.Signer, issuer: o.Issuer, targets: o.Targets, now: o.Now, log: o.Log,
		lease: 2*o.Timeout + time.Minute, poll: o.Poll, slots: make(chan struct{}, o.Concurrency), wakeC: make(chan struct{}, 1)}
	w.client = &http.Client{
		Timeout: o.Timeout,
		// A redirect is not followed: the answer is the registered URI's, and a 3xx is a failure.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	w.results = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "formsservice_auth_backchannel_logout_total",
		Help: "Back-channel logout attempts (OpenID Connect Back-Channel Logout 1.0), by result: delivered (the relying party answered 200 or 204), retry (failed, another attempt is due later), gave_up (the last attempt failed), dropped (the client no longer has a backchannelLogoutURI).",
	}, []string{"result"})
	w.pending = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "formsservice_auth_backchannel_logout_pending",
		Help: "Logout tokens queued to be sent to relying parties (due now or waiting for a retry), as this replica last saw the queue.",
	})
	for _, c := range []prometheus.Collector{w.results, w.pending} {
		if err := o.Registerer.Register(c); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Wake makes Run look at the queue now (a job was queued in this process).
func (w *Worker) Wake() {
	select {
	case w.wakeC <- struct{}{}:
	default:
	}
}

// Run sends the jobs as they come due until ctx ends, then waits for the attempts in flight (each is
// bounded by the timeout).
func (w *Worker) Run(ctx context.Context) error {
	t := time.NewTicker(w.poll)
	defer t.Stop()
	for {
		w.dispatch(ctx)
		select {
		case <-ctx.Done():
			w.wg.Wait()
			return nil
		case <-t.C:
		case <-w.wakeC:
		}
	}
}

// RunOnce sends the jobs due now and waits for their attempts (tests; Run does the same without waiting).
func (w *Worker) RunOnce(ctx context.Context) {
	w.dispatch(ctx).Wait()
	w.observe(ctx)
}

// dispatch claims as many due jobs as there are free slots and starts an attempt for each; the group
// is done when they are.
func (w *Worker) dispatch(ctx context.Context) *sync.WaitGroup {
	var started sync.WaitGroup
	jobs, err := w.queue.Claim(ctx, w.now(), w.lease, cap(w.slots)-len(w.slots))
	if err != nil {
		if ctx.Err() == nil && !w.down.Swap(true) {
			w.log.Warn("back-channel logout: queue unavailable", "err", err)
		}
		return &started
	}
	if w.down.Swap(false) {
		w.log.Info("back-channel logout: queue available again")
	}
	for _, j := range jobs {
		w.slots <- struct{}{}
		started.Add(1)
		w.wg.Add(1)
		go func() {
			defer func() { <-w.slots; started.Done(); w.wg.Done() }()
			w.attempt(context.WithoutCancel(ctx), j)
		}()
	}
	w.observe(ctx)
	return &started
}

// observe sets the pending gauge from the queue.
func (w *Worker) observe(ctx context.Context) {
	if n, err := w.queue.Pending(ctx); err == nil {
		w.pending.Set(float64(n))
	}
}

// attempt sends one job's logout token and records the outcome in the queue.
func (w *Worker) attempt(ctx context.Context, j Job) {
	t, ok := w.targets()[j.Client]
	if !ok {
		w.results.WithLabelValues("dropped").Inc()
		_ = w.queue.Done(ctx, j.ID)
		return
	}
	err := w.send(ctx, t.URI, j)
	if err == nil {
		w.results.WithLabelValues("delivered").Inc()
		_ = w.queue.Done(ctx, j.ID)
		return
	}
	j.Attempts++
	if j.Attempts >= MaxAttempts {
		w.results.WithLabelValues("gave_up").Inc()
		w.log.Warn("back-channel logout: given up", "client_id", j.Client, "attempts", j.Attempts, "err", err)
		_ = w.queue.Done(ctx, j.ID)
		return
	}
	w.results.WithLabelValues("retry").Inc()
	w.log.Info("back-channel logout: attempt failed, retrying", "client_id", j.Client, "attempts", j.Attempts, "err", err)
	if rerr := w.queue.Retry(ctx, j, w.now().Add(Backoff(j.Attempts))); rerr != nil {
		w.log.Warn("back-channel logout: queue unavailable", "err", rerr) // the lease brings it back
	}
}

// statusError is an answer other than 200 or 204.
type statusError int

func (e statusError) Error() string { return "answered " + strconv.Itoa(int(e)) }

// send signs the job's logout token and POSTs it to uri (Back-Channel Logout 1.0, 2.5).
func (w *Worker) send(ctx context.Context, uri string, j Job) error {
	tok, err := w.Token(ctx, j)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, uri, strings.NewReader(url.Values{"logout_token": {tok}}.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := w.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 4096))
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusNoContent {
		return statusError(res.StatusCode)
	}
	return nil
}

// Token signs the job's logout token now: iss, aud (the client), iat, exp (TokenLifetime), a jti of its
// own per attempt, the event, sub and/or sid, and never a nonce; typ logout+jwt, with the provider's
// current signing key.
func (w *Worker) Token(ctx context.Context, j Job) (string, error) {
	now := w.now()
	c := jwt.MapClaims{
		"iss":    w.issuer(),
		"aud":    j.Client,
		"iat":    now.Unix(),
		"exp":    now.Add(TokenLifetime).Unix(),
		"jti":    j.ID + "." + strconv.Itoa(j.Attempts),
		"events": map[string]any{EventType: map[string]any{}},
	}
	if j.Subject != "" {
		c["sub"] = j.Subject
	}
	if j.SID != "" {
		c["sid"] = j.SID
	}
	tok, _, err := w.signer.Generate(ctx, c, &jwt.Headers{Extra: map[string]any{"typ": TokenType}})
	return tok, err
}
