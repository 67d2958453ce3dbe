// Package botcheck verifies a CAPTCHA token on the server, the way each provider documents it: a POST of
// the site's secret and the visitor's token to the provider's siteverify endpoint, whose JSON answer says
// whether the token is good. Cloudflare Turnstile, hCaptcha and Google reCAPTCHA (v2, and v3 with a
// minimum score) speak the same protocol; only their addresses and the form field their widgets fill
// differ. The verify URL is configurable, so that tests and air-gapped installations use their own.
//
// It fails closed: a token the provider refuses is ErrRefused, and anything that keeps the answer from
// being known (the provider unreachable, slow, answering 5xx or something that is not its JSON) is an
// error that is not ErrRefused, which the forms answer 502: no submission passes unchecked.
package botcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Provider names a CAPTCHA service.
type Provider string

const (
	Turnstile Provider = "turnstile"
	HCaptcha  Provider = "hcaptcha"
	ReCAPTCHA Provider = "recaptcha"
)

// Field is the form field the provider's widget fills with the token; the forms read the token from it,
// in a form post and in a JSON body alike.
func (p Provider) Field() string {
	switch p {
	case Turnstile:
		return "cf-turnstile-response"
	case HCaptcha:
		return "h-captcha-response"
	case ReCAPTCHA:
		return "g-recaptcha-response"
	}
	return ""
}

// DefaultVerifyURL is the provider's siteverify endpoint.
func (p Provider) DefaultVerifyURL() string {
	switch p {
	case Turnstile:
		return "https://challenges.cloudflare.com/turnstile/v0/siteverify"
	case HCaptcha:
		return "https://api.hcaptcha.com/siteverify"
	case ReCAPTCHA:
		return "https://www.google.com/recaptcha/api/siteverify"
	}
	return ""
}

// Valid reports a known provider.
func (p Provider) Valid() bool { return p.Field() != "" }

// ErrRefused is a token the provider says is not good: missing, malformed, expired, already used, for
// another site, or (reCAPTCHA v3) scored below the minimum.
var ErrRefused = errors.New("bot check: token refused")

// Timeout bounds one verification, so that a provider that hangs answers 502 promptly.
const Timeout = 3 * time.Second

// maxToken bounds what is sent to the provider: their tokens are about 2 KB at most.
const maxToken = 4096

// Verifier checks tokens for one site.
type Verifier struct {
	provider Provider
	secret   string
	url      string
	minScore float64
	action   string // "" takes any
	client   *http.Client
}

// New returns a verifier. verifyURL "" means the provider's own; minScore applies to reCAPTCHA v3
// answers, which carry a score (0 means the provider's pass is enough).
func New(p Provider, secret, verifyURL string, minScore float64, client *http.Client) *Verifier {
	if verifyURL == "" {
		verifyURL = p.DefaultVerifyURL()
	}
	if client == nil {
		client = &http.Client{Timeout: Timeout}
	}
	return &Verifier{provider: p, secret: secret, url: verifyURL, minScore: minScore, client: client}
}

// WithAction makes the verifier take only answers for action, the name the page gave the check
// (reCAPTCHA v3's grecaptcha.execute action, Turnstile's data-action): a token made for another of the
// site's pages (a sign-in, say) does not pass here. "" takes any.
func (v *Verifier) WithAction(action string) *Verifier {
	v.action = action
	return v
}

// Provider is the verifier's provider.
func (v *Verifier) Provider() Provider { return v.provider }

// answer is the siteverify answer the three providers share.
type answer struct {
	Success    bool     `json:"success"`
	ErrorCodes []string `json:"error-codes"`
	Score      *float64 `json:"score"`    // reCAPTCHA v3 only
	Hostname   string   `json:"hostname"` // where the token was solved
	Action     *string  `json:"action"`   // reCAPTCHA v3 and Turnstile
}

// Verify asks the provider about token, sent by the client at remoteIP (which the providers use as one
// more signal; "" to leave it out) from a page on host, the posting origin's. nil means the token is
// good: the provider says so, it was solved on host (a site key is public, so any page can show the
// widget), and, when an action is set, for that action.
func (v *Verifier) Verify(ctx context.Context, token, remoteIP, host string) error {
	if token == "" || len(token) > maxToken {
		return ErrRefused
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	form := url.Values{"secret": {v.secret}, "response": {token}}
	if remoteIP != "" {
		form.Set("remoteip", remoteIP)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.url, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("bot check %s: %w", v.provider, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := v.client.Do(req)
	if err != nil {
		return fmt.Errorf("bot check %s: %w", v.provider, redact(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return fmt.Errorf("bot check %s: reading the answer: %w", v.provider, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("bot check %s: the verifier answered HTTP %d", v.provider, resp.StatusCode)
	}
	var a answer
	if err := json.Unmarshal(body, &a); err != nil {
		return fmt.Errorf("bot check %s: the verifier's answer is not its JSON: %w", v.provider, err)
	}
	if !a.Success {
		// A bad secret is the configuration's fault, not the visitor's: say so, and fail closed (502).
		for _, c := range a.ErrorCodes {
			if c == "invalid-input-secret" || c == "missing-input-secret" || c == "sitekey-secret-mismatch" {
				return fmt.Errorf("bot check %s: the provider refused the secret (%s)", v.provider, c)
			}
		}
		// The provider's codes (timeout-or-duplicate, invalid-input-response...) tell a developer why.
		return fmt.Errorf("%w: the provider said %s", ErrRefused, strings.Join(a.ErrorCodes, ", "))
	}
	if a.Score != nil && *a.Score < v.minScore {
		return fmt.Errorf("%w: score %.2f below the minimum %.2f", ErrRefused, *a.Score, v.minScore)
	}
	switch {
	case a.Hostname == "":
		// Every provider names it; an answer without it (a proxy that drops it) cannot be checked.
		return fmt.Errorf("bot check %s: the verifier's answer names no hostname", v.provider)
	case !strings.EqualFold(a.Hostname, host):
		return fmt.Errorf("%w: solved on %q, not on %q", ErrRefused, a.Hostname, host)
	case v.action != "" && (a.Action == nil || *a.Action != v.action):
		got := "none"
		if a.Action != nil {
			got = fmt.Sprintf("%q", *a.Action)
		}
		return fmt.Errorf("%w: for action %s, not %q", ErrRefused, got, v.action)
	}
	return nil
}

// redact drops the request URL from a transport error: it is the operator's, but an error message is no
// place for a query, and the form body (with the secret) is never in it.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
