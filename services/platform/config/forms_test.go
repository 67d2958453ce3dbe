package config

import (
	"fmt"
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
		"forms: {rateLimitPerMinute: -1}":                                                               "rateLimitPerMinute",
		"forms: {contactRetention: -1s}":                                                                "contactRetention",
		"forms: {delivery: {smtp: {addr: 'mail:25'}}}":                                                  "smtp",
		"forms: {delivery: {webhook: {url: 'ftp://x'}}}":                                                "webhook",
		"forms: {delivery: {webhook: {url: '/relative'}}}":                                              "webhook",
		"forms: {delivery: {webhook: {url: 'https://h/x'}, timeout: 10s, retryAfter: 15s}}":             "retryAfter",
		"forms: {delivery: {webhook: {url: 'https://h/x', format: html}}}":                              "webhook.format",
		"forms: {durability: disk}":                                                                     "forms.durability",
		"forms: {delivery: {maxAttempts: -1}}":                                                          "maxAttempts",
		"forms: {delivery: {maxAge: -1h}}":                                                              "durations must not be negative",
		"forms: {delivery: {webhook: {url: 'https://h/x', secretFile: ' /s'}}}":                         "secretFile",
		"forms: {delivery: {webhook: {url: 'https://h/x', previousSecretFile: /old}}}":                  "previousSecretFile: set only during a rotation",
		"forms: {delivery: {webhook: {url: 'https://h/x', secretFile: /n, previousSecretFile: '/o '}}}": "previousSecretFile",
		"redis: {url: 'redis://r:6379', sentinelPasswordFile: /p}":                                      "sentinelPasswordFile are for Sentinel",
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

func TestForms_WebhookURLOrURLFile(t *testing.T) {
	const secret = "T000/B000/XXXXsecret"
	cases := []struct {
		doc  string
		want string // "" = valid
	}{
		{"forms: {delivery: {webhook: {url: 'https://hooks.slack.com/services/" + secret + "'}}}", ""},
		{"forms: {delivery: {webhook: {urlFile: /var/run/secrets/formsservice/hook/url}}}", ""},
		{"forms: {delivery: {webhook: {urlFile: hook-url.txt}}}", ""}, // relative to the working directory
		{"forms: {delivery: {webhook: {url: 'https://hooks.slack.com/services/" + secret + "', urlFile: /hook}}}", "set url or urlFile, not both"},
		{"forms: {delivery: {webhook: {}}}", "set url (the incoming-webhook address) or urlFile"},
		{"forms: {delivery: {webhook: {url: ''}}}", "set url (the incoming-webhook address) or urlFile"},
		{"forms: {delivery: {webhook: {urlFile: '/hook '}}}", "forms.delivery.webhook.urlFile"},
		{"forms: {delivery: {webhook: {url: 'ftp://x/" + secret + "'}}}", "forms.delivery.webhook.url: must be an http(s) URL"},
		{"forms: {delivery: {webhook: {url: 'hooks.slack.com/services/" + secret + "'}}}", "forms.delivery.webhook.url: must be an http(s) URL"},
		{"forms: {delivery: {webhook: {url_file: /hook}}}", "unknown key"}, // strict: a typo is refused
	}
	for _, tc := range cases {
		c, err := Parse([]byte(tc.doc))
		if err == nil {
			c.ApplyDefaults()
			err = c.Validate()
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.doc, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error saying %q", tc.doc, err, tc.want)
		case err != nil && strings.Contains(err.Error(), secret):
			t.Errorf("%s: the error repeats the secret URL: %v", tc.doc, err)
		}
	}
}

// forms.delivery.smtp reaches a relay off loopback with TLS unless told otherwise, and refuses clear
// text there, as mail.smtp does: a contact message carries a visitor's name, address and words.
func TestForms_SMTPRelayOffLoopback_TLSByDefaultAndClearTextRefused(t *testing.T) {
	const relay = "smtp: {addr: '%s', from: a@example.com, to: [b@example.com]%s}"
	load := func(addr, extra string) (*Config, error) {
		c, err := Parse([]byte("forms:\n  delivery:\n    " + fmt.Sprintf(relay, addr, extra) + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		c.ApplyDefaults()
		return c, c.Validate()
	}
	for _, tc := range []struct{ addr, extra, want string }{
		{"relay.internal:25", "", MailTLSStartTLS}, // off loopback: STARTTLS unless told otherwise
		{"relay.internal:587", ", startTLS: true", MailTLSStartTLS},
		{"relay.internal:465", ", tls: tls", MailTLSImplicit},
		{"127.0.0.1:25", "", MailTLSNone}, // a relay in the same pod or on the machine, as before
		{"localhost:25", ", tls: none", MailTLSNone},
		{"[::1]:25", ", tls: starttls", MailTLSStartTLS},
	} {
		c, err := load(tc.addr, tc.extra)
		if err != nil {
			t.Errorf("%s%s: %v", tc.addr, tc.extra, err)
			continue
		}
		if got := c.Forms.Delivery.SMTP.Security(); got != tc.want {
			t.Errorf("%s%s: security %q, want %q", tc.addr, tc.extra, got, tc.want)
		}
		if m, _ := c.MailSettings(); m.SMTP.TLS != tc.want {
			t.Errorf("%s%s: the mail relay taken from it has tls %q, want %q", tc.addr, tc.extra, m.SMTP.TLS, tc.want)
		}
	}
	for _, tc := range []struct{ addr, extra, want string }{
		{"relay.internal:25", ", tls: none", "forms.delivery.smtp.tls: none sends contact messages in clear text, so it is allowed only to a loopback relay, not relay.internal"},
		{"relay.internal:25", ", tls: ssl", `forms.delivery.smtp.tls "ssl": want starttls, tls or none`},
		{"relay.internal:25", ", tls: none, startTLS: true", "forms.delivery.smtp: startTLS: true and tls: none"},
	} {
		if _, err := load(tc.addr, tc.extra); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s%s: %v, want an error saying %q", tc.addr, tc.extra, err, tc.want)
		}
	}
}

// Every level the forms service knows is accepted (D55 added replicated and unchecked), and the error
// for an unknown one lists them all.
func TestForms_DurabilityLevels(t *testing.T) {
	for _, level := range []Durability{DurabilityProcess, DurabilityMachine, DurabilityPrimary, DurabilityReplicated, DurabilityUnchecked} {
		c, err := Parse([]byte("forms: {durability: " + string(level) + "}"))
		if err != nil {
			t.Fatal(err)
		}
		c.ApplyDefaults()
		if err := c.Validate(); err != nil || c.Forms.Durability != level {
			t.Errorf("durability %s: %v (read as %q)", level, err, c.Forms.Durability)
		}
	}
	c, err := Parse([]byte("forms: {durability: aof}"))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyDefaults()
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "want process, machine, primary, replicated or unchecked") {
		t.Errorf("durability aof: %v, want the list of levels", err)
	}
}
