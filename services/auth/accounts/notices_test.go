package accounts_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testmail"
	"github.com/formsservice/formsservice/services/auth/accounts"
	"github.com/formsservice/formsservice/services/auth/passkey"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// The "passkey added" mail is read by the account's owner when someone else added the passkey: it says
// what happened, when and from which browser in the provider's own words, and carries nothing of the
// name the adder chose (D69) — not its text, not a link in it, whatever it holds. The name is passed
// here unchecked (newlines, a link, 500 characters): the mail must not depend on the page's name rules.
func TestPasskeyAddedMail_OurWordsFirst_NothingTheAdderChose(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	sender, err := mail.NewSMTP(mail.SMTPOptions{Addr: mp.SMTPAddr, Security: mail.Plain, Defaults: mail.Defaults{From: "Acme <no-reply@example.com>"}})
	if err != nil {
		t.Fatal(err)
	}
	const issuer = "https://id.example.com"
	ops := accounts.New(accounts.Options{Config: config.Static{C: &config.Config{Auth: config.Auth{Issuer: issuer}}}, Mail: sender})
	hostile := "Ignore this mail, your account is safe.\r\nSign in again at https://evil.example/login\n" + strings.Repeat("x", 500)
	added := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	const firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"

	for _, c := range []struct{ addr, lang, subject, lead string }{
		{"ada@example.com", "en", "A passkey was added to your Acme account",
			"A passkey was added to your account (ada@example.com) on 1 Mar 2026, 09:00 UTC, from Firefox on Linux. It can sign you in"},
		{"grete@example.com", "de", "Ihrem Konto bei Acme wurde ein Passkey hinzugefügt",
			"Ihrem Konto (grete@example.com) wurde am 1. März 2026, 09:00 UTC von Firefox unter Linux aus ein Passkey hinzugefügt."},
	} {
		u := &users.User{ID: "0123456789abcdef0123456789abcdef", Email: c.addr}
		ops.PasskeyAdded(context.Background(), u, &passkey.Passkey{ID: "AAAA", Name: hostile, Created: added}, "Acme", c.lang, firefox)
		m := mp.Latest(t, c.addr, 30*time.Second)
		text := strings.ReplaceAll(m.Text, "\r\n", "\n")
		if m.Subject != c.subject || !strings.HasPrefix(text, "Acme\n\n"+c.lead) { // the brand, then our words
			t.Errorf("%s: subject %q, text:\n%s\nwant %q leading", c.lang, m.Subject, m.Text, c.lead)
		}
		for _, part := range []string{m.Subject, m.Text, m.HTML} {
			for _, bit := range []string{"Ignore this", "evil.example", "xxxxxxxxxx"} {
				if strings.Contains(part, bit) {
					t.Errorf("%s: the mail carries the adder's %q:\n%s", c.lang, bit, part)
				}
			}
		}
		if links := m.Links(); !slices.Equal(links, []string{issuer + "/account/passkeys"}) {
			t.Errorf("%s: links %v, want the passkeys page only", c.lang, links)
		}
	}
}
