package health

import "github.com/prometheus/client_golang/prometheus"

// collector exports the latest round of checks at scrape time. A scrape reuses the cached round or
// joins the one in flight, exactly like GET /health, so Prometheus and /health never disagree and
// scraping adds no load on the store.
type collector struct {
	s        *Service
	status   *prometheus.Desc
	duration *prometheus.Desc
	overall  *prometheus.Desc
	redis    redisDescs
}

func newCollector(s *Service) *collector {
	return &collector{
		s: s,
		status: prometheus.NewDesc("formsservice_health_check_status",
			"Result of a health check by check name (component:measurement): 1 pass, 0.5 warn, 0 fail.",
			[]string{"check"}, nil),
		duration: prometheus.NewDesc("formsservice_health_check_duration_seconds",
			"How long the latest run of a health check took, in seconds (a timed-out check reports its timeout).",
			[]string{"check"}, nil),
		overall: prometheus.NewDesc("formsservice_health_status",
			"The platform's health as GET /health reports it: 1 pass, 0.5 warn, 0 fail.", nil, nil),
		redis: newRedisDescs(),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.status
	ch <- c.duration
	ch <- c.overall
	if c.s.o.Redis != nil {
		c.redis.describe(ch)
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	snap := c.s.current()
	ch <- prometheus.MustNewConstMetric(c.overall, prometheus.GaugeValue, snap.status.gauge())
	for name, out := range snap.checks {
		ch <- prometheus.MustNewConstMetric(c.status, prometheus.GaugeValue, out.Status.gauge(), name)
		ch <- prometheus.MustNewConstMetric(c.duration, prometheus.GaugeValue, out.duration, name)
	}
	if c.s.o.Redis != nil {
		c.redis.collect(ch, snap.redis, snap.redisUp)
	}
}
