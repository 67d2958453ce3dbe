package config

import (
	"errors"
	"fmt"
	"net"
	"net/mail"
	"strconv"
	"strings"
	"time"
)

// Mail configures the transactional mail the services send themselves: auth's verification, reset and
// notice mails, the forms' confirmation mails. Without smtp, the services use the forms' relay
// (forms.delivery.smtp) when there is one (see MailSettings), and the dev server its outbox.
type Mail struct {
	// From is the sender of every mail, "Acme <no-reply@acme.example>". Required with smtp; without it,
	// the forms relay's from.
	From string `json:"from,omitempty"`
	// ReplyTo, when set, is where replies go (a support address).
	ReplyTo string `json:"replyTo,omitempty"`
	// MessageIDDomain is the right-hand side of every Message-ID; default the From address's domain.
	MessageIDDomain string    `json:"messageIDDomain,omitempty"`
	SMTP            *MailSMTP `json:"smtp,omitempty"`
}

// MailSMTP is the relay the mail goes through.
type MailSMTP struct {
	// Addr is host:port of the relay.
	Addr string `json:"addr"`
	// TLS is "starttls" (the default: port 587), "tls" (TLS from the first byte: port 465) or "none",
	// which is allowed only to a loopback address (a relay in the same pod or on the same machine).
	TLS string `json:"tls,omitempty"`
	// Username and PasswordFile (a mounted Secret, read for every mail) enable SMTP AUTH.
	Username     string `json:"username,omitempty"`
	PasswordFile string `json:"passwordFile,omitempty"`
	// CAFile is a PEM bundle (a mounted Secret) of the authorities the relay's certificate must chain
	// to, instead of the system's.
	CAFile string `json:"caFile,omitempty"`
	// Timeout bounds one mail's whole SMTP session. Default 10s.
	Timeout Duration `json:"timeout,omitempty"`
}

// The values of MailSMTP.TLS.
const (
	MailTLSStartTLS = "starttls"
	MailTLSImplicit = "tls"
	MailTLSNone     = "none"
)

// DefaultMailTimeout bounds one mail's SMTP session when mail.smtp.timeout is not set.
const DefaultMailTimeout = 10 * time.Second

func (m *Mail) applyDefaults() {
	if s := m.SMTP; s != nil {
		if s.TLS == "" {
			s.TLS = MailTLSStartTLS
		}
		if s.Timeout == 0 {
			s.Timeout = Duration(DefaultMailTimeout)
		}
	}
}

// Valid reports whether m passes the mail block's checks, such as clear text only to a loopback relay.
func (m Mail) Valid() bool { return len(m.validate()) == 0 }

func (m Mail) validate() []error {
	var errs []error
	if m.From != "" {
		if _, err := mail.ParseAddress(m.From); err != nil {
			errs = append(errs, fmt.Errorf("mail.from %q: not an address (%v); write \"Name <address>\" or the bare address", m.From, err))
		}
	}
	if m.ReplyTo != "" {
		if _, err := mail.ParseAddress(m.ReplyTo); err != nil {
			errs = append(errs, fmt.Errorf("mail.replyTo %q: not an address (%v)", m.ReplyTo, err))
		}
	}
	if d := m.MessageIDDomain; d != "" && !validDomain(d) {
		errs = append(errs, fmt.Errorf("mail.messageIDDomain %q: not a domain name", d))
	}
	s := m.SMTP
	if s == nil {
		return errs
	}
	if m.From == "" {
		errs = append(errs, errors.New("mail.from: required with mail.smtp (the sender of every mail, such as \"Acme <no-reply@acme.example>\")"))
	}
	host, port, err := net.SplitHostPort(s.Addr)
	if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
		errs = append(errs, fmt.Errorf("mail.smtp.addr %q: want host:port, such as smtp.example.com:587", s.Addr))
	}
	switch s.TLS {
	case "", MailTLSStartTLS, MailTLSImplicit:
	case MailTLSNone:
		if host != "" && !loopbackHost(host) {
			errs = append(errs, fmt.Errorf("mail.smtp.tls: none sends mail in clear text, so it is allowed only to a loopback relay, not %s: use starttls or tls", host))
		}
		if s.CAFile != "" {
			errs = append(errs, errors.New("mail.smtp.caFile: set, but tls is none"))
		}
	default:
		errs = append(errs, fmt.Errorf("mail.smtp.tls %q: want starttls, tls or none", s.TLS))
	}
	if (s.Username == "") != (s.PasswordFile == "") {
		errs = append(errs, errors.New("mail.smtp: username and passwordFile go together (SMTP AUTH needs both)"))
	}
	for key, f := range map[string]string{"passwordFile": s.PasswordFile, "caFile": s.CAFile} {
		if f != "" && (strings.TrimSpace(f) != f || strings.ContainsRune(f, 0)) {
			errs = append(errs, fmt.Errorf("mail.smtp.%s: %q is not a usable file name (leading or trailing spaces, or a NUL)", key, f))
		}
	}
	if s.Timeout < 0 {
		errs = append(errs, errors.New("mail.smtp.timeout: must not be negative"))
	}
	return errs
}

// MailSettings are the mail settings in force: the mail block when it names a relay; otherwise the
// forms' relay (forms.delivery.smtp), with mail.from and mail.replyTo when set; ok is false when there
// is no relay at all (the dev server then uses its outbox, and a production service sends nothing).
func (c *Config) MailSettings() (m Mail, ok bool) {
	m = c.Mail
	if m.SMTP != nil {
		return m, true
	}
	f := c.Forms.Delivery.SMTP
	if f == nil {
		return m, false
	}
	if m.From == "" {
		m.From = f.From
	}
	m.SMTP = &MailSMTP{Addr: f.Addr, TLS: f.Security(), Username: f.Username, PasswordFile: f.PasswordFile, Timeout: Duration(DefaultMailTimeout)}
	return m, true
}

// validDomain accepts an ASCII host name: labels of letters, digits and hyphens, joined by dots.
func validDomain(d string) bool {
	if len(d) > 253 {
		return false
	}
	for _, label := range strings.Split(d, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
