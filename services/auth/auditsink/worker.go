// Package auditsink sends the audit trail to a receiver such as a SIEM (issue 38 item 3, D67): every
// event stored in Redis, in the order of its stream, in batches posted as signed Standard Webhooks calls,
// at least once. A worker runs in each auth replica; a lease in Redis lets one of them deliver each
// trail at a time, so that the batches arrive in order and none is sent twice by two replicas; when
// that replica stops or dies, another takes over from the last batch the receiver acknowledged.
package auditsink

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/secretfile"
	"github.com/formsservice/formsservice/services/platform/stdwebhooks"
)

// Defaults of Options.
const (
	DefaultPoll       = time.Second
	DefaultMinBackoff = time.Second
	DefaultMaxBackoff = 5 * time.Minute
)

// Options configure a Worker.
type Options struct {
	Redis redis.UniversalClient
	// URL is the receiver; Signer signs each call (stdwebhooks.NewSigner).
	URL    string
	Signer *stdwebhooks.Signer
	// BatchSize is the most events a call carries (default config.DefaultAuditBatchSize).
	BatchSize int
	// Timeout bounds a call (default 10s); Client makes them (default: no redirects, Timeout).
	Timeout time.Duration
	Client  *http.Client
	// Lease is how long a worker keeps a trail without renewing it (default 3×Timeout): a replica that
	// died gives its trail up after it.
	Lease time.Duration
	// MinBackoff and MaxBackoff bound the wait after a failed call, doubling from the one to the other.
	MinBackoff, MaxBackoff time.Duration
	// Poll is how often Run looks for new events when there were none (default 1s).
	Poll time.Duration
	// Now is the clock of the leases, the backoff and webhook-timestamp (default time.Now). The leases
	// compare the replicas' clocks, which must agree within a small part of Lease.
	Now func() time.Time
	// Name tells this worker from the other replicas' (default: the host name and a random suffix).
	Name       string
	Log        *slog.Logger
	Registerer prometheus.Registerer
}

// Worker delivers the audit trail.
type Worker struct {
	rdb        redis.UniversalClient
	url, shown string
	signer     *stdwebhooks.Signer
	batchSize  int
	client     *http.Client
	lease      time.Duration
	minBackoff time.Duration
	maxBackoff time.Duration
	poll       time.Duration
	now        func() time.Time
	name       string
	log        *slog.Logger
	events     *prometheus.CounterVec
	lag        *prometheus.GaugeVec
}

// New returns a Worker.
func New(o Options) (*Worker, error) {
	if o.Redis == nil || o.URL == "" || o.Signer == nil {
		return nil, errors.New("audit sink: Redis, URL and Signer are required")
	}
	if o.BatchSize <= 0 {
		o.BatchSize = config.DefaultAuditBatchSize
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Client == nil {
		o.Client = stdwebhooks.NoRedirects(o.Timeout)
	}
	if o.Lease <= 0 {
		o.Lease = 3 * o.Timeout
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(DefaultMaxBackoff, o.MinBackoff)
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Name == "" {
		host, _ := os.Hostname()
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		o.Name = host + "-" + hex.EncodeToString(b)
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	w := &Worker{rdb: o.Redis, url: o.URL, shown: stdwebhooks.RedactURL(o.URL), signer: o.Signer, batchSize: o.BatchSize,
		client: o.Client, lease: o.Lease, minBackoff: o.MinBackoff, maxBackoff: o.MaxBackoff, poll: o.Poll, now: o.Now,
		name: o.Name, log: o.Log,
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "formsservice_auth_audit_sink_total",
			Help: "Audit events by what became of them at the sink: delivered (the receiver answered 2xx), failed (in a call that failed, once per attempt), lost (trimmed from Redis before they were delivered).",
		}, []string{"result"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "formsservice_auth_audit_sink_lag",
			Help: "Audit events stored but not yet delivered to the sink, per trail (security, attempts), as the last look at Redis saw them.",
		}, []string{"trail"}),
	}
	for _, c := range []prometheus.Collector{w.events, w.lag} {
		if err := o.Registerer.Register(c); err != nil {
			return nil, err
		}
	}
	for _, r := range []string{"delivered", "failed", "lost"} {
		w.events.WithLabelValues(r)
	}
	return w, nil
}

// FromConfig returns the options of c's sink: its URL and a Signer with its secrets, read from their
// files. Errors name the file, never its content.
func FromConfig(c config.AuditWebhook) (Options, error) {
	signer := &stdwebhooks.Signer{}
	for _, f := range []struct{ key, path string }{{"secretFile", c.SecretFile}, {"previousSecretFile", c.PreviousSecretFile}} {
		if f.path == "" {
			continue
		}
		secret, err := secretfile.Read(f.path)
		if err != nil {
			return Options{}, fmt.Errorf("auth.audit.webhook.%s: cannot read the signing secret: %w", f.key, err)
		}
		if err := signer.Add(secret); err != nil {
			return Options{}, fmt.Errorf("auth.audit.webhook.%s: %s: %w", f.key, f.path, err)
		}
	}
	return Options{URL: c.URL, Signer: signer, BatchSize: c.BatchSize, Timeout: c.Timeout.D()}, nil
}

// Run delivers until ctx ends, then gives its leases up.
func (w *Worker) Run(ctx context.Context) error {
	defer w.Release(context.WithoutCancel(ctx))
	down := false
	for {
		sent, err := w.RunOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && !down {
			w.log.Warn("audit sink: Redis unavailable", "err", err)
		}
		down = err != nil
		if sent {
			continue // more may wait
		}
		t := time.NewTimer(w.poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// RunOnce sends at most one batch of each trail, if this worker holds (or takes) its lease and no
// backoff waits; it reports whether a batch was delivered.
func (w *Worker) RunOnce(ctx context.Context) (sent bool, err error) {
	for _, t := range trails {
		ok, e := w.step(ctx, t)
		sent = sent || ok
		err = errors.Join(err, e)
	}
	return sent, err
}

// Release gives this worker's leases up.
func (w *Worker) Release(ctx context.Context) {
	for _, t := range trails {
		_ = releaseScript.Run(ctx, w.rdb, []string{t.state}, w.name).Err()
	}
}

// step delivers one batch of trail t. Only a Redis failure is an error: a receiver's failure is
// counted, logged and retried after the backoff.
func (w *Worker) step(ctx context.Context, t trail) (bool, error) {
	c, err := w.claim(ctx, t, w.now())
	if err != nil {
		return false, fmt.Errorf("audit sink: %w", err)
	}
	if c.status == "busy" || c.status == "wait" {
		return false, nil
	}
	w.lag.WithLabelValues(t.name).Set(float64(c.lag))
	if c.lost > 0 {
		w.events.WithLabelValues("lost").Add(float64(c.lost))
		w.log.Error("audit sink: events were trimmed from Redis before they were delivered (auth.audit.retention or maxEntries is too small for the receiver's outage)",
			"trail", t.name, "lost", c.lost)
	}
	if c.status != "batch" {
		return false, nil
	}
	body, n := w.payload(t, c.entries)
	id := t.name + "_" + c.batchEnd
	if err := w.post(ctx, id, body); err != nil {
		if ctx.Err() != nil {
			return false, nil // stopping: the batch stays in flight for whoever comes next
		}
		w.events.WithLabelValues("failed").Add(float64(n))
		wait, ferr := failScript.Run(ctx, w.rdb, []string{t.state}, w.name, c.cursor, w.now().UnixMilli(),
			w.minBackoff.Milliseconds(), w.maxBackoff.Milliseconds(), w.lease.Milliseconds()).Int64()
		w.log.Warn("audit sink: the receiver refused a batch; it is retried", "trail", t.name, "webhookID", id,
			"events", n, "retryIn", time.Duration(wait)*time.Millisecond, "err", err.Error())
		if ferr != nil {
			return false, fmt.Errorf("audit sink: %w", ferr)
		}
		return false, nil
	}
	ok, err := ackScript.Run(ctx, w.rdb, []string{t.state}, w.name, c.cursor, c.batchEnd, len(c.entries),
		w.now().UnixMilli(), w.lease.Milliseconds()).Int64()
	if err != nil {
		return false, fmt.Errorf("audit sink: %w", err)
	}
	w.events.WithLabelValues("delivered").Add(float64(n))
	if ok == 1 {
		w.lag.WithLabelValues(t.name).Set(float64(max(c.lag-int64(len(c.entries)), 0)))
	}
	return ok == 1, nil
}

// Payload is the JSON body of a call, in the Standard Webhooks payload form: type, timestamp and data.
type Payload struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      Batch     `json:"data"`
}

// Batch is the events of one trail, oldest first, each with its stream ID (Event.ID).
type Batch struct {
	// Trail is "security" (the chained stream) or "attempts" (what anyone can cause without a
	// credential; docs/security.md).
	Trail  string        `json:"trail"`
	Events []audit.Event `json:"events"`
}

// PayloadType is Payload.Type.
const PayloadType = "formsservice.audit.events"

// payload builds a call's body and says how many events it carries. An entry that is not an event (not
// ours) is left out and logged by ID.
func (w *Worker) payload(t trail, entries []redis.XMessage) ([]byte, int) {
	events := make([]audit.Event, 0, len(entries))
	for _, m := range entries {
		raw, _ := m.Values["e"].(string)
		var e audit.Event
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			w.log.Warn("audit sink: an entry that is not an audit event is left out", "trail", t.name, "id", m.ID)
			continue
		}
		e.ID = m.ID
		events = append(events, e)
	}
	body, _ := json.Marshal(Payload{Type: PayloadType, Timestamp: w.now().UTC(), Data: Batch{Trail: t.name, Events: events}})
	return body, len(events)
}

// post makes one call; any 2xx answer is success. Errors show the URL's scheme and host only.
func (w *Worker) post(ctx context.Context, id string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return stdwebhooks.Redact(err, w.shown)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "formsservice")
	if err := w.signer.SetHeaders(req.Header, id, w.now(), body); err != nil {
		return err
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return stdwebhooks.Redact(err, w.shown)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s answered %d: %s", w.shown, resp.StatusCode, strings.TrimSpace(string(snippet)))
	}
	return nil
}
