package forms

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// endpoint is one of the two forms endpoints.
type endpoint int

const (
	contactEndpoint endpoint = iota
	waitlistEndpoint
	numEndpoints
)

func (e endpoint) String() string {
	if e == contactEndpoint {
		return "contact"
	}
	return "waitlist"
}

// result is what became of one submission; it labels the submissions metric.
type result int

const (
	resultCreated             result = iota // 201, stored
	resultDuplicate                         // 200, waitlist address already there
	resultReplayed                          // 201, Idempotency-Key seen before; nothing stored
	resultHoneypot                          // 201, bot; nothing stored
	resultInvalid                           // 400
	resultForbidden                         // 403 origin
	resultTooLarge                          // 413
	resultUnsupported                       // 415
	resultRateLimited                       // 429
	resultStoreError                        // 502
	resultBadRequest                        // 408/400: the body could not be read
	resultIdempotencyConflict               // 422: an Idempotency-Key reused with another message
	numResults
)

var resultNames = [numResults]string{"created", "duplicate", "replayed", "honeypot", "invalid", "forbidden",
	"too_large", "unsupported_media_type", "rate_limited", "store_error", "unreadable", "idempotency_conflict"}

// metrics are the forms service's own collectors. Counters for the hot path are resolved once, so that
// counting a submission is one atomic add.
type metrics struct {
	submissions [numEndpoints][numResults]prometheus.Counter
	honeypot    [numEndpoints]prometheus.Counter

	deliveryAttempts *prometheus.CounterVec
	deliveryFailures *prometheus.CounterVec
	deliveryLag      prometheus.Histogram
	deliveryPending  prometheus.Gauge
	deadLetters      *prometheus.CounterVec
	deadLetterCount  prometheus.Gauge
	storeErrors      [numStoreErrors]prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	subs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "formsservice_forms_submissions_total",
		Help: "Forms submissions by endpoint and result (created, duplicate, replayed, honeypot, invalid, forbidden, too_large, unsupported_media_type, rate_limited, store_error, unreadable, idempotency_conflict).",
	}, []string{"endpoint", "result"})
	honeypot := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "formsservice_forms_honeypot_hits_total",
		Help: "Submissions with the hidden _gotcha field filled in (answered 201, not stored).",
	}, []string{"endpoint"})
	m := &metrics{
		deliveryAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "formsservice_forms_delivery_attempts_total",
			Help: "Attempts to deliver a contact message, by channel (smtp, webhook).",
		}, []string{"channel"}),
		deliveryFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "formsservice_forms_delivery_failures_total",
			Help: "Failed attempts to deliver a contact message, by channel; the message is retried with backoff.",
		}, []string{"channel"}),
		deliveryLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "formsservice_forms_delivery_lag_seconds",
			Help:    "Time from storing a contact message to its delivery to every channel.",
			Buckets: []float64{.01, .05, .1, .5, 1, 5, 30, 60, 300, 900, 3600, 6 * 3600, 24 * 3600},
		}),
		deliveryPending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "formsservice_forms_delivery_pending",
			Help: "Contact messages read by a delivery worker and not yet delivered (waiting for a retry).",
		}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "formsservice_forms_delivery_dead_letters_total",
			Help: "Contact messages given up on (maxAttempts or maxAge reached) and moved to the dead letters, by the channel that failed last.",
		}, []string{"channel"}),
		deadLetterCount: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "formsservice_forms_delivery_dead_letters",
			Help: "Contact messages in the dead letters, waiting for `formsservice deliveries retry` or `drop`.",
		}),
	}
	for _, c := range []prometheus.Collector{subs, honeypot, m.deliveryAttempts, m.deliveryFailures, m.deliveryLag, m.deliveryPending, m.deadLetters, m.deadLetterCount} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	storeErrors := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "formsservice_forms_store_errors_total",
		Help: "Submissions answered 502 because the store failed, by reason: full (Redis refused the write at maxmemory: OOM), not_durable (written but not acknowledged at the durability level in time), timeout, unavailable (any other error).",
	}, []string{"reason"})
	if err := reg.Register(storeErrors); err != nil {
		return nil, err
	}
	for r := range numStoreErrors {
		m.storeErrors[r] = storeErrors.WithLabelValues(storeErrorNames[r])
	}
	for e := range numEndpoints {
		for r := range numResults {
			m.submissions[e][r] = subs.WithLabelValues(e.String(), resultNames[r])
		}
		m.honeypot[e] = honeypot.WithLabelValues(e.String())
	}
	for _, ch := range []string{"smtp", "webhook"} {
		m.deliveryAttempts.WithLabelValues(ch)
		m.deliveryFailures.WithLabelValues(ch)
		m.deadLetters.WithLabelValues(ch)
	}
	return m, nil
}

// storeError is why the store could not take a submission; it labels the store errors metric so that a
// full store (which needs more memory, not patience) is told apart from an outage.
type storeError int

const (
	storeErrorFull        storeError = iota // Redis at maxmemory with noeviction: "OOM command not allowed"
	storeErrorNotDurable                    // written, not acknowledged at the durability level in time
	storeErrorTimeout                       // no answer within the store timeout
	storeErrorUnavailable                   // anything else: connection refused, reset, failover
	numStoreErrors
)

var storeErrorNames = [numStoreErrors]string{"full", "not_durable", "timeout", "unavailable"}

// classifyStoreError sorts a store error into its reason.
func classifyStoreError(err error) storeError {
	var nd errNotDurable
	var nerr net.Error
	switch {
	case errors.As(err, &nd):
		return storeErrorNotDurable
	case isOOM(err):
		return storeErrorFull
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &nerr) && nerr.Timeout():
		return storeErrorTimeout
	default:
		return storeErrorUnavailable
	}
}

// isOOM reports Redis's refusal of a write at maxmemory under noeviction (an error reply, which go-redis
// returns as redis.Error, that starts with the OOM prefix, also inside a script: "OOM command not allowed
// when used memory > 'maxmemory'").
func isOOM(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	return strings.HasPrefix(msg, "OOM ") || strings.Contains(msg, "OOM command not allowed")
}
