package mail

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"

	"github.com/formsservice/formsservice/services/platform/config"
)

// ErrNoRelay says that no relay is configured (neither mail.smtp nor forms.delivery.smtp). It is not
// permanent: once a relay is configured, a retry sends.
var ErrNoRelay = errors.New("mail: no relay configured (set mail.smtp)")

// FromConfig returns the SMTP sender for the mail settings in force (config.MailSettings), or
// ErrNoRelay. It reads mail.smtp.caFile.
func FromConfig(c *config.Config) (*SMTP, error) {
	m, ok := c.MailSettings()
	if !ok {
		return nil, ErrNoRelay
	}
	s := m.SMTP
	o := SMTPOptions{
		Addr: s.Addr, Security: Security(s.TLS), Username: s.Username, PasswordFile: s.PasswordFile,
		Timeout: s.Timeout.D(), Defaults: Defaults{From: m.From, ReplyTo: m.ReplyTo, MessageIDDomain: m.MessageIDDomain},
	}
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("mail.smtp.caFile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("mail.smtp.caFile %s: no PEM certificate in it", s.CAFile)
		}
		host, _, _ := net.SplitHostPort(s.Addr)
		o.TLSConfig = &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12}
	}
	return NewSMTP(o)
}

// Live is a Sender that follows a configuration source, as the services' configuration reloads: each
// Send uses the relay in force. With no relay configured it hands the message to fallback (the dev
// server's outbox) or, when fallback is nil, fails with ErrNoRelay.
func Live(src config.Source, fallback Sender) Sender {
	return &live{src: src, fallback: fallback}
}

type live struct {
	src      config.Source
	fallback Sender
	built    atomic.Pointer[builtSender] // for the configuration it was built from
}

type builtSender struct {
	cfg *config.Config
	s   *SMTP
	err error
}

func (l *live) Send(ctx context.Context, m Message) error {
	cfg := l.src.Current()
	if cfg == nil {
		return ErrNoRelay
	}
	b := l.built.Load()
	if b == nil || b.cfg != cfg {
		b = &builtSender{cfg: cfg}
		b.s, b.err = FromConfig(cfg)
		if b.err == nil || errors.Is(b.err, ErrNoRelay) {
			l.built.Store(b) // an unreadable caFile is read again next time: a Secret may be mounted late
		}
	}
	if errors.Is(b.err, ErrNoRelay) && l.fallback != nil {
		return l.fallback.Send(ctx, m)
	}
	if b.err != nil {
		return b.err
	}
	return b.s.Send(ctx, m)
}
