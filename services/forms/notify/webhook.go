package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/stdwebhooks"
)

// Webhook posts each message as JSON: "text" in Slack's mrkdwn (so a Slack, Mattermost or Rocket.Chat
// incoming webhook shows it as is) and "contact" with the fields for anything that wants structure.
//
// Every call carries the Standard Webhooks headers (standardwebhooks.com): webhook-id, the message's
// stream ID, the same on every retry so that a receiver can drop a message it already has;
// webhook-timestamp, the attempt's time in Unix seconds; and, when a secret is set (WithSecret),
// webhook-signature "v1,<base64 HMAC-SHA256 of id.timestamp.body>", so that a receiver can tell our calls
// from anyone else's and refuse replays of old ones. During a rotation two secrets are set, and the
// header carries one signature per secret, separated by a space, as the spec allows: a receiver that
// knows either secret verifies the call.
type Webhook struct {
	url    string
	shown  string // what errors (and so logs) say instead of url: scheme and host only
	client *http.Client
	signer *stdwebhooks.Signer // no secrets: calls are not signed
	now    func() time.Time
	format string // config.WebhookFormatSlack or config.WebhookFormatMarkdown: the receiver's markup
}

// NewWebhook returns a sender posting to address with client (nil: a client that does not follow
// redirects, since a redirect usually means a wrong URL and would resend the body elsewhere).
func NewWebhook(address string, client *http.Client) *Webhook {
	if client == nil {
		client = stdwebhooks.NoRedirects(0)
	}
	return &Webhook{url: address, shown: stdwebhooks.RedactURL(address), client: client, signer: &stdwebhooks.Signer{}, now: time.Now, format: formatFor(address)}
}

// WithFormat sets the markup the receiver renders "text" in (forms.delivery.webhook.format); "" keeps
// the one its address suggests (formatFor).
func (w *Webhook) WithFormat(format string) *Webhook {
	if format != "" {
		w.format = format
	}
	return w
}

// formatFor guesses a receiver's markup from its address: Slack's incoming webhooks live on
// hooks.slack.com; Mattermost and Rocket.Chat, self-hosted anywhere, render Markdown, and so does
// most else that shows a text.
func formatFor(address string) string {
	if u, err := url.Parse(address); err == nil {
		if h := strings.ToLower(u.Hostname()); h == "slack.com" || strings.HasSuffix(h, ".slack.com") {
			return config.WebhookFormatSlack
		}
	}
	return config.WebhookFormatMarkdown
}

// WithSecret signs every call with each of secrets (the current one, and during a rotation the one it
// replaces), in the Standard Webhooks form: "whsec_" followed by the base64 of 24 to 64 random bytes
// (`echo whsec_$(openssl rand -base64 32)`). The error never repeats a secret.
func (w *Webhook) WithSecret(secrets ...string) (*Webhook, error) {
	for _, secret := range secrets {
		if err := w.signer.Add(secret); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Channel is "webhook".
func (w *Webhook) Channel() string { return "webhook" }

// WebhookPayload is the JSON body of a webhook call.
type WebhookPayload struct {
	Text    string  `json:"text"`
	Contact Message `json:"contact"`
}

// Send posts the message; any 2xx answer is success.
func (w *Webhook) Send(ctx context.Context, m Message) error {
	text := MarkdownText(m)
	if w.format == config.WebhookFormatSlack {
		text = SlackText(m)
	}
	body, err := json.Marshal(WebhookPayload{Text: text, Contact: m})
	if m.Form != nil {
		body, err = formPayload(m, w.format)
	}
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return stdwebhooks.Redact(err, w.shown)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "formsservice")
	if err := w.signer.SetHeaders(req.Header, m.ID, w.now(), body); err != nil {
		return err
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return stdwebhooks.Redact(err, w.shown)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("webhook answered %d: %s", resp.StatusCode, strings.TrimSpace(string(snippet)))
	}
	return nil
}

// SlackText renders the message in Slack's mrkdwn. What the sender typed is escaped (&, <, >), so that
// it cannot mention @channel or forge a link; the message itself is a block quote.
func SlackText(m Message) string {
	var b strings.Builder
	b.WriteString("*New contact message* — " + slackEscape(m.Topic) + "\n")
	b.WriteString(slackEscape(summary(m)))
	b.WriteString(">>> " + slackEscape(m.Text))
	return b.String()
}

var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func slackEscape(s string) string { return slackEscaper.Replace(s) }

// MarkdownText renders the message in Markdown (Mattermost, Rocket.Chat). What the sender typed is
// escaped so that it shows as typed: no link, image, emphasis, code, heading, list, quote or HTML of
// theirs renders; the message itself is a block quote.
func MarkdownText(m Message) string {
	var b strings.Builder
	b.WriteString("**New contact message** — " + markdownEscape(m.Topic) + "\n\n")
	for _, line := range strings.SplitAfter(summary(m), "\n") {
		b.WriteString(markdownEscape(line))
	}
	b.WriteString("\n")
	for _, line := range strings.Split(m.Text, "\n") {
		b.WriteString("> " + markdownEscape(line) + "\n")
	}
	return b.String()
}

// markdownEscape escapes every ASCII punctuation character, which CommonMark allows for each of them:
// &, < and > as entities (a backslash does not stop an HTML entity or tag everywhere), the rest with a
// backslash.
func markdownEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r < 0x80 && unicode.IsPunct(r) || r < 0x80 && unicode.IsSymbol(r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
