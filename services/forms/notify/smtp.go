package notify

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/secretfile"
)

// SMTP sends each message as a plain-text mail through a relay, with Reply-To set to the sender so the
// team can answer from their mail client.
type SMTP struct {
	cfg config.SMTP
	// TLSConfig overrides the STARTTLS configuration (tests trust their own certificate).
	TLSConfig *tls.Config
}

// NewSMTP returns a sender for the relay cfg.
func NewSMTP(cfg config.SMTP) *SMTP { return &SMTP{cfg: cfg} }

// Channel is "smtp".
func (s *SMTP) Channel() string { return "smtp" }

// Send runs one SMTP transaction: EHLO, STARTTLS when configured, AUTH PLAIN when configured, MAIL,
// RCPT per recipient, DATA. Every step is bounded by ctx's deadline.
func (s *SMTP) Send(ctx context.Context, m Message) error {
	host, _, err := net.SplitHostPort(s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("smtp addr %q: %w", s.cfg.Addr, err)
	}
	if s.cfg.Username != "" && !s.cfg.StartTLS && !isLoopback(host) {
		return errors.New("smtp: refusing to send a password without STARTTLS (set startTLS)")
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) }) // cancellation too
	defer stop()

	var c *smtp.Client
	if s.cfg.StartTLS {
		tc := s.TLSConfig
		if tc == nil {
			tc = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
		}
		if c, err = smtp.NewClientStartTLS(conn, tc); err != nil {
			conn.Close()
			return err
		}
	} else {
		c = smtp.NewClient(conn)
	}
	defer c.Close()

	if s.cfg.Username != "" {
		password, err := readSecret(s.cfg.PasswordFile)
		if err != nil {
			return err
		}
		if err := c.Auth(sasl.NewPlainClient("", s.cfg.Username, password)); err != nil {
			return err
		}
	}
	msg, err := s.render(m)
	if err != nil {
		return err
	}
	to := make([]string, len(s.cfg.To))
	for i, t := range s.cfg.To {
		to[i] = bareAddress(t)
	}
	if err := c.SendMail(bareAddress(s.cfg.From), to, bytes.NewReader(msg)); err != nil {
		return err
	}
	return c.Quit()
}

// render writes the RFC 5322 message. Everything the sender typed is either encoded (the subject, as an
// RFC 2047 word, so a line break cannot inject a header) or in the quoted-printable body.
func (s *SMTP) render(m Message) ([]byte, error) {
	var b bytes.Buffer
	subject := fmt.Sprintf("%s %s: %s", s.cfg.Subject, m.Topic, m.Name)
	if org := m.Organization; org != "" {
		subject += " (" + org + ")"
	}
	from := s.cfg.From
	if a, err := mail.ParseAddress(from); err == nil {
		from = a.String()
	}
	header := [][2]string{
		{"From", from},
		{"To", strings.Join(s.cfg.To, ", ")},
		{"Reply-To", (&mail.Address{Name: m.Name, Address: m.Email}).String()},
		{"Subject", mime.QEncoding.Encode("utf-8", oneLine(subject))},
		{"Date", m.ReceivedAt.Format(time.RFC1123Z)},
		{"Message-ID", "<" + m.ID + "." + domainOf(s.cfg.From) + ">"},
		{"MIME-Version", "1.0"},
		{"Content-Type", "text/plain; charset=utf-8"},
		{"Content-Transfer-Encoding", "quoted-printable"},
		{"Auto-Submitted", "auto-generated"},
	}
	for _, h := range header {
		b.WriteString(h[0] + ": " + h[1] + "\r\n")
	}
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	if _, err := qp.Write([]byte(summary(m) + "\n" + m.Text + "\n")); err != nil {
		return nil, err
	}
	if err := qp.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' || r == '\t' {
			return ' '
		}
		return r
	}, s)
}

// bareAddress turns "Team <team@example.com>" into the envelope's team@example.com.
func bareAddress(addr string) string {
	if a, err := mail.ParseAddress(addr); err == nil {
		return a.Address
	}
	return addr
}

func domainOf(addr string) string {
	addr = bareAddress(addr)
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return addr[i+1:]
	}
	return "formsservice.invalid"
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func readSecret(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	p, err := secretfile.Read(path)
	if err != nil {
		return "", fmt.Errorf("smtp password: %w", err)
	}
	return p, nil
}
