package server

import (
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// LatencyBuckets are shared by every service's request histogram so that one dashboard covers all.
var LatencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}

// Metrics is a private Prometheus registry per process (tests stay isolated) with the request metrics
// every service shares.
type Metrics struct {
	Registry *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics registers the Go runtime, process and HTTP request collectors.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "formsservice_http_requests_total",
			Help: "HTTP requests by service, route template, method and status code.",
		}, []string{"service", "route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "formsservice_http_request_duration_seconds",
			Help:    "HTTP request latency by service, route template, method and status code.",
			Buckets: LatencyBuckets,
		}, []string{"service", "route", "method", "code"}),
	}
	reg.MustRegister(m.requests, m.duration,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// routeLabel gives the matched route template, never the raw path (which would be unbounded).
type routeLabel func(c *fiber.Ctx) (service, route string)

// middleware observes every request. The label is the route template that handled it, or "unmatched".
func (m *Metrics) middleware(label routeLabel) fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := time.Now()
		err := c.Next()
		code := c.Response().StatusCode()
		if err != nil {
			// The error handler has not run yet; report the status it will write.
			code = statusOf(err)
		}
		service, route := label(c)
		method := methodLabel(c.Method())
		codeStr := strconv.Itoa(code)
		m.requests.WithLabelValues(service, route, method, codeStr).Inc()
		m.duration.WithLabelValues(service, route, method, codeStr).Observe(time.Since(start).Seconds())
		return err
	}
}

func statusOf(err error) int {
	if fe, ok := err.(*fiber.Error); ok {
		return fe.Code
	}
	return fiber.StatusInternalServerError
}

// methodLabel maps the request method onto constant strings: Fiber's c.Method() points into a buffer
// that is reused for the next request, and an unknown method must not grow the label set.
func methodLabel(m string) string {
	for _, known := range knownMethods {
		if m == known {
			return known
		}
	}
	return "OTHER"
}

var knownMethods = []string{fiber.MethodGet, fiber.MethodPost, fiber.MethodHead, fiber.MethodOptions,
	fiber.MethodPut, fiber.MethodPatch, fiber.MethodDelete, fiber.MethodConnect, fiber.MethodTrace}
