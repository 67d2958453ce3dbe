package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// DoubleOptIn turns on confirmed sign-ups for the waitlist (docs/forms.md, "Confirmed sign-ups"): an
// entry is kept as pending and a mail with a confirmation link goes to the address; only a confirmed
// entry counts, and one left unconfirmed is erased.
type DoubleOptIn struct {
	// ConfirmWithin is how long the confirmation link works and how long a pending entry waits for it
	// before it is erased. Default 48h; 1h to 30 days.
	ConfirmWithin Duration `json:"confirmWithin,omitempty"`
	// ResendAfter: a sign-up of a pending address sends the mail again once this has passed since the
	// last, a window that doubles after each re-send, three re-sends at most (store.MaxResends).
	// Default 10m; 1m to 24h.
	ResendAfter Duration `json:"resendAfter,omitempty"`
}

// Defaults of the double opt-in.
const (
	DefaultConfirmWithin = 48 * time.Hour
	DefaultResendAfter   = 10 * time.Minute
)

func (d *DoubleOptIn) applyDefaults() {
	if d.ConfirmWithin == 0 {
		d.ConfirmWithin = Duration(DefaultConfirmWithin)
	}
	if d.ResendAfter == 0 {
		d.ResendAfter = Duration(DefaultResendAfter)
	}
}

func (d DoubleOptIn) validate() []error { return d.validateAt("forms.doubleOptIn") }

func (d DoubleOptIn) validateAt(at string) []error {
	var errs []error
	if w := d.ConfirmWithin.D(); w != 0 && (w < time.Hour || w > 30*24*time.Hour) {
		errs = append(errs, fmt.Errorf("%s.confirmWithin %s: between 1h and 720h (30 days)", at, w))
	}
	if r := d.ResendAfter.D(); r != 0 && (r < time.Minute || r > 24*time.Hour) {
		errs = append(errs, fmt.Errorf("%s.resendAfter %s: between 1m and 24h", at, r))
	}
	return errs
}

// FormsURL is the base URL the forms are reached at (links in their mails): forms.publicURL, else the
// platform's publicURL.
func (c *Config) FormsURL() string {
	if c.Forms.PublicURL != "" {
		return strings.TrimSuffix(c.Forms.PublicURL, "/")
	}
	return strings.TrimSuffix(c.PublicURL, "/")
}

// validateOptIn checks what the double opt-in (the waitlist's, or a declared form's) needs: an
// absolute base URL for its links.
func (f Forms) validateOptIn(platformURL string) []error {
	var errs []error
	if f.PublicURL != "" {
		if u, err := url.Parse(f.PublicURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			errs = append(errs, fmt.Errorf("forms.publicURL %q: want scheme://host[:port], like https://forms.example.com", f.PublicURL))
		}
	}
	if f.WaitlistRetention < 0 {
		errs = append(errs, fmt.Errorf("forms.waitlistRetention: must not be negative"))
	}
	what := "forms.doubleOptIn"
	if f.DoubleOptIn != nil {
		errs = append(errs, f.DoubleOptIn.validate()...)
	} else if i := slices.IndexFunc(f.Declared, func(d DeclaredForm) bool { return d.DoubleOptIn != nil }); i >= 0 {
		what = "forms.declared[" + f.Declared[i].ID + "].doubleOptIn" // its own settings are checked with the form
	} else {
		return errs
	}
	if f.PublicURL == "" && platformURL == "" {
		errs = append(errs, fmt.Errorf("%s: set forms.publicURL (or publicURL), the address the confirmation links point to", what))
	}
	// The mails' one-click unsubscribe must be https (RFC 8058; the mail component refuses anything
	// else off loopback): an http base would fail every confirmation mail at send time.
	key, base := "forms.publicURL", f.PublicURL
	if base == "" {
		key, base = "publicURL", platformURL
	}
	if u, err := url.Parse(base); err == nil && u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		errs = append(errs, fmt.Errorf("%s %s: the double opt-in's links need https (a mail's one-click unsubscribe must be https, RFC 8058); http only to a loopback host, for development", key, base))
	}
	return errs
}
