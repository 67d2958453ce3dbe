package notify

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testmail"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// These run against Mailpit, a real relay, and each failed on the hand-built MIME this sender had
// before the platform's mail component: a 4,135-character Subject line, a 550 that was retried like a
// 451, and a Message-ID without '@'.

func TestSMTP_LongNonASCIIName_EveryLineWithin998AndTheSubjectReadsAsTyped(t *testing.T) {
	srv := testmail.Start(t, testmail.Options{})
	s := NewSMTP(config.SMTP{Addr: srv.SMTPAddr, From: "Forms <forms@example.net>", To: []string{"team@example.net"}, Subject: "[contact]"})
	m := testMessage()
	m.Name = strings.Repeat("Zoë Ünïcödé-Ëxämplé ", 100) // the name field's whole length, and more
	m.Organization = strings.Repeat("Ørgånisätiön ", 40)
	if err := s.Send(ctx(t), m); err != nil {
		t.Fatal(err)
	}
	got := srv.Latest(t, "team@example.net", 10*time.Second)
	for i, line := range strings.Split(got.Raw, "\r\n") {
		if len(line) > 998 {
			t.Fatalf("line %d is %d characters long (RFC 5322 allows 998): %.60q…", i+1, len(line), line)
		}
	}
	if want := "[contact] sales: " + m.Name + " (" + m.Organization + ")"; got.Subject != want {
		t.Errorf("subject %.80q…\nwant %.80q…", got.Subject, want)
	}
	if len(got.ReplyTo) != 1 || got.ReplyTo[0].Address != "zoe@example.com" {
		t.Errorf("Reply-To %v", got.ReplyTo)
	}
}

func TestSMTP_550FromTheRelay_IsPermanentAndCarriesItsAnswer(t *testing.T) {
	srv := testmail.Start(t, testmail.Options{AllowedRecipients: `@example\.org$`})
	s := NewSMTP(config.SMTP{Addr: srv.SMTPAddr, From: "forms@example.net", To: []string{"team@example.net"}})
	err := s.Send(ctx(t), testMessage())
	var p interface{ Permanent() bool } // what the delivery worker checks to dead-letter at once
	if !errors.As(err, &p) || !p.Permanent() {
		t.Fatalf("got %v, want an error whose Permanent() is true", err)
	}
	var re *mail.RelayError
	if !errors.As(err, &re) || re.Code != 550 || !strings.Contains(err.Error(), "550 5.1.0") {
		t.Fatalf("got %v, want the relay's 550 answer", err)
	}
}

func TestSMTP_MessageID_HasADomainAndIsStablePerMessageButDistinctAcrossStreams(t *testing.T) {
	srv := testmail.Start(t, testmail.Options{})
	s := NewSMTP(config.SMTP{Addr: srv.SMTPAddr, From: "forms@example.net", To: []string{"team@example.net"}})
	m := testMessage()
	other := testMessage() // the same stream ID in another deployment's stream: another message
	other.Text, other.Email = "Another message entirely.", "bob@example.org"
	for _, msg := range []Message{m, m, other} { // the first one twice: a retry
		if err := s.Send(ctx(t), msg); err != nil {
			t.Fatal(err)
		}
	}
	got := srv.WaitTo(t, "team@example.net", 3, 10*time.Second) // newest first
	for _, g := range got {
		local, domain, ok := strings.Cut(g.MessageID, "@")
		if !ok || domain != "example.net" || !strings.HasPrefix(local, m.ID+".") {
			t.Errorf("Message-ID %q, want <%s.…@example.net>", g.MessageID, m.ID)
		}
	}
	if got[2].MessageID != got[1].MessageID {
		t.Errorf("a retry changed the Message-ID: %q then %q", got[2].MessageID, got[1].MessageID)
	}
	if got[0].MessageID == got[1].MessageID {
		t.Errorf("two messages with the same stream ID share the Message-ID %q", got[0].MessageID)
	}
}
