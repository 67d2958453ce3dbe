// Package mail is the one transactional mail component of the platform: a Message with a text part and
// an optional HTML part, composed into RFC 5322 / MIME by wneessen/go-mail (headers encoded per RFC 2047
// and folded, no line over 998 characters), a Message-ID of the form <id@domain>, a Sender interface,
// an SMTP sender (STARTTLS, implicit TLS or plain to a loopback relay; SMTP AUTH with a password from a
// file; every step bounded by the context) whose relay refusals are classified permanent (5xx) or
// temporary, and a renderer that puts each service's content templates into one accessible, branded
// layout with a plain-text twin. docs/architecture.md, D9, says why it is built this way.
package mail

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	stdmail "net/mail"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/formsservice/formsservice/services/platform/email"
)

// Sender delivers one message. An error whose relay answer was a permanent refusal satisfies
// IsPermanent; any other error (a 4xx, a network failure, a timeout) is worth retrying.
type Sender interface {
	Send(ctx context.Context, m Message) error
}

// Message is one transactional mail.
type Message struct {
	// From is "Name <address>" or a bare address; empty means the sender's configured From.
	From string
	// To are the recipients, "Name <address>" or bare; at least one.
	To []string
	// ReplyTo, when set, is where replies go ("Name <address>" or bare).
	ReplyTo string
	Subject string
	// Text is the plain-text part; required (it is what a text-only client and a screen reader get).
	Text string
	// HTML, when set, makes the mail multipart/alternative with Text as the first part.
	HTML string
	// ID makes the Message-ID <ID@domain>: pass the same stable id (a stored record's id) on every
	// attempt and a retried mail keeps its Message-ID, so receivers can drop the duplicate. Characters
	// outside RFC 5322's dot-atom are replaced; empty means a random one per message.
	ID string
	// Date defaults to the time of sending.
	Date time.Time
	// Unsubscribe, an https URL (http only to a loopback host, for the dev server), adds
	// List-Unsubscribe with it and List-Unsubscribe-Post: List-Unsubscribe=One-Click (RFC 8058): the
	// receiver's mail client POSTs to it to unsubscribe.
	Unsubscribe string
	// Headers are further headers (Auto-Submitted, X-…). The headers the component writes itself are
	// refused here (see ownedHeaders).
	Headers map[string]string
}

// Defaults are what a sender fills into a Message left empty.
type Defaults struct {
	// From is the sender of every message without its own.
	From string
	// ReplyTo applies to messages without their own.
	ReplyTo string
	// MessageIDDomain is the right-hand side of every Message-ID; default the From address's domain.
	MessageIDDomain string
	// Now is the clock for Date; default time.Now.
	Now func() time.Time
}

// Prepared is a message with its defaults applied and checked: what is written and sent.
type Prepared struct {
	Message
	// MessageID is the whole header value, <id@domain>.
	MessageID string
	// EnvelopeFrom and Recipients are the SMTP envelope: bare addresses, domains in ASCII.
	EnvelopeFrom string
	Recipients   []string
}

// ErrInvalid is wrapped by every error that says the message itself is wrong (no recipient, a bad
// address, a refused header): sending it again cannot help, so it is permanent too.
var ErrInvalid = errors.New("invalid mail")

func invalid(format string, a ...any) error {
	return &invalidError{fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)}
}

type invalidError struct{ error }

func (e *invalidError) Unwrap() error { return e.error }

// Permanent is true: a malformed message fails the same way every time.
func (e *invalidError) Permanent() bool { return true }

// maxDisplayName bounds a display name in bytes. An ASCII name is written as one quoted string, which
// cannot be folded, so without a bound a long name would make a header line longer than 998.
const maxDisplayName = 200

// Prepare applies d to m and checks it: the addresses parse, there is a recipient and a text part,
// the extra headers are allowed. It fixes the Message-ID and the Date, so a message prepared once and
// shown (the dev outbox) is exactly what would be sent.
func (d Defaults) Prepare(m Message) (*Prepared, error) {
	if m.From == "" {
		m.From = d.From
	}
	if m.ReplyTo == "" {
		m.ReplyTo = d.ReplyTo
	}
	if m.Date.IsZero() {
		now := time.Now
		if d.Now != nil {
			now = d.Now
		}
		m.Date = now()
	}
	p := &Prepared{}
	from, err := parseAddress("from", m.From)
	if err != nil {
		return nil, err
	}
	m.From, p.EnvelopeFrom = from.String(), from.Address
	if len(m.To) == 0 {
		return nil, invalid("no recipient")
	}
	to := make([]string, len(m.To))
	for i, s := range m.To {
		a, err := parseAddress("to", s)
		if err != nil {
			return nil, err
		}
		to[i] = a.String()
		p.Recipients = append(p.Recipients, a.Address)
	}
	m.To = to
	if m.ReplyTo != "" {
		a, err := parseAddress("reply-to", m.ReplyTo)
		if err != nil {
			return nil, err
		}
		m.ReplyTo = a.String()
	}
	if strings.TrimSpace(m.Text) == "" {
		return nil, invalid("no text part")
	}
	if !utf8.ValidString(m.Subject) || !utf8.ValidString(m.Text) || !utf8.ValidString(m.HTML) {
		return nil, invalid("subject or body is not UTF-8")
	}
	m.Subject = oneLine(m.Subject)
	if m.Unsubscribe != "" {
		if err := checkUnsubscribe(m.Unsubscribe); err != nil {
			return nil, err
		}
	}
	for k, v := range m.Headers {
		if err := checkHeader(k, v); err != nil {
			return nil, err
		}
	}
	domain := d.MessageIDDomain
	if domain == "" {
		domain = p.EnvelopeFrom[strings.LastIndexByte(p.EnvelopeFrom, '@')+1:]
	}
	if m.ID == "" {
		m.ID = randomID()
	}
	p.MessageID = MessageID(m.ID, domain)
	p.Message = m
	return p, nil
}

// maxIDLen bounds the left part of a Message-ID.
const maxIDLen = 128

// MessageID is the Message-ID header value for a stable id: <id@domain>, with every character of id
// outside RFC 5322's atext (and dots that would break a dot-atom) replaced by '-'; an id longer than
// maxIDLen is replaced by its hash.
func MessageID(id, domain string) string {
	var b strings.Builder
	for _, r := range id {
		if r < utf8.RuneSelf && isAtext(byte(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	local := strings.Trim(b.String(), ".")
	for strings.Contains(local, "..") {
		local = strings.ReplaceAll(local, "..", ".")
	}
	if len(local) > maxIDLen { // still stable and unique, and the header stays one short line
		sum := sha256.Sum256([]byte(id))
		local = strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:20]))
	}
	if local == "" {
		local = randomID()
	}
	return "<" + local + "@" + domain + ">"
}

// isAtext is RFC 5322's atext, plus the dot of a dot-atom.
func isAtext(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-/=?^_`{|}~.", c) >= 0
}

// randomID is 128 random bits: unique across instances, replicas and streams without coordination.
func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// parseAddress reads "Name <addr>" or a bare address; the address must pass the platform's rule (D3) and
// is kept with its domain in ASCII, as a header and the SMTP envelope need it.
func parseAddress(field, s string) (*stdmail.Address, error) {
	a, err := stdmail.ParseAddress(s)
	if err != nil {
		return nil, invalid("%s %q: %v", field, s, err)
	}
	// The platform's rule (D3) gives an internationalised domain its ASCII form; an address it does not
	// take but RFC 5322 does (forms@localhost in an old configuration) is kept when it is ASCII already.
	if ascii, ok := email.ASCII(a.Address); ok {
		a.Address = ascii
	} else if !isASCII(a.Address) {
		return nil, invalid("%s %q: not a usable address", field, a.Address)
	}
	a.Name = truncate(oneLine(a.Name), maxDisplayName)
	return a, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// oneLine turns line breaks and tabs into spaces: a header value is one logical line.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '\r', '\n', '\t', '\v', '\f', 0x85, 0x2028, 0x2029:
			return ' '
		}
		return r
	}, s)
}

func checkUnsubscribe(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || strings.ContainsAny(s, " <>,\r\n") {
		return invalid("unsubscribe URL %q: not an absolute URL", s)
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && isLoopbackHost(u.Hostname())) {
		return invalid("unsubscribe URL %q: RFC 8058 one-click unsubscribe needs https", s)
	}
	return nil
}

// ownedHeaders are written by the component from the Message's fields; Headers may not set them.
var ownedHeaders = map[string]bool{
	"from": true, "to": true, "cc": true, "bcc": true, "reply-to": true, "sender": true, "subject": true,
	"date": true, "message-id": true, "mime-version": true, "content-type": true,
	"content-transfer-encoding": true, "list-unsubscribe": true, "list-unsubscribe-post": true,
	"return-path": true, "received": true,
}

func checkHeader(name, value string) error {
	if name == "" {
		return invalid("empty header name")
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 33 || c > 126 || c == ':' {
			return invalid("header name %q", name)
		}
	}
	if ownedHeaders[strings.ToLower(name)] {
		return invalid("header %s is set from the message's fields", name)
	}
	if strings.ContainsAny(value, "\r\n") || !utf8.ValidString(value) {
		return invalid("header %s: the value holds a line break or is not UTF-8", name)
	}
	return nil
}
