package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// Forms configures the forms service (POST /contact, POST /waitlist).
type Forms struct {
	// RateLimitPerMinute is the number of requests per client IP per endpoint per minute, shared across
	// replicas. nil means the default (60); 0 turns rate limiting off.
	RateLimitPerMinute *int `json:"rateLimitPerMinute,omitempty"`
	// Delivery sends stored contact messages to the operating team.
	Delivery Delivery `json:"delivery,omitempty"`
	// ContactRetention erases stored contact messages older than this (storage limitation), but never
	// one still waiting for delivery. 0 (the default) keeps them until `formsservice forget` erases them.
	ContactRetention Duration `json:"contactRetention,omitempty"`
	// Durability is what a 201 (and a 200 duplicate) survives; see the Durability constants. Default
	// "process".
	Durability Durability `json:"durability,omitempty"`
	// Sites configure what the forms do for each allowed origin beyond the JSON contract
	// (forms_sites.go): the thank-you and error pages of plain HTML form posts.
	Sites []Site `json:"sites,omitempty"`
	// DoubleOptIn, when set, makes waitlist sign-ups confirmed ones (forms_optin.go).
	DoubleOptIn *DoubleOptIn `json:"doubleOptIn,omitempty"`
	// WaitlistRetention erases waitlist entries signed up longer ago than this, whatever their state.
	// 0 (the default) keeps them until `formsservice forget` erases them.
	WaitlistRetention Duration `json:"waitlistRetention,omitempty"`
	// PublicURL is where the forms are reached, when not at publicURL (a forms host of their own): the
	// base of the links in their mails.
	PublicURL string `json:"publicURL,omitempty"`
	// Declared are the team's own forms, posted to /f/<id> (forms_declared.go).
	Declared []DeclaredForm `json:"declared,omitempty"`
	// Spam is what /contact and the declared forms do with spam (forms_spam.go); a declared form's own
	// spam replaces it for that form.
	Spam *Spam `json:"spam,omitempty"`
	// Files is where the declared forms' file fields put their bytes (forms_files.go); a form with a
	// file field needs it.
	Files *FormFiles `json:"files,omitempty"`
}

// Durability names what an acknowledged submission survives.
type Durability string

const (
	// DurabilityProcess: the write is in the Redis primary's memory and its append-only file (written,
	// fsynced by Redis's own appendfsync policy). It survives the Redis process; a crash of the machine
	// loses what was not yet fsynced (up to a second with appendfsync everysec).
	DurabilityProcess Durability = "process"
	// DurabilityMachine: the answer waits until the primary fsynced its append-only file (WAITAOF 1 0,
	// Redis 7.2 or later). Concurrent submissions share one fsync. It survives a crash of the machine.
	DurabilityMachine Durability = "machine"
	// DurabilityPrimary: the answer waits until a replica has the write (WAIT 1), and the primary keeps
	// an append-only file too. It survives the loss of the primary, and so a failover.
	DurabilityPrimary Durability = "primary"
	// DurabilityReplicated: the answer waits until a replica has the write (WAIT 1); no append-only file
	// is required. It survives a crash of the primary where the platform fails over to a replica (a
	// managed Redis with replicas), not a restart of every node at once (docs/forms.md, D55).
	DurabilityReplicated Durability = "replicated"
	// DurabilityUnchecked: nothing is required of the store and nothing is waited for: a team that
	// accepts losing acknowledged submissions says so. A gauge and an info alert keep saying it.
	DurabilityUnchecked Durability = "unchecked"
)

// Delivery lists where contact messages go. Both may be set; neither means "store only" (the messages
// stay in Redis for `formsservice export contact`, and are delivered once a target is configured).
type Delivery struct {
	SMTP    *SMTP    `json:"smtp,omitempty"`
	Webhook *Webhook `json:"webhook,omitempty"`
	// Timeout bounds one delivery attempt to one target. Default 10s.
	Timeout Duration `json:"timeout,omitempty"`
	// RetryAfter is the wait before the first retry of a failed message; it doubles per attempt up to
	// MaxRetryInterval. It is also how long a message may sit with a consumer before another replica takes
	// it over (a consumer that died mid-delivery), so it must exceed one attempt: at least 2*Timeout.
	// Defaults 30s and 15m.
	RetryAfter       Duration `json:"retryAfter,omitempty"`
	MaxRetryInterval Duration `json:"maxRetryInterval,omitempty"`
	// MaxAttempts and MaxAge end the retries: a message that fails its MaxAttempts-th attempt, or any
	// attempt once it is older than MaxAge, becomes a dead letter (`formsservice deliveries`), no longer
	// retried and no longer holding retention back. Defaults 20 attempts (about four hours of retries at
	// the default intervals) and 72h.
	MaxAttempts int      `json:"maxAttempts,omitempty"`
	MaxAge      Duration `json:"maxAge,omitempty"`
}

// Enabled reports whether any delivery target is configured.
func (d Delivery) Enabled() bool { return d.SMTP != nil || d.Webhook != nil }

// SMTP is a mail relay for contact messages.
type SMTP struct {
	// Addr is host:port of the relay.
	Addr string   `json:"addr"`
	From string   `json:"from"`
	To   []string `json:"to"`
	// Username and PasswordFile (a mounted Secret) enable AUTH PLAIN.
	Username     string `json:"username,omitempty"`
	PasswordFile string `json:"passwordFile,omitempty"`
	// TLS is how the relay is reached, as mail.smtp.tls: "starttls" (the default off loopback), "tls"
	// (TLS from the first byte, port 465) or "none" (clear text: the default to a loopback relay, and
	// allowed only there). See Security.
	TLS string `json:"tls,omitempty"`
	// StartTLS is the older spelling of tls: starttls.
	StartTLS bool `json:"startTLS,omitempty"`
	// Subject prefixes the mail subject; default "[contact]".
	Subject string `json:"subject,omitempty"`
}

// Security is the relay's TLS in force: tls when set; else starttls when startTLS is set or the relay is
// not on loopback (a contact message carries a visitor's name, address and words across the network);
// else none, for a relay in the same pod or on the same machine, which has no certificate to offer.
func (s SMTP) Security() string {
	switch {
	case s.TLS != "":
		return s.TLS
	case s.StartTLS:
		return MailTLSStartTLS
	}
	if host, _, err := net.SplitHostPort(s.Addr); err == nil && loopbackHost(host) {
		return MailTLSNone
	}
	return MailTLSStartTLS
}

// validate refuses what mail.smtp refuses: clear text to a relay off loopback, an unknown tls.
func (s SMTP) validate() []error {
	if s.Addr == "" || s.From == "" || len(s.To) == 0 {
		return []error{fmt.Errorf("forms.delivery.smtp: addr, from and to are required")}
	}
	switch s.TLS {
	case "", MailTLSStartTLS, MailTLSImplicit:
		return nil
	case MailTLSNone:
	default:
		return []error{fmt.Errorf("forms.delivery.smtp.tls %q: want starttls, tls or none", s.TLS)}
	}
	if s.StartTLS {
		return []error{fmt.Errorf("forms.delivery.smtp: startTLS: true and tls: none contradict each other; keep one (tls: starttls is the newer spelling of startTLS: true)")}
	}
	if host, _, err := net.SplitHostPort(s.Addr); err == nil && !loopbackHost(host) {
		return []error{fmt.Errorf("forms.delivery.smtp.tls: none sends contact messages in clear text, so it is allowed only to a loopback relay, not %s: use starttls or tls (leave tls out for starttls)", host)}
	}
	return nil
}

// Webhook posts each contact message as JSON with a Slack-compatible "text" field. Exactly one of URL
// and URLFile is set. The address is a secret (anyone who has a Slack incoming-webhook URL can post to
// the channel), so prefer URLFile: a file holding it, such as a mounted Kubernetes Secret.
type Webhook struct {
	// URL is the incoming-webhook address, http or https.
	URL string `json:"url,omitempty"`
	// URLFile names a file whose content, with surrounding white space trimmed, is the address. The
	// forms service reads it at start-up and refuses to start when it is missing or not an http(s) URL.
	URLFile string `json:"urlFile,omitempty"`
	// SecretFile names a file (a mounted Secret) holding the Standard Webhooks signing secret,
	// "whsec_" + base64 of 24 to 64 random bytes. When set, every call carries webhook-signature; a
	// missing or malformed file stops the service at start-up, like URLFile.
	SecretFile string `json:"secretFile,omitempty"`
	// PreviousSecretFile, during a rotation of the secret, names the file holding the secret that
	// SecretFile replaces: calls then carry a signature with each (webhook-signature "v1,… v1,…", as the
	// Standard Webhooks spec allows), so that receivers verify with either while they move to the new
	// one. Remove it once every receiver has the new secret.
	PreviousSecretFile string `json:"previousSecretFile,omitempty"`
	// Format is the markup the receiver renders "text" in, which a visitor's text is escaped for:
	// "slack" (mrkdwn) or "markdown" (Mattermost, Rocket.Chat). Default: slack for an address on
	// hooks.slack.com, markdown for any other.
	Format string `json:"format,omitempty"`
}

// The values of Webhook.Format.
const (
	WebhookFormatSlack    = "slack"
	WebhookFormatMarkdown = "markdown"
)

// Defaults of the end of delivery.
const (
	DefaultMaxAttempts = 20
	DefaultMaxAge      = 72 * time.Hour
)

// DefaultRateLimitPerMinute applies when the setting is absent.
const DefaultRateLimitPerMinute = 60

// RateLimit returns the effective per-IP per-endpoint limit (0 = off).
func (f Forms) RateLimit() int {
	if f.RateLimitPerMinute == nil {
		return DefaultRateLimitPerMinute
	}
	return *f.RateLimitPerMinute
}

func (f *Forms) applyDefaults() {
	if f.DoubleOptIn != nil {
		f.DoubleOptIn.applyDefaults()
	}
	for i := range f.Declared {
		if d := f.Declared[i].DoubleOptIn; d != nil {
			d.applyDefaults()
		}
	}
	if f.Durability == "" {
		f.Durability = DurabilityProcess
	}
	d := &f.Delivery
	if d.Timeout == 0 {
		d.Timeout = Duration(10 * time.Second)
	}
	if d.RetryAfter == 0 {
		d.RetryAfter = Duration(30 * time.Second)
	}
	if d.MaxRetryInterval == 0 {
		d.MaxRetryInterval = Duration(15 * time.Minute)
	}
	if d.MaxAttempts == 0 {
		d.MaxAttempts = DefaultMaxAttempts
	}
	if d.MaxAge == 0 {
		d.MaxAge = Duration(DefaultMaxAge)
	}
	if d.SMTP != nil && d.SMTP.Subject == "" {
		d.SMTP.Subject = "[contact]"
	}
}

func (f Forms) validate() []error {
	errs := f.Spam.validate("forms.spam")
	if f.RateLimitPerMinute != nil && *f.RateLimitPerMinute < 0 {
		errs = append(errs, fmt.Errorf("forms.rateLimitPerMinute: must be >= 0"))
	}
	if s := f.Delivery.SMTP; s != nil {
		errs = append(errs, s.validate()...)
	}
	if w := f.Delivery.Webhook; w != nil {
		errs = append(errs, w.validate()...)
	}
	switch f.Durability {
	case "", DurabilityProcess, DurabilityMachine, DurabilityPrimary, DurabilityReplicated, DurabilityUnchecked:
	default:
		errs = append(errs, fmt.Errorf("forms.durability: %q: want process, machine, primary, replicated or unchecked", f.Durability))
	}
	if f.ContactRetention < 0 {
		errs = append(errs, fmt.Errorf("forms.contactRetention: must not be negative"))
	}
	if f.Delivery.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("forms.delivery.maxAttempts: must not be negative"))
	}
	if d := f.Delivery; d.Timeout < 0 || d.RetryAfter < 0 || d.MaxRetryInterval < 0 || d.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("forms.delivery: durations must not be negative"))
	} else if d.RetryAfter != 0 && d.Timeout != 0 && d.RetryAfter < 2*d.Timeout {
		errs = append(errs, fmt.Errorf("forms.delivery.retryAfter (%s) must be at least twice timeout (%s), or a slow attempt is taken over and sent twice", d.RetryAfter.D(), d.Timeout.D()))
	}
	return errs
}

// validate checks the webhook's settings. Messages never repeat the URL: it is a secret.
func (w Webhook) validate() []error { return w.validateAt("forms.delivery.webhook") }

// validateAt checks the webhook's settings, naming them under at.
func (w Webhook) validateAt(at string) []error {
	switch {
	case w.Format != "" && w.Format != WebhookFormatSlack && w.Format != WebhookFormatMarkdown:
		return []error{fmt.Errorf("%s.format %q: want slack or markdown (leave it out to choose by the address: slack on hooks.slack.com)", at, w.Format)}
	case w.URL != "" && w.URLFile != "":
		return []error{fmt.Errorf("%s: set url or urlFile, not both (urlFile, a file such as a mounted Secret, keeps the address out of the configuration)", at)}
	case w.URL == "" && w.URLFile == "":
		return []error{fmt.Errorf("%s: set url (the incoming-webhook address) or urlFile (a file holding it, such as a mounted Secret)", at)}
	case w.SecretFile != "" && (strings.TrimSpace(w.SecretFile) != w.SecretFile || strings.ContainsRune(w.SecretFile, 0)):
		return []error{fmt.Errorf("%s.secretFile: %q is not a usable file name (leading or trailing spaces, or a NUL)", at, w.SecretFile)}
	case w.PreviousSecretFile != "" && w.SecretFile == "":
		return []error{fmt.Errorf("%s.previousSecretFile: set only during a rotation, beside secretFile (the new secret)", at)}
	case w.PreviousSecretFile != "" && (strings.TrimSpace(w.PreviousSecretFile) != w.PreviousSecretFile || strings.ContainsRune(w.PreviousSecretFile, 0)):
		return []error{fmt.Errorf("%s.previousSecretFile: %q is not a usable file name (leading or trailing spaces, or a NUL)", at, w.PreviousSecretFile)}
	case w.URLFile != "":
		if strings.TrimSpace(w.URLFile) != w.URLFile || strings.ContainsRune(w.URLFile, 0) {
			return []error{fmt.Errorf("%s.urlFile: %q is not a usable file name (leading or trailing spaces, or a NUL)", at, w.URLFile)}
		}
		return nil
	}
	if err := CheckWebhookURL(w.URL); err != nil {
		return []error{fmt.Errorf("%s.url: %w", at, err)}
	}
	return nil
}

// CheckWebhookURL reports whether s is a usable webhook address: an absolute http or https URL with a
// host. The error does not repeat s, which is a secret.
func CheckWebhookURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an http(s) URL such as https://hooks.slack.com/services/…")
	}
	return nil
}

// CheckWebhookSecret reports whether s is a Standard Webhooks signing secret: "whsec_" (optional) and
// the base64 of 24 to 64 bytes. The error does not repeat s.
func CheckWebhookSecret(s string) error {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
	if err != nil || len(raw) < 24 || len(raw) > 64 {
		return errors.New(`the webhook secret must be "whsec_" and the base64 of 24 to 64 random bytes`)
	}
	return nil
}
