package auth_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testmail"
)

// Every change to the second factor is mailed to the person (ASVS 2.5.5, 2.8.5) through a real SMTP
// server (Mailpit): turned on, new recovery codes, a recovery code spent at a sign-in (with how many are
// left), turned off. A stolen session with the password cannot change it unnoticed.
func TestSecondFactorChanges_AreMailed(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	clock := newTestClock()
	p := startProvider(t, setup{mail: mp, now: clock.now})
	p.user(testEmail, testPassword)
	b := newBrowser(t)
	p.accountSignIn(b, testEmail, testPassword, nil)
	n := 0
	expect := func(subject string, body ...string) {
		t.Helper()
		n++
		m := mp.Get(t, mp.WaitTo(t, testEmail, n, 30*time.Second)[0].ID)
		if !strings.Contains(m.Subject, subject) {
			t.Fatalf("mail %d: subject %q, want %q", n, m.Subject, subject)
		}
		for _, s := range append(body, testEmail, p.base+"/account") {
			if !strings.Contains(m.Text, s) || !strings.Contains(m.HTML, s) {
				t.Fatalf("mail %d (%q) lacks %q in its text or HTML part:\n%s", n, m.Subject, s, m.Text)
			}
		}
	}

	_, codes := p.enrolTOTP(b, clock)
	expect("Two-step sign-in was turned on")

	csrf := forms(t, p.base, b.get(p.base+"/account").body)[0].fields.Get("csrf_token")
	post := func(v url.Values) response {
		v.Set("csrf_token", csrf)
		return b.postForm(p.base+"/account/mfa", v)
	}
	if res := post(url.Values{"action": {"recovery-codes"}, "password": {"not the password"}}); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("new codes with a wrong password: %d", res.StatusCode)
	}
	res := post(url.Values{"action": {"recovery-codes"}, "password": {testPassword}})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("new codes: %d", res.StatusCode)
	}
	expect("New recovery codes were made", "the earlier ones no longer work")
	fresh := codesRe.FindAllStringSubmatch(res.body, -1)
	if len(fresh) != len(codes) {
		t.Fatalf("%d new codes on the page, want %d", len(fresh), len(codes))
	}

	other := newBrowser(t)
	page := other.get(p.authorizeURL("state-0123456789", oauth2.GenerateVerifier()))
	if res := other.secondStep(p.base, other.signIn(p.base, page.body, testEmail, testPassword), fresh[0][1]); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("a recovery code: %d\n%.400s", res.StatusCode, res.body)
	}
	expect("A recovery code was used", "A recovery code was used to sign in", "You have 9 recovery codes left.")

	if res := post(url.Values{"action": {"remove"}, "password": {testPassword}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("turning it off: %d", res.StatusCode)
	}
	expect("Two-step sign-in was turned off")
	if got := len(mp.To(t, testEmail)); got != n {
		t.Fatalf("%d mails, want %d (the refused change sent none)", got, n)
	}
}
