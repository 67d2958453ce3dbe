package forms

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/forms/store"
)

// endpoint is one of the forms endpoints: the two built-in forms, and /f/<id> for the declared ones
// (each counted again by its id in formsservice_forms_declared_submissions_total).
type endpoint int

const (
	contactEndpoint endpoint = iota
	waitlistEndpoint
	declaredEndpoint
	numEndpoints
)

func (e endpoint) String() string {
	switch e {
	case contactEndpoint:
		return "contact"
	case waitlistEndpoint:
		return "waitlist"
	}
	return "declared"
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
	resultBotRefused                        // 400: no bot-check token, or one the provider refused
	resultBotUnavailable                    // 502: the bot check could not be made
	resultUnknownForm                       // 404: /f/<id> names no declared form
	numResults
)

var resultNames = [numResults]string{"created", "duplicate", "replayed", "honeypot", "invalid", "forbidden",
	"too_large", "unsupported_media_type", "rate_limited", "store_error", "unreadable", "idempotency_conflict",
	"bot_refused", "bot_check_unavailable", "unknown_form"}

// metrics are the forms intake's own collectors (the delivery worker has its own). Counters for the hot
// path are resolved once, so that counting a submission is one atomic add.
type metrics struct {
	submissions [numEndpoints][numResults]prometheus.Counter
	honeypot    [numEndpoints]prometheus.Counter
	storeErrors [numStoreErrors]prometheus.Counter
	// declared counts the declared forms' submissions by form id (at most config.MaxDeclaredForms);
	// declaredByID holds each form's counters once resolved (id -> *[numResults]prometheus.Counter).
	declared     *prometheus.CounterVec
	declaredByID sync.Map
	spam         *prometheus.CounterVec // formsservice_forms_spam_total (spamcheck.go)
}

// declaredCounter is form id's counter of result r.
func (m *metrics) declaredCounter(id string, r result) prometheus.Counter {
	if cs, ok := m.declaredByID.Load(id); ok {
		return cs.(*[numResults]prometheus.Counter)[r]
	}
	var cs [numResults]prometheus.Counter
	for k := range numResults {
		cs[k] = m.declared.WithLabelValues(id, resultNames[k])
	}
	got, _ := m.declaredByID.LoadOrStore(id, &cs)
	return got.(*[numResults]prometheus.Counter)[r]
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	subs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "formsservice_forms_submissions_total",
		Help: "Forms submissions by endpoint and result (created, duplicate, replayed, honeypot, invalid, forbidden, too_large, unsupported_media_type, rate_limited, store_error, unreadable, idempotency_conflict, bot_refused, bot_check_unavailable, unknown_form).",
	}, []string{"endpoint", "result"})
	honeypot := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "formsservice_forms_honeypot_hits_total",
		Help: "Submissions with the hidden _gotcha field filled in (answered 201, not stored).",
	}, []string{"endpoint"})
	storeErrors := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "formsservice_forms_store_errors_total",
		Help: "Submissions answered 502 because the store failed, by reason: full (Redis refused the write at maxmemory: OOM), not_durable (written but not acknowledged at the durability level in time), durability_unmet (not written: the store cannot keep the durability level), timeout, unavailable (any other error).",
	}, []string{"reason"})
	declared := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "formsservice_forms_declared_submissions_total",
		Help: "Submissions of the declared forms (POST /f/<id>) by form id and result (the results of formsservice_forms_submissions_total).",
	}, []string{"form", "result"})
	spamCounter := newSpamCounter()
	for _, c := range []prometheus.Collector{subs, honeypot, storeErrors, declared, spamCounter} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m := &metrics{declared: declared, spam: spamCounter}
	for r := range numStoreErrors {
		m.storeErrors[r] = storeErrors.WithLabelValues(storeErrorNames[r])
	}
	for e := range numEndpoints {
		for r := range numResults {
			m.submissions[e][r] = subs.WithLabelValues(e.String(), resultNames[r])
		}
		m.honeypot[e] = honeypot.WithLabelValues(e.String())
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
	storeErrorUnmet                         // not written: the store cannot keep the durability level
	numStoreErrors
)

var storeErrorNames = [numStoreErrors]string{"full", "not_durable", "timeout", "unavailable", "durability_unmet"}

// classifyStoreError sorts a store error into its reason.
func classifyStoreError(err error) storeError {
	var nd store.NotDurableError
	var unmet *store.Unmet
	var nerr net.Error
	switch {
	case errors.As(err, &nd):
		return storeErrorNotDurable
	case errors.As(err, &unmet):
		return storeErrorUnmet
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
