package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Webhook posts each message as JSON: "text" in Slack's mrkdwn (so a Slack, Mattermost or Rocket.Chat
// incoming webhook shows it as is) and "contact" with the fields for anything that wants structure.
type Webhook struct {
	url    string
	shown  string // what errors (and so logs) say instead of url: scheme and host only
	client *http.Client
}

// NewWebhook returns a sender posting to address with client (nil: a client that does not follow
// redirects, since a redirect usually means a wrong URL and would resend the body elsewhere).
func NewWebhook(address string, client *http.Client) *Webhook {
	if client == nil {
		client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return &Webhook{url: address, shown: redactURL(address), client: client}
}

// redactURL keeps the scheme and host of a webhook address. The path of a Slack (or Mattermost, …)
// incoming webhook is its credential, and Go's HTTP errors quote the whole URL.
func redactURL(address string) string {
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

// redact replaces the URL in a net/http error with its shown form.
func (w *Webhook) redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("webhook %s %s: %w", ue.Op, w.shown, ue.Err)
	}
	return err
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
	body, err := json.Marshal(WebhookPayload{Text: SlackText(m), Contact: m})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return w.redact(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "formsservice")
	resp, err := w.client.Do(req)
	if err != nil {
		return w.redact(err)
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
