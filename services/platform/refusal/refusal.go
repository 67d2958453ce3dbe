// Package refusal explains a refused request to the developer who sent it, without changing the answer
// the public contract promises. The answer stays terse (`403 {"status":"error"}`: a foreign page learns
// nothing); the reason goes where a developer looks: a log line with what was sent and what is allowed —
// at info on the dev server, at debug in production — and a counter by reason, whose labels are the
// fixed reasons only (never an origin, a URI or a client ID a stranger chose).
package refusal

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// Reason names why a request was refused; it is the counter's label, so a service declares a closed set.
type Reason string

// Options configures a Recorder.
type Options struct {
	// Service names the counter: formsservice_<Service>_refusals_total.
	Service string
	Logger  *slog.Logger
	// Registerer receives the counter (nil: none is registered).
	Registerer prometheus.Registerer
	// Dev is the all-in-one dev server: refusals are explained at info level, and a page may show them.
	Dev bool
	// Reasons are every reason the service gives, each counted from zero so that a rate can be taken
	// before the first refusal.
	Reasons []Reason
}

// Recorder counts and explains one service's refusals. A nil *Recorder does nothing.
type Recorder struct {
	log     *slog.Logger
	level   slog.Level
	dev     bool
	counter *prometheus.CounterVec
	counts  map[Reason]prometheus.Counter
}

// New builds a Recorder and registers its counter.
func New(o Options) (*Recorder, error) {
	r := &Recorder{log: o.Logger, level: slog.LevelDebug, dev: o.Dev, counts: map[Reason]prometheus.Counter{}}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if o.Dev {
		r.level = slog.LevelInfo
	}
	r.counter = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: fmt.Sprintf("formsservice_%s_refusals_total", o.Service),
		Help: "Requests refused by reason. The log explains each one (what was sent, what is allowed) at debug level, at info on the dev server.",
	}, []string{"reason"})
	for _, reason := range o.Reasons {
		r.counts[reason] = r.counter.WithLabelValues(string(reason))
	}
	if o.Registerer != nil {
		if err := o.Registerer.Register(r.counter); err != nil {
			return nil, fmt.Errorf("refusal metrics: %w", err)
		}
	}
	return r, nil
}

// Refused counts one refusal and, when the log takes the line, writes msg with reason and args (what was
// sent, what is allowed, what to change). Arguments that cost something to build belong behind Explains.
func (r *Recorder) Refused(ctx context.Context, reason Reason, msg string, args ...any) {
	if r == nil {
		return
	}
	r.Count(reason)
	if r.log.Enabled(ctx, r.level) {
		r.log.Log(ctx, r.level, msg, append([]any{"reason", string(reason)}, args...)...)
	}
}

// Count counts one refusal without explaining it (the caller found Explains false).
func (r *Recorder) Count(reason Reason) {
	if r == nil {
		return
	}
	c, ok := r.counts[reason]
	if !ok {
		c = r.counter.WithLabelValues(string(reason))
	}
	c.Inc()
}

// Explains reports whether Refused would write its log line, so that a hot path builds the line's
// arguments only then.
func (r *Recorder) Explains(ctx context.Context) bool {
	return r != nil && r.log.Enabled(ctx, r.level)
}

// Dev reports whether this is the dev server, where an error page may show the developer what was sent.
func (r *Recorder) Dev() bool { return r != nil && r.dev }
