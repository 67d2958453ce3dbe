package notify

import (
	"context"
	"encoding/json"
	"fmt"
	stdmail "net/mail"
	"strings"
	"time"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// FormSubmission is a declared form's submission as its notifications show it (docs/forms.md "Your own
// forms"): the form, and its fields in the declared order with their labels, then the fields it kept
// without declaring them.
type FormSubmission struct {
	ID     string // the form's id
	Title  string // the form's title; default its id
	Fields []FormField
}

// FormField is one field's label and value: a string, a bool, a json.Number or a []string.
type FormField struct {
	Name, Label string
	Value       any
}

// FileLink is a submitted file as its notification carries it (a file field's value is a []FileLink):
// what it is, and a signed link that downloads it until Expires. Never the bytes (D77).
type FileLink struct {
	Name    string    `json:"name"`
	Size    int64     `json:"size"`
	Type    string    `json:"type"`
	SHA256  string    `json:"sha256"`
	URL     string    `json:"url,omitempty"`
	Expires time.Time `json:"expires,omitzero"`
}

// Text is the value as people read it: a list joined with commas, a bool as yes or no, a file as its
// name, size and type with its link, one a line.
func (f FormField) Text() string {
	switch v := f.Value.(type) {
	case []FileLink:
		lines := make([]string, len(v))
		for i, l := range v {
			lines[i] = fmt.Sprintf("%s (%d bytes, %s)", l.Name, l.Size, l.Type)
			if l.URL != "" {
				lines[i] += fmt.Sprintf(" %s (until %s)", l.URL, l.Expires.UTC().Format(time.RFC3339))
			}
		}
		return strings.Join(lines, "\n")
	case string:
		return v
	case bool:
		if v {
			return "yes"
		}
		return "no"
	case []string:
		return strings.Join(v, ", ")
	case nil:
		return ""
	}
	return fmt.Sprint(f.Value)
}

// Get returns the text of the field name ("" when absent).
func (s *FormSubmission) Get(name string) string {
	for _, f := range s.Fields {
		if f.Name == name {
			return f.Text()
		}
	}
	return ""
}

func (s *FormSubmission) title() string {
	if s.Title != "" {
		return s.Title
	}
	return s.ID
}

// formSummary is the plain-text list of a submission's fields, one "Label: value" per line (a long text
// indented under its label), then where and when it came from.
func formSummary(m Message) string {
	var b strings.Builder
	for _, f := range m.Form.Fields {
		v := f.Text()
		if strings.Contains(v, "\n") {
			fmt.Fprintf(&b, "%s:\n    %s\n", f.Label, strings.ReplaceAll(v, "\n", "\n    "))
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", f.Label, v)
	}
	if m.Origin != "" {
		fmt.Fprintf(&b, "Sent from: %s\n", m.Origin)
	}
	fmt.Fprintf(&b, "Received: %s\n", m.ReceivedAt.UTC().Format(time.RFC3339))
	return b.String()
}

// FormWebhookPayload is the JSON body of a declared form's webhook call: a chat's "text" and the
// submission with its fields as an object by name (a list for a many-of field, a bool for a checkbox,
// a number for a number field).
type FormWebhookPayload struct {
	Text       string          `json:"text"`
	Submission FormWebhookBody `json:"submission"`
}

// FormWebhookBody is the submission in a FormWebhookPayload.
type FormWebhookBody struct {
	ID         string          `json:"id"`
	Form       string          `json:"form"`
	ReceivedAt time.Time       `json:"received_at"`
	Origin     string          `json:"origin,omitempty"`
	Fields     json.RawMessage `json:"fields"`
}

func formPayload(m Message, format string) ([]byte, error) {
	fields := []byte{'{'}
	for i, f := range m.Form.Fields {
		if i > 0 {
			fields = append(fields, ',')
		}
		k, _ := json.Marshal(f.Name)
		v, err := json.Marshal(f.Value)
		if err != nil {
			return nil, err
		}
		fields = append(append(append(fields, k...), ':'), v...)
	}
	fields = append(fields, '}')
	return json.Marshal(FormWebhookPayload{Text: formChatText(m, format), Submission: FormWebhookBody{
		ID: m.ID, Form: m.Form.ID, ReceivedAt: m.ReceivedAt, Origin: m.Origin, Fields: fields}})
}

// formChatText renders the submission for a chat, escaped for its markup as the contact messages are.
func formChatText(m Message, format string) string {
	var b strings.Builder
	if format == config.WebhookFormatSlack {
		b.WriteString("*New submission* — " + slackEscape(m.Form.title()) + "\n")
		b.WriteString(slackEscape(formSummary(m)))
		return b.String()
	}
	b.WriteString("**New submission** — " + markdownEscape(m.Form.title()) + "\n\n")
	for _, line := range strings.SplitAfter(formSummary(m), "\n") {
		b.WriteString(markdownEscape(line))
	}
	return b.String()
}

// formMail is a declared form's submission as a mail to the team: the form's title and the sender (a
// name field, else the address) in the subject, the fields in the body, the sender's address as
// Reply-To.
func formMail(cfg config.SMTP, m Message) mail.Message {
	who := m.Name
	if who == "" {
		who = m.Email
	}
	subject := strings.TrimSpace(cfg.Subject + " " + m.Form.title())
	if who != "" {
		subject += ": " + who
	}
	msg := mail.Message{To: cfg.To, Subject: subject, Text: formSummary(m), Date: m.ReceivedAt, ID: messageID(m)}
	if m.Email != "" {
		msg.ReplyTo = (&stdmail.Address{Name: m.Name, Address: m.Email}).String()
	}
	return msg
}

// Autoresponder mails the sender of a declared form's submission (config.Autoresponder) through the
// shared mail component: to the address in its e-mail field, with the form's subject and text, the
// text's {{field}} placeholders filled in.
//
// A public form that mails whatever address it is given could mail a stranger again and again from the
// team's domain: an address gets at most one answer per AnswerEvery (first asks once, which the
// delivery worker backs by the store).
type Autoresponder struct {
	via   mail.Sender
	cfg   config.Autoresponder
	to    string // the e-mail field
	limit AnswerLimit
}

// AnswerLimit keeps the answers to one address apart: Take reports whether address may have an answer
// now (none within AnswerEvery) and records it; Release forgets a record whose mail could not be sent,
// so that the retry sends it.
type AnswerLimit interface {
	Take(ctx context.Context, address string) (bool, error)
	Release(ctx context.Context, address string)
}

// AnswerEvery is the least time between two answers to one address.
const AnswerEvery = 24 * time.Hour

// NewAutoresponder answers the senders of form f through via, within limit.
func NewAutoresponder(via mail.Sender, f config.DeclaredForm, limit AnswerLimit) *Autoresponder {
	return &Autoresponder{via: via, cfg: *f.Autoresponder, to: f.Autoresponder.ResponderField(f), limit: limit}
}

// Channel names the channel.
func (a *Autoresponder) Channel() string { return "autoresponder" }

// Send mails the sender; a submission without an address (an optional field left empty) has no one to
// answer, and is done.
func (a *Autoresponder) Send(ctx context.Context, m Message) error {
	if m.Form == nil {
		return nil
	}
	to := m.Form.Get(a.to)
	if to == "" {
		return nil
	}
	if ok, err := a.limit.Take(ctx, to); err != nil || !ok {
		return err // answered lately: nothing more to send
	}
	text := config.FillPlaceholders(a.cfg.Text, m.Form.Get)
	err := a.via.Send(ctx, mail.Message{
		To: []string{to}, Subject: a.cfg.Subject, Text: text, Date: m.ReceivedAt,
		ID: "auto." + messageID(m),
	})
	if err != nil {
		a.limit.Release(ctx, to)
	}
	return err
}
