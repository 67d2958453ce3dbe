package config

import (
	"strings"
	"testing"
	"time"
)

func TestHealth_DefaultsAndPerCheckLimits(t *testing.T) {
	c, err := Parse([]byte(`
health:
  formsURL: http://forms.ns.svc:8080
  authURL: https://auth.ns.svc
  warnAfter: 100ms
  checks:
    redis:responseTime: {timeout: 3s}
    auth:readiness: {warnAfter: 50ms, timeout: 400ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	h := c.Health
	if h.Timeout.D() != time.Second || h.CacheFor.D() != 2*time.Second {
		t.Errorf("defaults: timeout %s cacheFor %s", h.Timeout.D(), h.CacheFor.D())
	}
	for name, want := range map[string][2]time.Duration{
		"forms:readiness":    {100 * time.Millisecond, time.Second},
		"redis:responseTime": {100 * time.Millisecond, 3 * time.Second},
		"auth:readiness":     {50 * time.Millisecond, 400 * time.Millisecond},
	} {
		if w, to := h.Limits(name); w != want[0] || to != want[1] {
			t.Errorf("Limits(%s) = %s, %s; want %s, %s", name, w, to, want[0], want[1])
		}
	}
}

func TestHealth_Validate_RefusesBadSettingsWithoutEchoingSecrets(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"formsURL: ftp://forms", "health.formsURL: scheme must be http or https"},
		{"authURL: http://user:hunter2@auth:8080", "health.authURL: must not carry credentials"},
		{"formsURL: http://forms?x=1", "must not have a query"},
		{"warnAfter: 2s\ntimeout: 1s", "warnAfter (2s) must be shorter than timeout (1s)"},
		{"timeout: 1m", "health.timeout: at most 30s"},
		{"cacheFor: -1s", "health.cacheFor: must not be negative"},
		{"checks: {redis: {timeout: 1s}}", `key "redis": want component:measurement`},
		{"checks: {\"forms:readiness\": {warnAfter: 5s}}", "health.checks[forms:readiness]: warnAfter (5s) must be shorter than timeout (1s)"},
	}
	for _, c := range cases {
		cfg, err := Parse([]byte("health:\n  " + strings.ReplaceAll(c.yaml, "\n", "\n  ")))
		if err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		cfg.ApplyDefaults()
		err = cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.yaml, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: the error shows the password: %v", c.yaml, err)
		}
	}
}
