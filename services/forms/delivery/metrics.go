package delivery

import "github.com/prometheus/client_golang/prometheus"

// metrics are the delivery worker's collectors.
type metrics struct {
	deliveryAttempts *prometheus.CounterVec
	deliveryFailures *prometheus.CounterVec
	deliveryLag      prometheus.Histogram
	deliveryPending  prometheus.Gauge
	deadLetters      *prometheus.CounterVec
	deadLetterCount  prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
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
	for _, c := range []prometheus.Collector{m.deliveryAttempts, m.deliveryFailures, m.deliveryLag, m.deliveryPending, m.deadLetters, m.deadLetterCount} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, ch := range []string{"smtp", "webhook"} {
		m.deliveryAttempts.WithLabelValues(ch)
		m.deliveryFailures.WithLabelValues(ch)
		m.deadLetters.WithLabelValues(ch)
	}
	return m, nil
}
