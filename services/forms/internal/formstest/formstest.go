// Package formstest holds what the tests of the forms packages share: a configuration the test can swap
// as a reload would, the configuration they start from, and a reading of the metrics they assert.
package formstest

import (
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/formsservice/formsservice/services/platform/config"
)

// Origin is the allowed origin the tests submit from.
const Origin = "https://www.example.com"

// Source is a config.Source the test can swap, as a reloaded file would.
type Source struct{ p atomic.Pointer[config.Config] }

// Current is the configuration in force.
func (s *Source) Current() *config.Config { return s.p.Load() }

// Set applies defaults to c, validates it and puts it in force.
func (s *Source) Set(t *testing.T, c *config.Config) {
	t.Helper()
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("test config: %v", err)
	}
	s.p.Store(c)
}

// Config allows Origin and *.example.org, with rate limiting off unless a test turns it on.
func Config() *config.Config {
	zero := 0
	return &config.Config{
		AllowedOrigins: []string{Origin, "https://*.example.org", "http://localhost:3000"},
		Forms:          config.Forms{RateLimitPerMinute: &zero},
	}
}

// Counter reads the value of metric name whose labels include the pairs given (name, value, ...): a
// counter's value, a histogram's sample count or a gauge's value; 0 when there is none.
func Counter(t *testing.T, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue next
				}
			}
			if m.Counter != nil {
				return m.GetCounter().GetValue()
			}
			if m.Histogram != nil {
				return float64(m.GetHistogram().GetSampleCount())
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}
