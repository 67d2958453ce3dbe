package notify

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/formsservice/formsservice/services/forms/internal/smtptest"
	"github.com/formsservice/formsservice/services/platform/config"
	platformmail "github.com/formsservice/formsservice/services/platform/mail"
)

func testMessage() Message {
	return Message{
		ID: "1700000000000-0", ReceivedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Name: "Zoë Example", Email: "zoe@example.com", Organization: "ACME <Labs> & Co", Topic: "sales",
		Text: "Hello team,\nplease call me.\n.\nA line with a lone dot above. Ünïcödé ✓", Origin: "https://www.example.com",
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	t.Cleanup(cancel)
	return c
}

func readMail(t *testing.T, data string) (*mail.Message, string) {
	t.Helper()
	m, err := mail.ReadMessage(strings.NewReader(data))
	if err != nil {
		t.Fatalf("not a mail: %v\n%s", err, data)
	}
	body, err := io.ReadAll(quotedprintable.NewReader(m.Body))
	if err != nil {
		t.Fatal(err)
	}
	return m, string(body)
}

func TestSMTP_SendsReadableMailWithReplyTo(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{})
	s := NewSMTP(config.SMTP{Addr: srv.Addr, From: "Forms <forms@example.net>", To: []string{"team@example.net", "sales@example.net"}, Subject: "[contact]"})
	if err := s.Send(ctx(t), testMessage()); err != nil {
		t.Fatal(err)
	}
	got := srv.Wait(t, 1, time.Second)[0]
	if got.From != "forms@example.net" || strings.Join(got.To, ",") != "team@example.net,sales@example.net" {
		t.Fatalf("envelope %q -> %q", got.From, got.To)
	}
	m, body := readMail(t, got.Data)
	subject, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	if err != nil || subject != "[contact] sales: Zoë Example (ACME <Labs> & Co)" {
		t.Fatalf("subject %q (%v)", subject, err)
	}
	rt, err := mail.ParseAddress(m.Header.Get("Reply-To"))
	if err != nil || rt.Address != "zoe@example.com" || rt.Name != "Zoë Example" {
		t.Fatalf("Reply-To %q", m.Header.Get("Reply-To"))
	}
	if id := m.Header.Get("Message-ID"); !strings.HasPrefix(id, "<1700000000000-0.") || !strings.HasSuffix(id, "@example.net>") {
		t.Fatalf("Message-ID %q, want <streamID.hash@example.net>", id)
	}
	for _, want := range []string{"Name: Zoë Example", "E-mail: zoe@example.com", "Topic: sales", "Sent from: https://www.example.com",
		"please call me.\n.\nA line with a lone dot above. Ünïcödé ✓"} {
		if !strings.Contains(strings.ReplaceAll(body, "\r\n", "\n"), want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
}

func TestSMTP_LineBreaksInName_CannotInjectHeaders(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{})
	s := NewSMTP(config.SMTP{Addr: srv.Addr, From: "forms@example.net", To: []string{"team@example.net"}, Subject: "[contact]"})
	m := testMessage()
	m.Name = "Eve\r\nBcc: victim@example.org\r\nX-Evil: 1"
	if err := s.Send(ctx(t), m); err != nil {
		t.Fatal(err)
	}
	got := srv.Wait(t, 1, time.Second)[0]
	msg, _ := readMail(t, got.Data)
	if msg.Header.Get("Bcc") != "" || msg.Header.Get("X-Evil") != "" {
		t.Fatalf("header injected:\n%s", got.Data)
	}
	if len(got.To) != 1 {
		t.Fatalf("recipients %v", got.To)
	}
}

func TestSMTP_StartTLSAndAuth(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{TLS: true, User: "forms", Password: "s3cret"})
	pw := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := NewSMTP(config.SMTP{Addr: srv.Addr, From: "forms@example.net", To: []string{"team@example.net"}, Username: "forms", PasswordFile: pw, StartTLS: true})
	s.TLSConfig = srv.ClientTLS
	if err := s.Send(ctx(t), testMessage()); err != nil {
		t.Fatal(err)
	}
	if got := srv.Wait(t, 1, time.Second)[0]; got.User != "forms" {
		t.Fatalf("authenticated as %q", got.User)
	}

	wrong := NewSMTP(config.SMTP{Addr: srv.Addr, From: "forms@example.net", To: []string{"team@example.net"}, Username: "forms", StartTLS: true})
	wrong.TLSConfig = srv.ClientTLS
	if err := wrong.Send(ctx(t), testMessage()); err == nil {
		t.Fatal("sent with a wrong password")
	}
}

func TestSMTP_StartTLSRequiredButNotOffered_Fails(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{})
	s := NewSMTP(config.SMTP{Addr: srv.Addr, From: "forms@example.net", To: []string{"team@example.net"}, StartTLS: true})
	if err := s.Send(ctx(t), testMessage()); err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Fatalf("got %v, want a STARTTLS error", err)
	}
	if len(srv.Mails()) != 0 {
		t.Fatal("sent in clear text")
	}
}

func TestSMTP_PasswordWithoutTLSToRemoteRelay_IsRefusedBeforeConnecting(t *testing.T) {
	// tls: none off loopback fails the configuration's check; the sender refuses it on its own too.
	s := NewSMTP(config.SMTP{Addr: "mail.example.invalid:587", From: "a@example.net", To: []string{"b@example.net"}, Username: "u", TLS: config.MailTLSNone})
	if err := s.Send(ctx(t), testMessage()); err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Fatalf("got %v", err)
	}
}

func TestSMTP_TemporaryFailure_IsAnError(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{})
	srv.FailNext(1)
	s := NewSMTP(config.SMTP{Addr: srv.Addr, From: "forms@example.net", To: []string{"team@example.net"}})
	err := s.Send(ctx(t), testMessage())
	if err == nil {
		t.Fatal("a 451 answer counted as delivered")
	}
	if platformmail.IsPermanent(err) {
		t.Fatalf("a 451 answer is permanent: %v", err)
	}
}

func TestSMTP_PermanentRefusalAtData_IsPermanent(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{})
	srv.RefuseNext(1)
	s := NewSMTP(config.SMTP{Addr: srv.Addr, From: "forms@example.net", To: []string{"team@example.net"}})
	err := s.Send(ctx(t), testMessage())
	var re *platformmail.RelayError
	if !errors.As(err, &re) || !re.Permanent() || re.Code != 554 || re.Command != "end of DATA" || !strings.Contains(re.Reply, "message refused") {
		t.Fatalf("got %v, want a permanent 554 with the relay's answer", err)
	}
}

func TestSMTP_RelayAcceptedDataButQuitFailed_IsDelivered(t *testing.T) {
	// The relay's answer to DATA is what takes responsibility for the mail (RFC 5321 4.1.1.4); a broken
	// QUIT afterwards must not count as a failure, or the worker mails the message again.
	srv := smtptest.Start(t, smtptest.Options{})
	srv.DropNextQuit(1)
	s := NewSMTP(config.SMTP{Addr: srv.Addr, From: "forms@example.net", To: []string{"team@example.net"}})
	if err := s.Send(ctx(t), testMessage()); err != nil {
		t.Fatalf("accepted at DATA, then QUIT failed: %v", err)
	}
	if n := len(srv.Mails()); n != 1 {
		t.Fatalf("%d mails accepted", n)
	}
}

func TestSMTP_StalledRelay_GivesUpAtDeadline(t *testing.T) {
	srv := smtptest.Start(t, smtptest.Options{})
	srv.StallNext(1)
	s := NewSMTP(config.SMTP{Addr: srv.Addr, From: "forms@example.net", To: []string{"team@example.net"}})
	c, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := s.Send(c, testMessage()); err == nil {
		t.Fatal("no error from a stalled relay")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("gave up after %s", d)
	}
}

func TestWebhook_PostsSlackCompatibleJSON(t *testing.T) {
	var got WebhookPayload
	var ct string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct = r.Header.Get("Content-Type")
		_ = json.NewDecoder(r.Body).Decode(&got)
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	if err := NewWebhook(srv.URL, nil).WithFormat(config.WebhookFormatSlack).Send(ctx(t), testMessage()); err != nil {
		t.Fatal(err)
	}
	if ct != "application/json" {
		t.Fatalf("content type %q", ct)
	}
	if got.Contact != testMessage() {
		t.Fatalf("contact %+v", got.Contact)
	}
	for _, want := range []string{"*New contact message* — sales", "Name: Zoë Example", "ACME &lt;Labs&gt; &amp; Co", ">>> Hello team,"} {
		if !strings.Contains(got.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, got.Text)
		}
	}
}

func TestWebhook_MentionsAreEscaped(t *testing.T) {
	m := testMessage()
	m.Text = "<!channel> look at <https://evil.example|this>"
	txt := SlackText(m)
	if strings.Contains(txt, "<!channel>") || strings.Contains(txt, "<https://evil") {
		t.Fatalf("unescaped: %s", txt)
	}
}

func TestWebhook_ErrorStatus_IsAnError(t *testing.T) {
	for _, code := range []int{500, 404, 302} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if code == 302 {
				http.Redirect(w, r, "/elsewhere", code)
				return
			}
			http.Error(w, "no", code)
		}))
		err := NewWebhook(srv.URL, nil).Send(ctx(t), testMessage())
		srv.Close()
		if err == nil {
			t.Errorf("status %d counted as delivered", code)
		}
	}
}

func TestWebhook_Errors_DoNotRevealTheSecretPath(t *testing.T) {
	// A Slack incoming-webhook URL's path is its credential; Go's HTTP errors quote the whole URL, and
	// the delivery worker logs the error.
	ln := httptest.NewServer(http.NotFoundHandler())
	addr := ln.Listener.Addr().String()
	ln.Close() // nothing listens there now: the dial fails
	const secret = "T000/B000/XXXXsecretXXXX"
	for name, address := range map[string]string{
		"refused":  "http://" + addr + "/services/" + secret,
		"bad port": "http://127.0.0.1:99999/services/" + secret,
	} {
		err := NewWebhook(address, nil).Send(ctx(t), testMessage())
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error reveals the webhook path: %v", name, err)
		}
		if !strings.Contains(err.Error(), "http://") || !strings.Contains(err.Error(), "/…") {
			t.Errorf("%s: the error should still name the scheme and host: %v", name, err)
		}
	}
}

// testSecret is a Standard Webhooks secret: whsec_ + base64 of 32 bytes.
const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func TestWebhook_StandardWebhooks_StableIDAndSignatureTheReferenceLibraryVerifies(t *testing.T) {
	var got []http.Header
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, bodies = append(got, r.Header.Clone()), append(bodies, b)
	}))
	defer srv.Close()
	wh, err := NewWebhook(srv.URL, nil).WithSecret(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // a retry of the same message
		if err := wh.Send(ctx(t), testMessage()); err != nil {
			t.Fatal(err)
		}
	}
	verifier, err := standardwebhooks.NewWebhook(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range got {
		if id := h.Get("webhook-id"); id != testMessage().ID {
			t.Errorf("call %d: webhook-id %q, want the message's stream ID %q (the same on every retry)", i, id, testMessage().ID)
		}
		if err := verifier.Verify(bodies[i], h); err != nil {
			t.Errorf("call %d: the reference library refuses the signature: %v", i, err)
		}
	}
	other, _ := standardwebhooks.NewWebhook("whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 32)))
	if other.Verify(bodies[0], got[0]) == nil {
		t.Error("another secret verified the call")
	}
	if verifier.Verify(append([]byte(" "), bodies[0]...), got[0]) == nil {
		t.Error("a changed body verified")
	}
}

func TestWebhook_WithoutSecret_StillCarriesIDAndTimestamp(t *testing.T) {
	var h http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h = r.Header.Clone() }))
	defer srv.Close()
	if err := NewWebhook(srv.URL, nil).Send(ctx(t), testMessage()); err != nil {
		t.Fatal(err)
	}
	if h.Get("webhook-id") != testMessage().ID || h.Get("webhook-timestamp") == "" || h.Get("webhook-signature") != "" {
		t.Fatalf("headers %v", h)
	}
}

func TestWebhook_BadSecret_IsRefusedWithoutQuotingIt(t *testing.T) {
	for _, bad := range []string{"whsec_not base64!", "whsec_" + base64.StdEncoding.EncodeToString([]byte("short")), ""} {
		_, err := NewWebhook("http://127.0.0.1/", nil).WithSecret(bad)
		if err == nil {
			t.Errorf("%q accepted", bad)
		} else if bad != "" && strings.Contains(err.Error(), bad) {
			t.Errorf("the error quotes the secret: %v", err)
		}
	}
}

// A rotation of the signing secret: with the new and the old secret set, every call carries one
// signature per secret, space-separated ("v1,… v1,…", as the Standard Webhooks spec allows), and the
// reference library verifies it with either secret: receivers can move to the new one at their pace.
func TestWebhook_TwoSecretsDuringARotation_EitherVerifies(t *testing.T) {
	var h http.Header
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		h = r.Header.Clone()
	}))
	defer srv.Close()
	newSecret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a new secret of thirty-two bytes"))
	wh, err := NewWebhook(srv.URL, nil).WithSecret(newSecret, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Send(ctx(t), testMessage()); err != nil {
		t.Fatal(err)
	}
	sigs := strings.Split(h.Get("webhook-signature"), " ")
	if len(sigs) != 2 || !strings.HasPrefix(sigs[0], "v1,") || !strings.HasPrefix(sigs[1], "v1,") || sigs[0] == sigs[1] {
		t.Fatalf("webhook-signature %q, want two different v1 signatures", h.Get("webhook-signature"))
	}
	for _, secret := range []string{newSecret, testSecret} {
		verifier, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := verifier.Verify(body, h); err != nil {
			t.Errorf("a receiver with one of the two secrets cannot verify: %v", err)
		}
	}
	third, _ := standardwebhooks.NewWebhook("whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 32)))
	if third.Verify(body, h) == nil {
		t.Error("a third secret verified the call")
	}
}

// Mattermost and Rocket.Chat render a webhook's text as Markdown: a visitor's link, image (fetched when
// the message is shown) or emphasis must arrive as the characters typed. Every ASCII punctuation
// character the visitor sent is escaped for CommonMark (&, < and > as entities, the rest with a
// backslash); a Slack receiver keeps Slack's own escaping.
func TestWebhook_MarkdownReceiver_VisitorsMarkupIsEscaped(t *testing.T) {
	var got WebhookPayload
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&got)
	}))
	defer srv.Close()
	m := testMessage()
	m.Name = "[Support](https://evil.example/login)"
	m.Text = "![pixel](https://evil.example/p.png) **urgent** _now_ <b>hi</b> `code` ~~x~~\n# Heading\n> quote @channel"
	if err := NewWebhook(srv.URL, nil).Send(ctx(t), m); err != nil { // not Slack's host: Markdown
		t.Fatal(err)
	}
	for _, want := range []string{
		`Name\: \[Support\]\(https\:\/\/evil\.example\/login\)`,
		`> \!\[pixel\]\(https\:\/\/evil\.example\/p\.png\) \*\*urgent\*\* \_now\_ &lt;b&gt;hi&lt;\/b&gt; ` + "\\`code\\`" + ` \~\~x\~\~`,
		`> \# Heading`,
		`> &gt; quote \@channel`,
	} {
		if !strings.Contains(got.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, got.Text)
		}
	}
	if got.Contact.Name != m.Name {
		t.Errorf("contact.name %q: the structured fields stay as typed", got.Contact.Name)
	}
	if f := NewWebhook("https://hooks.slack.com/services/T/B/x", nil).format; f != config.WebhookFormatSlack {
		t.Errorf("Slack's host: format %q, want slack", f)
	}
	if f := NewWebhook(srv.URL, nil).WithFormat(config.WebhookFormatSlack).format; f != config.WebhookFormatSlack {
		t.Errorf("format set: %q", f)
	}
}
