package audit

import (
	"context"
	"io"
	"log/slog"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// NewLog is the audit stream of the log: JSON lines with stream=audit, at info whatever the service's
// log level, so that turning the service's logging down never silences the trail.
func NewLog(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo})).With("stream", "audit")
}

// Options configure a Recorder.
type Options struct {
	// Store keeps the events in Redis; nil: the log stream only.
	Store *Store
	// Log is the audit stream (NewLog); nil: no log lines.
	Log *slog.Logger
	// Registerer receives the metrics (nil: a private registry).
	Registerer prometheus.Registerer
	// Now is the clock events are stamped with (default time.Now).
	Now func() time.Time
	// Queue bounds the events waiting for the store (default 4096); see Record.
	Queue int
}

// Recorder records events: at once to the log and the metrics, and in batches to the store.
type Recorder struct {
	store    *Store
	log      *slog.Logger
	now      func() time.Time
	queue    chan Event
	flushes  chan chan struct{}
	events   *prometheus.CounterVec
	unstored prometheus.Counter
	unlogged prometheus.Counter
	sample   *sampler
}

// New returns a Recorder. Its Run writes the queued events to the store.
func New(o Options) (*Recorder, error) {
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Queue <= 0 {
		o.Queue = 4096
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	r := &Recorder{
		store:   o.Store,
		log:     o.Log,
		now:     o.Now,
		queue:   make(chan Event, o.Queue),
		flushes: make(chan chan struct{}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "formsservice_audit_events_total",
			Help: "Audit events recorded, by kind and outcome (success or failure).",
		}, []string{"kind", "outcome"}),
		unstored: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "formsservice_audit_unstored_total",
			Help: "Audit events that reached the log but not Redis (the queue was full or Redis failed).",
		}),
		unlogged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "formsservice_audit_unlogged_total",
			Help: "Refusals naming no user that were counted but not logged: past the log's sample of 10 a second per kind.",
		}),
		sample: newSampler(10),
	}
	for _, c := range []prometheus.Collector{r.events, r.unstored, r.unlogged} {
		if err := o.Registerer.Register(c); err != nil {
			return nil, err
		}
	}
	for _, k := range declared { // every series exists from the start, so a rate() sees the first event
		for _, o := range []Outcome{Success, Failure} {
			r.events.WithLabelValues(string(k.Kind), string(o))
		}
	}
	return r, nil
}

// prepare stamps, fills in the request's origin, bounds and logs an event, and counts it.
func (r *Recorder) prepare(ctx context.Context, e Event) Event {
	if e.Time.IsZero() {
		e.Time = r.now().UTC()
	}
	if o, ok := originOf(ctx); ok {
		if e.Addr == "" {
			e.Addr = o.addr
		}
		if e.UserAgent == "" {
			e.UserAgent = o.ua
		}
	}
	e.clean()
	r.events.WithLabelValues(string(e.Kind), string(e.Outcome)).Inc()
	if TrailOf(e) == Unkept && !r.sample.allow(e.Kind, e.Time) {
		r.unlogged.Inc()
		return e
	}
	r.log.LogAttrs(context.WithoutCancel(ctx), slog.LevelInfo, "audit", attrs(e)...)
	return e
}

func attrs(e Event) []slog.Attr {
	as := []slog.Attr{slog.String("kind", string(e.Kind)), slog.String("outcome", string(e.Outcome)), slog.Time("at", e.Time)}
	for _, f := range []struct{ k, v string }{{"reason", e.Reason}, {"user", e.User}, {"client", e.Client}, {"addr", e.Addr},
		{"userAgent", e.UserAgent}, {"actor", e.Actor}, {"grant", e.Grant}} {
		if f.v != "" {
			as = append(as, slog.String(f.k, f.v))
		}
	}
	if len(e.Detail) > 0 {
		keys := make([]string, 0, len(e.Detail))
		for k := range e.Detail {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var ds []any
		for _, k := range keys {
			ds = append(ds, slog.String(k, e.Detail[k]))
		}
		as = append(as, slog.Group("detail", ds...))
	}
	return as
}

// Record records an event without waiting for Redis: the log line is written and the metric counted
// now, and the event joins a bounded queue that Run writes to the store in batches (one script per
// batch). A request therefore pays no Redis round trip for its audit event. When the queue is full
// (Redis slower than the events for a long while) the event stays in the log only, and
// formsservice_audit_unstored_total counts it. A refusal that names no user is counted and logged
// (sampled) only (TrailOf).
func (r *Recorder) Record(ctx context.Context, e Event) {
	e = r.prepare(ctx, e)
	if r.store == nil || TrailOf(e) == Unkept {
		return
	}
	select {
	case r.queue <- e:
	default:
		r.unstored.Inc()
	}
}

// Write records an event and stores it before it returns: for one-shot commands (the CLI), which have
// no Run loop and must not end with an event unstored.
func (r *Recorder) Write(ctx context.Context, e Event) error {
	e = r.prepare(ctx, e)
	if r.store == nil || TrailOf(e) == Unkept {
		return nil
	}
	if err := r.store.Append(ctx, e); err != nil {
		r.unstored.Inc()
		return err
	}
	return nil
}

// maxBatch bounds one script call.
const maxBatch = 256

// Run writes queued events to the store until ctx ends, then writes what is left (within a few
// seconds) and returns.
func (r *Recorder) Run(ctx context.Context) error {
	// A write in flight when ctx ends still finishes (the Redis client's timeouts bound it): shutdown
	// must not turn events on their way into lost ones.
	wctx := context.WithoutCancel(ctx)
	batch := make([]Event, 0, maxBatch)
	for {
		select {
		case e := <-r.queue:
			batch = r.drain(append(batch[:0], e))
			r.write(wctx, batch)
		case done := <-r.flushes:
			r.write(wctx, r.drain(batch[:0]))
			close(done)
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
			r.write(final, r.drain(batch[:0]))
			cancel()
			return nil
		}
	}
}

// drain appends whatever waits in the queue, up to maxBatch events (the rest is the next batch).
func (r *Recorder) drain(batch []Event) []Event {
	for len(batch) < maxBatch {
		select {
		case e := <-r.queue:
			batch = append(batch, e)
		default:
			return batch
		}
	}
	return batch
}

// write stores a batch and whatever queued meanwhile.
func (r *Recorder) write(ctx context.Context, batch []Event) {
	for len(batch) > 0 {
		if err := r.store.Append(ctx, batch...); err != nil {
			r.unstored.Add(float64(len(batch)))
			r.log.Warn("audit events not stored in Redis; they are in this log only", "events", len(batch), "err", err.Error())
		}
		batch = r.drain(batch[:0])
	}
}

// Flush waits until every event recorded before the call is in the store (Run must be running).
func (r *Recorder) Flush(ctx context.Context) error {
	if r.store == nil {
		return nil
	}
	done := make(chan struct{})
	select {
	case r.flushes <- done:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
