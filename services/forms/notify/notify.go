// Package notify sends a contact message to the operating team: by mail through an SMTP relay, and as a
// JSON webhook with a Slack-compatible "text" field. It knows nothing of Redis or retries; the forms
// service's delivery worker calls it.
package notify

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Message is one contact message as the operating team sees it.
type Message struct {
	// ID is the message's ID (its stream ID, kept by a retried dead letter); it is the webhook-id and
	// makes the mail's Message-ID, so a duplicate after a retry is recognisable.
	ID string `json:"id"`
	// Deployment is the store's identity: part of the Message-ID, so that two deployments, whose stream
	// IDs can coincide, never share one. Not sent.
	Deployment   string    `json:"-"`
	ReceivedAt   time.Time `json:"received_at"`
	Name         string    `json:"name"`
	Email        string    `json:"email"`
	Organization string    `json:"organization,omitempty"`
	Topic        string    `json:"topic"`
	Text         string    `json:"message"`
	Origin       string    `json:"origin,omitempty"`
	// Form, for a declared form's submission, is the form and its fields (form.go); Name, Email,
	// Organization, Topic and Text are then empty but for Email (the sender's address, if the form
	// has an e-mail field) and Name (a "name" field's value, if any). Nil for a contact message.
	Form *FormSubmission `json:"-"`
}

// Sender delivers a message to one channel.
type Sender interface {
	// Channel names the channel in metrics and logs: "smtp" or "webhook".
	Channel() string
	// Send delivers m or returns why not; it honours ctx's deadline.
	Send(ctx context.Context, m Message) error
}

// summary is the plain-text rendering shared by mail and webhook.
func summary(m Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Name: %s\nE-mail: %s\n", m.Name, m.Email)
	if m.Organization != "" {
		fmt.Fprintf(&b, "Organization: %s\n", m.Organization)
	}
	fmt.Fprintf(&b, "Topic: %s\n", m.Topic)
	if m.Origin != "" {
		fmt.Fprintf(&b, "Sent from: %s\n", m.Origin)
	}
	fmt.Fprintf(&b, "Received: %s\n", m.ReceivedAt.UTC().Format(time.RFC3339))
	return b.String()
}
