// Package stdwebhooks is what every webhook the services send shares: the Standard Webhooks headers
// (standardwebhooks.com) signed with one secret or, during a rotation, two; an HTTP client that follows
// no redirect; and a webhook address shown in errors without its path, which is often its credential.
// The forms' notifications (services/forms/notify) and the audit sink (services/auth/auditsink) use it.
package stdwebhooks

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/formsservice/formsservice/services/platform/config"
)

// Signer signs calls with each of its secrets: the current one and, during a rotation, the one it
// replaces. The signature header then carries one "v1,…" per secret, separated by a space, as the spec
// allows, so that a receiver that knows either secret verifies the call. A Signer without secrets
// sets the id and timestamp headers only.
type Signer struct {
	signers []*standardwebhooks.Webhook
}

// NewSigner checks each secret ("whsec_" and the base64 of 24 to 64 random bytes, config.CheckWebhookSecret)
// and returns their Signer. The error never repeats a secret.
func NewSigner(secrets ...string) (*Signer, error) {
	s := &Signer{}
	for _, secret := range secrets {
		if err := s.Add(secret); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Add signs calls with secret too. The error never repeats it.
func (s *Signer) Add(secret string) error {
	if err := config.CheckWebhookSecret(secret); err != nil {
		return err
	}
	w, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return err
	}
	s.signers = append(s.signers, w)
	return nil
}

// Signs reports whether calls carry a signature.
func (s *Signer) Signs() bool { return s != nil && len(s.signers) > 0 }

// SetHeaders sets webhook-id (id, the same on every retry so that a receiver drops a message it has),
// webhook-timestamp (at, the attempt's time) and, with secrets, webhook-signature over id, at and body.
func (s *Signer) SetHeaders(h http.Header, id string, at time.Time, body []byte) error {
	h.Set(standardwebhooks.HeaderWebhookID, id)
	h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(at.Unix(), 10))
	if !s.Signs() {
		return nil
	}
	sigs := make([]string, len(s.signers))
	for i, w := range s.signers {
		var err error
		if sigs[i], err = w.Sign(id, at, body); err != nil {
			return err
		}
	}
	h.Set(standardwebhooks.HeaderWebhookSignature, strings.Join(sigs, " "))
	return nil
}

// NoRedirects is an HTTP client that does not follow redirects: a redirect usually means a wrong URL,
// and following it would send the body (and its signature) elsewhere.
func NoRedirects(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// RedactURL keeps the scheme and host of a webhook address. The path of a Slack (or Mattermost, …)
// incoming webhook is its credential, and Go's HTTP errors quote the whole URL.
func RedactURL(address string) string {
	u, err := url.Parse(address)
	if err != nil || u.Host == "" {
		return "the webhook URL"
	}
	shown := u.Scheme + "://" + u.Host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		shown += "/…"
	}
	return shown
}

// Redact replaces the URL in a net/http error with shown (RedactURL's form).
func Redact(err error, shown string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("webhook %s %s: %w", ue.Op, shown, ue.Err)
	}
	return err
}
