package config

import (
	"strings"
	"testing"
	"time"
)

func TestForms_DefaultsAndRateLimit(t *testing.T) {
	c, err := Parse([]byte("forms:\n  delivery:\n    smtp: {addr: 'mail:25', from: a@example.com, to: [b@example.com]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyDefaults()
	d := c.Forms.Delivery
	if d.Timeout.D() != 10*time.Second || d.RetryAfter.D() != 30*time.Second || d.MaxRetryInterval.D() != 15*time.Minute || d.SMTP.Subject != "[contact]" {
		t.Fatalf("defaults %+v %+v", d, d.SMTP)
	}
	if !d.Enabled() || c.Forms.RateLimit() != DefaultRateLimitPerMinute {
		t.Fatal("enabled / default rate limit")
	}
	zero := 0
	if (Forms{RateLimitPerMinute: &zero}).RateLimit() != 0 {
		t.Fatal("0 must turn rate limiting off")
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestForms_Validate(t *testing.T) {
	cases := map[string]string{
		"forms: {rateLimitPerMinute: -1}":                                                   "rateLimitPerMinute",
		"forms: {contactRetention: -1s}":                                                    "contactRetention",
		"forms: {delivery: {smtp: {addr: 'mail:25'}}}":                                      "smtp",
		"forms: {delivery: {webhook: {url: 'ftp://x'}}}":                                    "webhook",
		"forms: {delivery: {webhook: {url: '/relative'}}}":                                  "webhook",
		"forms: {delivery: {webhook: {url: 'https://h/x'}, timeout: 10s, retryAfter: 15s}}": "retryAfter",
	}
	for doc, want := range cases {
		c, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		c.ApplyDefaults()
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error about %s", doc, err, want)
		}
	}
}
