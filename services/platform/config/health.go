package config

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"
)

// Health configures GET /health.
type Health struct {
	// FormsURL and AuthURL are the base URLs whose /readyz the health service checks. Empty in the dev
	// server, which checks its in-process services directly; empty elsewhere means "no such check".
	FormsURL string `json:"formsURL,omitempty"`
	AuthURL  string `json:"authURL,omitempty"`
	// WarnAfter turns a slow check into "warn"; Timeout turns it into "fail". Defaults 250ms and 1s.
	WarnAfter Duration `json:"warnAfter,omitempty"`
	Timeout   Duration `json:"timeout,omitempty"`
	// CacheFor is how long a result is reused, so that a scrape storm cannot stampede Redis. Default 2s.
	CacheFor Duration `json:"cacheFor,omitempty"`
	// Checks overrides WarnAfter and Timeout for one check, keyed as in the /health body
	// ("redis:responseTime", "forms:readiness", "auth:readiness", "redis:clusterState", "redis:role").
	Checks map[string]CheckLimits `json:"checks,omitempty"`
}

// CheckLimits are one check's thresholds; a zero field takes the section's value.
type CheckLimits struct {
	WarnAfter Duration `json:"warnAfter,omitempty"`
	Timeout   Duration `json:"timeout,omitempty"`
}

// MaxHealthTimeout bounds every check's timeout, and so how long GET /health can take.
const MaxHealthTimeout = 30 * time.Second

// Limits returns the thresholds in effect for the check named name.
func (h Health) Limits(name string) (warnAfter, timeout time.Duration) {
	warnAfter, timeout = h.WarnAfter.D(), h.Timeout.D()
	if l, ok := h.Checks[name]; ok {
		if l.WarnAfter > 0 {
			warnAfter = l.WarnAfter.D()
		}
		if l.Timeout > 0 {
			timeout = l.Timeout.D()
		}
	}
	return warnAfter, timeout
}

func (h *Health) applyDefaults() {
	if h.WarnAfter == 0 {
		h.WarnAfter = Duration(250 * time.Millisecond)
	}
	if h.Timeout == 0 {
		h.Timeout = Duration(time.Second)
	}
	if h.CacheFor == 0 {
		h.CacheFor = Duration(2 * time.Second)
	}
}

func (h Health) validate() []error {
	var errs []error
	for _, u := range []struct{ key, val string }{{"health.formsURL", h.FormsURL}, {"health.authURL", h.AuthURL}} {
		if u.val == "" {
			continue
		}
		if err := validateServiceURL(u.val); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u.key, err))
		}
	}
	if h.CacheFor < 0 {
		errs = append(errs, fmt.Errorf("health.cacheFor: must not be negative"))
	}
	errs = append(errs, validateLimits("health", h.WarnAfter, h.Timeout)...)
	names := make([]string, 0, len(h.Checks))
	for name := range h.Checks {
		names = append(names, name)
	}
	sort.Strings(names) // one order for the messages
	for _, name := range names {
		component, measurement, ok := strings.Cut(name, ":")
		if !ok || component == "" || measurement == "" {
			errs = append(errs, fmt.Errorf("health.checks: key %q: want component:measurement, like redis:responseTime", name))
			continue
		}
		l := h.Checks[name]
		if l.WarnAfter < 0 || l.Timeout < 0 {
			errs = append(errs, fmt.Errorf("health.checks[%s]: durations must not be negative", name))
			continue
		}
		warn, timeout := h.Limits(name)
		errs = append(errs, validateLimits("health.checks["+name+"]", Duration(warn), Duration(timeout))...)
	}
	return errs
}

// validateLimits checks values after defaults: 0 < warnAfter < timeout <= MaxHealthTimeout.
func validateLimits(where string, warnAfter, timeout Duration) []error {
	var errs []error
	if warnAfter < 0 || timeout < 0 {
		return []error{fmt.Errorf("%s: warnAfter and timeout must not be negative", where)}
	}
	if timeout.D() > MaxHealthTimeout {
		errs = append(errs, fmt.Errorf("%s.timeout: at most %s", where, MaxHealthTimeout))
	}
	if warnAfter > 0 && timeout > 0 && warnAfter >= timeout {
		errs = append(errs, fmt.Errorf("%s: warnAfter (%s) must be shorter than timeout (%s)", where, warnAfter.D(), timeout.D()))
	}
	return errs
}

// validateServiceURL accepts http(s)://host[:port][/path] without credentials, query or fragment: the
// base a service's /readyz hangs off.
func validateServiceURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme must be http or https")
	}
	if u.Host == "" {
		return fmt.Errorf("host is empty")
	}
	if u.User != nil {
		return fmt.Errorf("must not carry credentials")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("must not have a query or fragment")
	}
	return nil
}
