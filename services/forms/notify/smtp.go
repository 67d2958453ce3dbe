package notify

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base32"
	"fmt"
	stdmail "net/mail"
	"strings"
	"time"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// SMTP sends each message as a plain-text mail through a relay, with Reply-To set to the sender so the
// team can answer from their mail client. It is the platform's mail component (services/platform/mail)
// configured from forms.delivery.smtp: a relay's permanent refusal comes back as an error whose
// Permanent() is true (mail.IsPermanent).
type SMTP struct {
	cfg config.SMTP
	// TLSConfig overrides the STARTTLS configuration (tests trust their own certificate).
	TLSConfig *tls.Config
	via       mail.Sender // set by NewMail: the mail goes there instead of to cfg's relay
}

// NewSMTP returns a sender for the relay cfg.
func NewSMTP(cfg config.SMTP) *SMTP { return &SMTP{cfg: cfg} }

// NewMail returns a sender that hands the same contact mail to via (the dev server's outbox) instead of
// dialing a relay: cfg gives its recipients and subject prefix, its From may stay empty (via's own).
func NewMail(via mail.Sender, cfg config.SMTP) *SMTP { return &SMTP{cfg: cfg, via: via} }

// Channel is "smtp".
func (s *SMTP) Channel() string { return "smtp" }

// Send runs one SMTP transaction (TLS as config.SMTP.Security says, AUTH when configured), bounded by
// ctx's deadline. A password is never sent without STARTTLS to a relay that is not loopback.
func (s *SMTP) Send(ctx context.Context, m Message) error {
	if s.via != nil {
		return s.via.Send(ctx, s.mail(m))
	}
	sender, err := mail.NewSMTP(mail.SMTPOptions{
		Addr: s.cfg.Addr, Security: mail.Security(s.cfg.Security()), Username: s.cfg.Username, PasswordFile: s.cfg.PasswordFile,
		TLSConfig: s.TLSConfig, Defaults: mail.Defaults{From: s.cfg.From},
	})
	if err != nil {
		return err
	}
	return sender.Send(ctx, s.mail(m))
}

// mail is the contact message as a mail. Everything the sender typed is either in the subject (which
// the component encodes and folds, so a line break cannot inject a header) or in the body.
func (s *SMTP) mail(m Message) mail.Message {
	if m.Form != nil {
		return formMail(s.cfg, m)
	}
	subject := fmt.Sprintf("%s %s: %s", s.cfg.Subject, m.Topic, m.Name)
	if org := m.Organization; org != "" {
		subject += " (" + org + ")"
	}
	return mail.Message{
		To:      s.cfg.To,
		ReplyTo: (&stdmail.Address{Name: m.Name, Address: m.Email}).String(),
		Subject: subject,
		Text:    summary(m) + "\n" + m.Text + "\n",
		Date:    m.ReceivedAt,
		ID:      messageID(m),
	}
}

// messageID is the left part of the mail's Message-ID: the message's ID, which every retry keeps (also a
// dead letter handed back), and a hash of the store's identity and the message's content, because an ID
// is unique only within its stream: two deployments' streams count from the same clock. The same stored
// message gives the same Message-ID on every attempt, from every replica, so the team's mail client can
// drop a duplicate; two messages, of one deployment or of two, never share one.
func messageID(m Message) string {
	h := sha256.New()
	for _, f := range []string{m.Deployment, m.ID, m.ReceivedAt.UTC().Format(time.RFC3339Nano), m.Name, m.Email, m.Organization, m.Topic, m.Text, m.Origin} {
		fmt.Fprintf(h, "%d:%s", len(f), f) // length-prefixed: no two field lists hash alike
	}
	if m.Form != nil {
		for _, f := range m.Form.Fields {
			v := f.Text()
			fmt.Fprintf(h, "%d:%s%d:%s", len(f.Name), f.Name, len(v), v)
		}
	}
	sum := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(h.Sum(nil)[:10]))
	return m.ID + "." + sum
}
