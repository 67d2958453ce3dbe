package mail

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testmail"
	"github.com/formsservice/formsservice/services/platform/config"
)

type source struct{ c atomic.Pointer[config.Config] }

func (s *source) Current() *config.Config { return s.c.Load() }

type recorder struct {
	mu   sync.Mutex
	sent []Message
}

func (r *recorder) Send(_ context.Context, m Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, m)
	return nil
}

func load(t *testing.T, doc string) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLive_FollowsTheConfiguration_FromOutboxToARelayWithAPrivateCA(t *testing.T) {
	srv := testmail.Start(t, testmail.Options{TLS: testmail.StartTLS, RequireTLS: true, User: "mailer", Password: "pw"})
	src := &source{}
	src.c.Store(load(t, "mail: {from: 'Acme <no-reply@example.net>'}"))
	outbox := &recorder{}
	s := Live(src, outbox)

	if err := s.Send(ctx(t), sample()); err != nil {
		t.Fatal(err)
	}
	if len(outbox.sent) != 1 {
		t.Fatalf("no relay configured: the fallback got %d mails", len(outbox.sent))
	}

	src.c.Store(load(t, `
mail:
  from: 'Acme <no-reply@example.net>'
  messageIDDomain: mail.example.net
  smtp: {addr: '`+srv.SMTPAddr+`', tls: starttls, username: mailer, passwordFile: '`+passwordFile(t, "pw")+`', caFile: '`+srv.CAFile+`'}
`))
	if err := s.Send(ctx(t), sample()); err != nil {
		t.Fatal(err)
	}
	got := srv.Latest(t, "ada@example.org", 10*time.Second)
	if got.Username != "mailer" || got.MessageID != "1700000000000-0@mail.example.net" || got.From.Address != "no-reply@example.net" {
		t.Errorf("received %+v", got.Summary)
	}
	if len(outbox.sent) != 1 {
		t.Error("the fallback got a mail while a relay was configured")
	}
}

func TestLive_NoRelayAndNoFallback_IsATemporaryError(t *testing.T) {
	src := &source{}
	src.c.Store(load(t, "{}"))
	err := Live(src, nil).Send(ctx(t), sample())
	if !errors.Is(err, ErrNoRelay) || IsPermanent(err) {
		t.Fatalf("got %v", err)
	}
}

func TestFromConfig_UsesTheFormsRelayWhenMailHasNone(t *testing.T) {
	srv := testmail.Start(t, testmail.Options{})
	c := load(t, "forms: {delivery: {smtp: {addr: '"+srv.SMTPAddr+"', from: 'Forms <forms@example.net>', to: [team@example.net]}}}")
	s, err := FromConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(ctx(t), sample()); err != nil {
		t.Fatal(err)
	}
	if got := srv.Latest(t, "ada@example.org", 10*time.Second); got.From.Address != "forms@example.net" {
		t.Errorf("From %v", got.From)
	}
}

func TestFromConfig_BadCAFile(t *testing.T) {
	c := load(t, "mail: {from: a@example.net, smtp: {addr: 'h.example:587', caFile: '"+passwordFile(t, "not a certificate")+"'}}")
	if _, err := FromConfig(c); err == nil {
		t.Fatal("a CA file without a certificate was accepted")
	}
}

func TestLive_ACAFileMountedLate_IsReadOnTheNextMail(t *testing.T) {
	srv := testmail.Start(t, testmail.Options{TLS: testmail.StartTLS, RequireTLS: true})
	ca := filepath.Join(t.TempDir(), "ca.crt")
	src := &source{}
	src.c.Store(load(t, "mail: {from: a@example.net, smtp: {addr: '"+srv.SMTPAddr+"', caFile: '"+ca+"'}}"))
	s := Live(src, nil)
	if err := s.Send(ctx(t), sample()); err == nil || IsPermanent(err) {
		t.Fatalf("without the CA file: %v, want a temporary error", err)
	}
	pem, err := os.ReadFile(srv.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ca, pem, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Send(ctx(t), sample()); err != nil {
		t.Fatalf("with the CA file in place: %v", err)
	}
	srv.Latest(t, "ada@example.org", 10*time.Second)
}
