package mail

import (
	"context"
	"errors"
	"mime"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testmail"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func passwordFile(t *testing.T, pw string) string {
	f := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(f, []byte(pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// longSubject is what the forms made of a long non-ASCII name: 4,135 characters on one line before.
var longSubject = "[contact] sales: " + strings.Repeat("Zoë Ünïcödé ✓ ", 120)

func sample() Message {
	return Message{
		To: []string{"Ada Lovelace <ada@example.org>"}, ReplyTo: "Zoë <zoe@example.com>",
		Subject: longSubject,
		Text:    "Confirm your address: https://app.example.net/verify?t=abc\n\nThanks.\n.\nA lone dot above.",
		HTML:    `<!doctype html><html lang="en"><body><p><a href="https://app.example.net/verify?t=abc&amp;x=1">Confirm</a></p></body></html>`,
		ID:      "1700000000000-0", Unsubscribe: "https://app.example.net/unsubscribe?t=xyz",
		Headers: map[string]string{"X-Entity-Ref-ID": "abc"},
	}
}

func newSMTP(t *testing.T, o SMTPOptions) *SMTP {
	t.Helper()
	if o.Defaults.From == "" {
		o.Defaults.From = "Acme <no-reply@example.net>"
	}
	s, err := NewSMTP(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSMTP_StartTLSAndAuth_MailpitReceivesBothPartsFoldedHeadersAndStableMessageID(t *testing.T) {
	srv := testmail.Start(t, testmail.Options{TLS: testmail.StartTLS, RequireTLS: true, User: "mailer", Password: "s3cret"})
	s := newSMTP(t, SMTPOptions{Addr: srv.SMTPAddr, Security: StartTLS, Username: "mailer",
		PasswordFile: passwordFile(t, "s3cret"), TLSConfig: srv.ClientTLS})
	if err := s.Send(ctx(t), sample()); err != nil {
		t.Fatal(err)
	}
	got := srv.Latest(t, "ada@example.org", 10*time.Second)
	if got.Username != "mailer" {
		t.Errorf("authenticated as %q", got.Username)
	}
	if got.Subject != longSubject {
		t.Errorf("subject decoded as %q", got.Subject)
	}
	if text := strings.ReplaceAll(got.Text, "\r\n", "\n"); !strings.Contains(text, "https://app.example.net/verify?t=abc") || !strings.Contains(text, "\n.\nA lone dot above.") {
		t.Errorf("text part %q", got.Text)
	}
	if !strings.Contains(got.HTML, `href="https://app.example.net/verify?t=abc&amp;x=1"`) {
		t.Errorf("HTML part %q", got.HTML)
	}
	if ct := got.Header("Content-Type"); !strings.HasPrefix(ct, "multipart/alternative;") {
		t.Errorf("Content-Type %q", ct)
	}
	if i, j := strings.Index(got.Raw, "Content-Type: text/plain"), strings.Index(got.Raw, "Content-Type: text/html"); i < 0 || j < i {
		t.Errorf("the text part must come first (RFC 2046 5.1.4: the last part is the preferred one)")
	}
	for i, line := range strings.Split(got.Raw, "\r\n") {
		if len(line) > 998 {
			t.Fatalf("line %d is %d characters long", i+1, len(line))
		}
	}
	header, _, _ := strings.Cut(got.Raw, "\r\n\r\n")
	for _, line := range strings.Split(header, "\r\n") {
		if len(line) > 200 {
			t.Errorf("header line of %d characters: %.80q…", len(line), line)
		}
	}
	if got.MessageID != "1700000000000-0@example.net" {
		t.Errorf("Message-ID %q", got.Header("Message-ID"))
	}
	if got.ListUnsubscribe.Header != "<https://app.example.net/unsubscribe?t=xyz>" || got.ListUnsubscribe.HeaderPost != "List-Unsubscribe=One-Click" || got.ListUnsubscribe.Errors != "" {
		t.Errorf("List-Unsubscribe %+v", got.ListUnsubscribe)
	}
	if len(got.ReplyTo) != 1 || got.ReplyTo[0].Address != "zoe@example.com" || got.ReplyTo[0].Name != "Zoë" {
		t.Errorf("Reply-To %v", got.ReplyTo)
	}
	if got.Header("Auto-Submitted") != "auto-generated" || got.Header("X-Entity-Ref-ID") != "abc" {
		t.Errorf("headers %v", got.Headers)
	}
	if got.From.Address != "no-reply@example.net" || got.From.Name != "Acme" {
		t.Errorf("From %v", got.From)
	}

	// A retry of the same record keeps the Message-ID; a message without an ID gets a fresh one.
	if err := s.Send(ctx(t), sample()); err != nil {
		t.Fatal(err)
	}
	other := sample()
	other.ID = ""
	for range 2 {
		if err := s.Send(ctx(t), other); err != nil {
			t.Fatal(err)
		}
	}
	ids := map[string]int{}
	for _, m := range srv.WaitTo(t, "ada@example.org", 4, 10*time.Second) {
		if !strings.HasSuffix(m.MessageID, "@example.net") || strings.Count(m.MessageID, "@") != 1 {
			t.Errorf("Message-ID %q", m.MessageID)
		}
		ids[m.MessageID]++
	}
	if ids["1700000000000-0@example.net"] != 2 || len(ids) != 3 {
		t.Errorf("Message-IDs %v: want the stable one twice and two random ones", ids)
	}
}

func TestSMTP_ImplicitTLS(t *testing.T) {
	srv := testmail.Start(t, testmail.Options{TLS: testmail.ImplicitTLS, User: "u", Password: "p"})
	s := newSMTP(t, SMTPOptions{Addr: srv.SMTPAddr, Security: ImplicitTLS, Username: "u", PasswordFile: passwordFile(t, "p"), TLSConfig: srv.ClientTLS})
	if err := s.Send(ctx(t), sample()); err != nil {
		t.Fatal(err)
	}
	if got := srv.Latest(t, "ada@example.org", 10*time.Second); got.Username != "u" {
		t.Errorf("authenticated as %q", got.Username)
	}
}

func TestSMTP_PlainWithPasswordToLoopback_IsAllowed(t *testing.T) {
	srv := testmail.Start(t, testmail.Options{User: "u", Password: "p", AllowInsecureAuth: true})
	s := newSMTP(t, SMTPOptions{Addr: srv.SMTPAddr, Security: Plain, Username: "u", PasswordFile: passwordFile(t, "p")})
	if err := s.Send(ctx(t), sample()); err != nil {
		t.Fatal(err)
	}
	srv.Latest(t, "ada@example.org", 10*time.Second)
}

func TestSMTP_StartTLSRequiredButNotOffered_FailsBeforeSending(t *testing.T) {
	srv := testmail.Start(t, testmail.Options{})
	s := newSMTP(t, SMTPOptions{Addr: srv.SMTPAddr, Security: StartTLS})
	err := s.Send(ctx(t), sample())
	if err == nil || !strings.Contains(err.Error(), "STARTTLS") || IsPermanent(err) {
		t.Fatalf("got %v, want a temporary STARTTLS error", err)
	}
	if n := len(srv.Messages(t)); n != 0 {
		t.Fatalf("%d mails sent in clear text", n)
	}
}

func TestSMTP_UntrustedCertificate_Fails(t *testing.T) {
	srv := testmail.Start(t, testmail.Options{TLS: testmail.StartTLS})
	s := newSMTP(t, SMTPOptions{Addr: srv.SMTPAddr, Security: StartTLS}) // the system's roots
	if err := s.Send(ctx(t), sample()); err == nil {
		t.Fatal("sent to a relay whose certificate nobody vouches for")
	}
}

func TestNewSMTP_PasswordWithoutTLSToARemoteHost_IsRefused(t *testing.T) {
	for _, addr := range []string{"mail.example.invalid:25", "192.0.2.1:25", "[2001:db8::1]:25"} {
		_, err := NewSMTP(SMTPOptions{Addr: addr, Security: Plain, Username: "u"})
		if err == nil || !strings.Contains(err.Error(), "without TLS") {
			t.Errorf("%s: got %v", addr, err)
		}
	}
	for _, addr := range []string{"localhost:25", "127.0.0.1:25", "127.0.0.2:25", "[::1]:25"} {
		if _, err := NewSMTP(SMTPOptions{Addr: addr, Security: Plain, Username: "u"}); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	for _, bad := range []SMTPOptions{{Addr: "nohost"}, {Addr: ":25"}, {Addr: "h:0"}, {Addr: "h:x"}, {Addr: "h:25", Security: "ssl"}} {
		if _, err := NewSMTP(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestSMTP_WrongPassword_IsATemporaryError(t *testing.T) {
	// A wrong password is the relay settings' fault: once fixed, the retries deliver. Giving the message
	// up as permanent would lose it.
	srv := testmail.Start(t, testmail.Options{TLS: testmail.StartTLS, User: "u", Password: "right"})
	s := newSMTP(t, SMTPOptions{Addr: srv.SMTPAddr, Username: "u", PasswordFile: passwordFile(t, "wrong"), TLSConfig: srv.ClientTLS})
	err := s.Send(ctx(t), sample())
	if err == nil || IsPermanent(err) {
		t.Fatalf("got %v, want a temporary error", err)
	}
}

func TestSMTP_550ToRecipient_IsPermanentAndCarriesTheRelaysAnswer(t *testing.T) {
	srv := testmail.Start(t, testmail.Options{AllowedRecipients: `@example\.com$`})
	s := newSMTP(t, SMTPOptions{Addr: srv.SMTPAddr, Security: Plain})
	err := s.Send(ctx(t), sample())
	var re *RelayError
	if !errors.As(err, &re) {
		t.Fatalf("got %v (%T), want a *RelayError", err, err)
	}
	if !re.Permanent() || !IsPermanent(err) || re.Temporary() {
		t.Errorf("a 550 is not permanent: %+v", re)
	}
	if re.Code != 550 || re.Command != "RCPT TO" || re.Enhanced != "5.1.0" || !strings.Contains(re.Reply, "mailbox unavailable") {
		t.Errorf("relay error %+v", re)
	}
	if !strings.Contains(err.Error(), "550") || !strings.Contains(err.Error(), "mailbox unavailable") {
		t.Errorf("the message lacks the relay's answer: %v", err)
	}
	var p interface{ Permanent() bool } // the check the delivery worker makes
	if !errors.As(err, &p) || !p.Permanent() {
		t.Error("errors.As to interface{ Permanent() bool } fails")
	}
}

func TestSMTP_OneRecipientRefused_NobodyGetsTheMail(t *testing.T) {
	srv := testmail.Start(t, testmail.Options{AllowedRecipients: `@example\.org$`})
	s := newSMTP(t, SMTPOptions{Addr: srv.SMTPAddr, Security: Plain})
	m := sample()
	m.To = []string{"ada@example.org", "bob@elsewhere.test"}
	if err := s.Send(ctx(t), m); !IsPermanent(err) {
		t.Fatalf("got %v", err)
	}
	if n := len(srv.Messages(t)); n != 0 {
		t.Fatalf("%d mails went out: a retry would send them twice", n)
	}
}

func TestSMTP_4xxAnswers_AreTemporary(t *testing.T) {
	srv := testmail.Start(t, testmail.Options{})
	s := newSMTP(t, SMTPOptions{Addr: srv.SMTPAddr, Security: Plain})
	for _, tc := range []struct {
		name              string
		sender, recipient testmail.Chaos
		command           string
		code              int
		permanent         bool
	}{
		{"451 to RCPT", testmail.Chaos{}, testmail.Chaos{Code: 451, Probability: 100}, "RCPT TO", 451, false},
		{"421 to MAIL", testmail.Chaos{Code: 421, Probability: 100}, testmail.Chaos{}, "MAIL FROM", 421, false},
		{"554 to MAIL", testmail.Chaos{Code: 554, Probability: 100}, testmail.Chaos{}, "MAIL FROM", 554, true},
	} {
		srv.SetChaos(t, tc.sender, tc.recipient, testmail.Chaos{})
		err := s.Send(ctx(t), sample())
		var re *RelayError
		if !errors.As(err, &re) || re.Code != tc.code || re.Command != tc.command || IsPermanent(err) != tc.permanent {
			t.Errorf("%s: got %v", tc.name, err)
		}
	}
	srv.SetChaos(t, testmail.Chaos{}, testmail.Chaos{}, testmail.Chaos{})
	if err := s.Send(ctx(t), sample()); err != nil {
		t.Fatalf("after the failures: %v", err)
	}
}

func TestSMTP_NetworkErrors_AreTemporary(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	s := newSMTP(t, SMTPOptions{Addr: addr, Security: Plain})
	if err := s.Send(ctx(t), sample()); err == nil || IsPermanent(err) {
		t.Fatalf("got %v, want a temporary error", err)
	}
}

func TestSMTP_SilentRelay_GivesUpAtTheContextsDeadline(t *testing.T) {
	// A relay that accepts the connection and never greets: the context bounds the whole session.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	for name, mk := range map[string]func() (context.Context, context.CancelFunc){
		"deadline": func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(t.Context(), 200*time.Millisecond)
		},
		"cancel": func() (context.Context, context.CancelFunc) {
			c, cancel := context.WithCancel(t.Context())
			time.AfterFunc(200*time.Millisecond, cancel) // the caller gives up (a shutdown)
			return c, cancel
		},
	} {
		s := newSMTP(t, SMTPOptions{Addr: ln.Addr().String(), Security: Plain, Timeout: time.Minute})
		c, cancel := mk()
		start := time.Now()
		err := s.Send(c, sample())
		cancel()
		if err == nil || IsPermanent(err) {
			t.Errorf("%s: got %v", name, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: gave up after %s", name, d)
		}
	}
}

func TestSMTP_InvalidMessage_IsPermanentAndNeverConnects(t *testing.T) {
	s := newSMTP(t, SMTPOptions{Addr: "192.0.2.1:25", Security: Plain}) // TEST-NET: a dial would hang
	for name, m := range map[string]Message{
		"no recipient":    {Text: "x"},
		"no text":         {To: []string{"a@example.org"}},
		"bad address":     {To: []string{"not an address"}, Text: "x"},
		"owned header":    {To: []string{"a@example.org"}, Text: "x", Headers: map[string]string{"Bcc": "x@example.org"}},
		"header newline":  {To: []string{"a@example.org"}, Text: "x", Headers: map[string]string{"X-A": "1\r\nBcc: x@example.org"}},
		"header name":     {To: []string{"a@example.org"}, Text: "x", Headers: map[string]string{"X A": "1"}},
		"http unsub":      {To: []string{"a@example.org"}, Text: "x", Unsubscribe: "http://app.example.net/u"},
		"unsub not a URL": {To: []string{"a@example.org"}, Text: "x", Unsubscribe: "/u"},
	} {
		err := s.Send(ctx(t), m)
		if !errors.Is(err, ErrInvalid) || !IsPermanent(err) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

func TestMessageID_IsADotAtomWithTheDomain(t *testing.T) {
	for id, want := range map[string]string{
		"1700000000000-0":     "<1700000000000-0@example.net>",
		"a b<c>@d":            "<a-b-c--d@example.net>",
		"..x..y..":            "<x.y@example.net>",
		"waitlist:ada/1.2":    "<waitlist-ada/1.2@example.net>",
		"contact.1700000-0.3": "<contact.1700000-0.3@example.net>",
	} {
		if got := MessageID(id, "example.net"); got != want {
			t.Errorf("MessageID(%q) = %q, want %q", id, got, want)
		}
	}
	if a, b := MessageID("", "example.net"), MessageID("", "example.net"); a == b || !strings.HasSuffix(a, "@example.net>") {
		t.Errorf("random ids %q %q", a, b)
	}
}

func TestPrepare_HeaderTextCannotInjectHeaders(t *testing.T) {
	m := sample()
	m.Subject = "Hi\r\nBcc: victim@example.org"
	m.ReplyTo = "=?utf-8?q?Eve=0D=0AX-Evil=3A_1?= <eve@example.com>" // an encoded word decodes to a line break
	p, err := Defaults{From: "a@example.net"}.Prepare(m)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := p.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	header, _, _ := strings.Cut(string(raw), "\r\n\r\n")
	for _, line := range strings.Split(header, "\r\n") {
		if strings.HasPrefix(line, "Bcc:") || strings.HasPrefix(line, "X-Evil:") {
			t.Fatalf("injected header %q in\n%s", line, header)
		}
	}
}

func TestEncodeText_DecodesToTheInputAndFolds(t *testing.T) {
	dec := new(mime.WordDecoder)
	for _, s := range []string{
		"plain words stay as they are",
		strings.Repeat("x", 1500), // one long ASCII word: Go's encoder would leave it on one line
		"=?utf-8?q?looks_encoded?=",
		"Zoë " + strings.Repeat("é", 400),
		strings.Repeat("✓", 100) + " 🎉 done",
	} {
		enc := encodeText(s)
		got, err := dec.DecodeHeader(enc)
		if err != nil || got != s {
			t.Errorf("%.40q: decoded %.40q (%v)", s, got, err)
		}
		for _, w := range strings.Split(enc, " ") {
			if len(w) > 75 {
				t.Errorf("%.40q: a word of %d characters", s, len(w))
			}
		}
	}
	if encodeText("Hello there") != "Hello there" {
		t.Error("short ASCII was encoded")
	}
}
