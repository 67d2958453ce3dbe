package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	gomail "github.com/wneessen/go-mail"
	gosmtp "github.com/wneessen/go-mail/smtp"

	"github.com/formsservice/formsservice/services/platform/secretfile"
)

// Security is how the connection to the relay is protected.
type Security string

const (
	// StartTLS connects in plain text and requires the STARTTLS upgrade before anything else (port 587).
	StartTLS Security = "starttls"
	// ImplicitTLS speaks TLS from the first byte (SMTPS, port 465).
	ImplicitTLS Security = "tls"
	// Plain sends in clear text: for a relay on the same machine or in the same pod. A password is never
	// sent this way to a host that is not loopback.
	Plain Security = "none"
)

// DefaultTimeout bounds one Send whose context has no earlier deadline.
const DefaultTimeout = 30 * time.Second

// SMTPOptions configure an SMTP sender.
type SMTPOptions struct {
	// Addr is the relay's host:port.
	Addr     string
	Security Security
	// Username and PasswordFile enable SMTP AUTH PLAIN.
	// The file is read on every Send, so a rotated Secret applies without a restart.
	Username     string
	PasswordFile string
	// TLSConfig replaces the default (the system's roots, the name from Addr, TLS 1.2 or later): a
	// private CA, or a test's own certificate.
	TLSConfig *tls.Config
	// Timeout bounds one Send when ctx has no earlier deadline; default DefaultTimeout.
	Timeout time.Duration
	// Defaults apply to every message.
	Defaults Defaults
}

// SMTP sends each message in a connection of its own to one relay.
type SMTP struct {
	o    SMTPOptions
	host string
	port int
}

// NewSMTP checks o and returns the sender. It refuses, before any connection, a password over plain
// text to a host that is not loopback.
func NewSMTP(o SMTPOptions) (*SMTP, error) {
	host, portStr, err := net.SplitHostPort(o.Addr)
	if err != nil || host == "" {
		return nil, fmt.Errorf("smtp: addr %q: want host:port", o.Addr)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 {
		return nil, fmt.Errorf("smtp: addr %q: bad port", o.Addr)
	}
	switch o.Security {
	case StartTLS, ImplicitTLS, Plain:
	case "":
		o.Security = StartTLS
	default:
		return nil, fmt.Errorf("smtp: security %q: want starttls, tls or none", o.Security)
	}
	if o.Username != "" && o.Security == Plain && !isLoopbackHost(host) {
		return nil, errors.New("smtp: refusing to send a password without TLS to " + host + " (use STARTTLS or implicit TLS)")
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return &SMTP{o: o, host: host, port: port}, nil
}

// Send runs one SMTP session: connect, EHLO, STARTTLS or TLS, AUTH, MAIL, RCPT for each recipient,
// DATA, QUIT. Every read and write is bounded by ctx (its deadline and its cancellation) and by
// Timeout. A refusal of the transaction is a *RelayError; once the relay accepted the data the mail is
// delivered, whatever happens to the connection afterwards.
func (s *SMTP) Send(ctx context.Context, m Message) error {
	p, err := s.o.Defaults.Prepare(m)
	if err != nil {
		return err
	}
	msg, err := p.msg()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()

	// go-mail leaves the connection open when the greeting, STARTTLS or AUTH fails: close it here.
	var conn net.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	client, err := s.client(ctx, func(dialCtx context.Context, network, addr string) (net.Conn, error) {
		// dialCtx is go-mail's, cancelled once the greeting is done: the connection follows Send's ctx.
		c, err := dial(dialCtx, ctx, network, addr, s.o.Security == ImplicitTLS, s.tlsConfig())
		conn = c
		return c, err
	})
	if err != nil {
		return err
	}
	c, err := client.DialToSMTPClientWithContext(ctx)
	if err != nil {
		return fmt.Errorf("smtp %s: %w", s.o.Addr, err)
	}

	if err := transaction(c, msg); err != nil {
		return err
	}
	// The relay's 250 to the data took responsibility for the mail (RFC 5321 4.1.1.4): it is delivered.
	// A QUIT that fails afterwards changes nothing, and calling it a failure would send the mail again.
	_ = c.Quit()
	return nil
}

func (s *SMTP) tlsConfig() *tls.Config {
	if s.o.TLSConfig != nil {
		return s.o.TLSConfig
	}
	return &tls.Config{ServerName: s.host, MinVersion: tls.VersionTLS12}
}

func (s *SMTP) client(ctx context.Context, dial gomail.DialContextFunc) (*gomail.Client, error) {
	timeout := s.o.Timeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	opts := []gomail.Option{
		gomail.WithPort(s.port), gomail.WithTimeout(timeout), gomail.WithTLSConfig(s.tlsConfig()),
		gomail.WithoutNoop(), gomail.WithDialContextFunc(dial),
	}
	switch s.o.Security {
	case StartTLS:
		opts = append(opts, gomail.WithTLSPortPolicy(gomail.TLSMandatory))
	case ImplicitTLS:
		// dial speaks TLS; WithSSL only tells go-mail not to try STARTTLS on top of it.
		opts = append(opts, gomail.WithSSL(), gomail.WithTLSPortPolicy(gomail.NoTLS))
	case Plain:
		opts = append(opts, gomail.WithTLSPortPolicy(gomail.NoTLS))
	}
	if s.o.Username != "" {
		password, err := readPassword(s.o.PasswordFile)
		if err != nil {
			return nil, err
		}
		// PLAIN sends the password as it is, so only inside TLS — or to a loopback relay, which NewSMTP
		// checked: the NoEnc variants skip go-mail's own check, which knows only "localhost" and 127.0.0.1.
		auth := gomail.SMTPAuthPlain
		if s.o.Security == Plain {
			auth = gomail.SMTPAuthPlainNoEnc
		}
		opts = append(opts, gomail.WithSMTPAuth(auth), gomail.WithUsername(s.o.Username), gomail.WithPassword(password))
	}
	return gomail.NewClient(s.host, opts...)
}

// transaction sends msg on an open, greeted, authenticated connection.
func transaction(c *gosmtp.Client, msg *gomail.Msg) error {
	from, err := msg.GetSender(false)
	if err != nil {
		return invalid("from: %v", err)
	}
	rcpts, err := msg.GetRecipients()
	if err != nil {
		return invalid("to: %v", err)
	}
	if err := c.Mail(from); err != nil {
		return relayError("MAIL FROM", err)
	}
	// Every recipient or none: a refused one ends the transaction before DATA, so a retry never mails
	// the others twice. The error is permanent only when every refusal was.
	var refused error
	for _, r := range rcpts {
		if err := c.Rcpt(r); err != nil {
			e := relayError("RCPT TO", err)
			if refused == nil || !IsPermanent(e) {
				refused = e
			}
		}
	}
	if refused != nil {
		return refused
	}
	w, err := c.Data()
	if err != nil {
		return relayError("DATA", err)
	}
	if _, err := msg.WriteTo(w); err != nil {
		return fmt.Errorf("smtp: writing the message: %w", err)
	}
	if err := w.Close(); err != nil {
		return relayError("end of DATA", err)
	}
	return nil
}

// dial connects within dialCtx (with TLS from the first byte when implicit) on a connection whose every
// deadline is bounded by ctx, and which ctx's cancellation interrupts: go-mail sets its own deadlines from its
// timeout on each command, and the wrapper keeps them within ctx's.
func dial(dialCtx, ctx context.Context, network, addr string, implicitTLS bool, tc *tls.Config) (net.Conn, error) {
	var d net.Dialer
	raw, err := d.DialContext(dialCtx, network, addr)
	if err != nil {
		return nil, err
	}
	conn := &ctxConn{Conn: raw, ctx: ctx}
	conn.stop = context.AfterFunc(ctx, func() { _ = raw.SetDeadline(time.Unix(1, 0)) })
	if err := conn.SetDeadline(time.Time{}); err != nil {
		conn.Close()
		return nil, err
	}
	if !implicitTLS {
		return conn, nil
	}
	tlsConn := tls.Client(conn, tc)
	if err := tlsConn.HandshakeContext(dialCtx); err != nil {
		conn.Close()
		return nil, err
	}
	return tlsConn, nil
}

// ctxConn is a connection whose deadlines never pass ctx's, and which stays expired once ctx is done.
type ctxConn struct {
	net.Conn
	ctx  context.Context
	stop func() bool
}

func (c *ctxConn) bound(t time.Time) time.Time {
	if c.ctx.Err() != nil {
		return time.Unix(1, 0)
	}
	if dl, ok := c.ctx.Deadline(); ok && (t.IsZero() || dl.Before(t)) {
		return dl
	}
	return t
}

func (c *ctxConn) SetDeadline(t time.Time) error      { return c.Conn.SetDeadline(c.bound(t)) }
func (c *ctxConn) SetReadDeadline(t time.Time) error  { return c.Conn.SetReadDeadline(c.bound(t)) }
func (c *ctxConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(c.bound(t)) }

func (c *ctxConn) Close() error {
	c.stop()
	return c.Conn.Close()
}

func readPassword(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	p, err := secretfile.Read(path)
	if err != nil {
		return "", fmt.Errorf("smtp password: %w", err)
	}
	return p, nil
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
