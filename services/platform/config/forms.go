package config

import "fmt"

// Forms configures the forms service (POST /contact, POST /waitlist).
type Forms struct {
	// RateLimitPerMinute is the number of requests per client IP per endpoint per minute, shared across
	// replicas. nil means the default (60); 0 turns rate limiting off.
	RateLimitPerMinute *int `json:"rateLimitPerMinute,omitempty"`
	// Delivery sends stored contact messages to the operating team.
	Delivery Delivery `json:"delivery,omitempty"`
}

// Delivery lists where contact messages go. Both may be set; neither means "store only".
type Delivery struct {
	SMTP    *SMTP    `json:"smtp,omitempty"`
	Webhook *Webhook `json:"webhook,omitempty"`
}

// SMTP is a mail relay for contact messages.
type SMTP struct {
	// Addr is host:port of the relay.
	Addr string   `json:"addr"`
	From string   `json:"from"`
	To   []string `json:"to"`
	// Username and PasswordFile (a mounted Secret) enable AUTH PLAIN.
	Username     string `json:"username,omitempty"`
	PasswordFile string `json:"passwordFile,omitempty"`
	// StartTLS requires STARTTLS before AUTH or DATA.
	StartTLS bool `json:"startTLS,omitempty"`
}

// Webhook posts each contact message as JSON with a Slack-compatible "text" field.
type Webhook struct {
	URL string `json:"url"`
}

// DefaultRateLimitPerMinute applies when the setting is absent.
const DefaultRateLimitPerMinute = 60

// RateLimit returns the effective per-IP per-endpoint limit (0 = off).
func (f Forms) RateLimit() int {
	if f.RateLimitPerMinute == nil {
		return DefaultRateLimitPerMinute
	}
	return *f.RateLimitPerMinute
}

func (f *Forms) applyDefaults() {}

func (f Forms) validate() []error {
	var errs []error
	if f.RateLimitPerMinute != nil && *f.RateLimitPerMinute < 0 {
		errs = append(errs, fmt.Errorf("forms.rateLimitPerMinute: must be >= 0"))
	}
	if s := f.Delivery.SMTP; s != nil && (s.Addr == "" || s.From == "" || len(s.To) == 0) {
		errs = append(errs, fmt.Errorf("forms.delivery.smtp: addr, from and to are required"))
	}
	if w := f.Delivery.Webhook; w != nil && w.URL == "" {
		errs = append(errs, fmt.Errorf("forms.delivery.webhook: url is required"))
	}
	return errs
}
