package auth_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
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
	p := startProvider(t, setup{mail: mp, now: clock.now, mutate: newBrowserMailsOff}) // TestNewBrowser_AfterTheSecondStep has it
	p.user(testEmail, testPassword)
	b := newBrowser(t)
	p.accountSignIn(b, testEmail, testPassword, nil)
	next := mailsTo(t, mp, testEmail)
	expect := func(subject string, body ...string) {
		t.Helper()
		next(subject, append(body, testEmail, p.base+"/account")...)
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
	res := post(url.Values{"action": {"recovery-codes"}, "password": {testPassword}, "code": {codes[0]}}) // a recovery code is the current factor too
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

	if res := post(url.Values{"action": {"remove"}, "password": {testPassword}, "code": {fresh[1][1]}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("turning it off: %d", res.StatusCode)
	}
	expect("Two-step sign-in was turned off")
	if got := len(mp.To(t, testEmail)); got != 4 {
		t.Fatalf("%d mails, want 4 (the refused change sent none)", got)
	}
}

// withAcceptLanguage sends every request of a test browser with an Accept-Language header, as a browser
// set to that language does.
type withAcceptLanguage string

func (a withAcceptLanguage) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Accept-Language", string(a))
	return http.DefaultTransport.RoundTrip(r)
}

// A person whose browser asks for German reads the pages in German, and so the mails they lead to:
// the reset link (its lifetime in German), the password-changed notice (its date in German), the
// second factor set up. A browser that asks for English gets them in English (the tests above).
func TestMails_InTheLanguageOfThePages(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	clock := newTestClock()
	p := startProvider(t, setup{mail: mp, now: clock.now})
	p.user(testEmail, testPassword)
	b := newBrowser(t)
	b.c.Transport = withAcceptLanguage("de-DE,de;q=0.9,en;q=0.5")
	next := mailsTo(t, mp, testEmail)
	expect := func(subject string, body ...string) testmail.Mail {
		t.Helper()
		return next(subject, append(body, `<html lang="de"`)...)
	}

	page := b.get(p.authorizeURL("state-0123456789", oauth2.GenerateVerifier()))
	if !strings.Contains(page.body, `<html lang="de"`) {
		t.Fatalf("the sign-in page is not German:\n%.300s", page.body)
	}
	forgot := b.get(p.base + html.UnescapeString(regexp.MustCompile(`<a href="([^"]+)" id="forgot">`).FindStringSubmatch(page.body)[1]))
	f := formTo(t, p.base, forgot.body, "/account/forgot")
	f.fields.Set("email", testEmail)
	if res := b.postForm(f.action, f.fields); res.StatusCode != http.StatusOK {
		t.Fatalf("forgot: %d", res.StatusCode)
	}
	m := expect("Setzen Sie Ihr Passwort für", "Minuten gültig und funktioniert nur einmal")
	var link string
	for _, l := range m.Links() {
		if strings.Contains(l, "/account/reset") {
			link = l
		}
	}
	reset := formTo(t, p.base, b.get(link).body, "/account/reset")
	reset.fields.Set("new_password", "ein ganz neues Passwort")
	if res := b.postForm(reset.action, reset.fields); res.StatusCode != http.StatusOK {
		t.Fatalf("the new password: %d", res.StatusCode)
	}
	month := [...]string{"Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober", "November", "Dezember"}[clock.now().UTC().Month()-1]
	expect("wurde geändert", "wurde am ", " "+month+" ", "Alle anderen Browser und Apps")

	p.accountSignIn(b, testEmail, "ein ganz neues Passwort", nil)
	p.enrolTOTP(b, clock)
	expect("Zweistufige Anmeldung wurde eingeschaltet", "Die zweistufige Anmeldung (mit einer Authenticator-App) wurde eingeschaltet")
}

// mailsTo returns a check of the next mail to addr, in order: it waits for it, and fails unless its
// subject holds subject and both its text and HTML parts hold every one of body (in the HTML part
// only, a string that begins with '<').
func mailsTo(t *testing.T, mp *testmail.Server, addr string) func(subject string, body ...string) testmail.Mail {
	n := 0
	return func(subject string, body ...string) testmail.Mail {
		t.Helper()
		n++
		m := mp.Get(t, mp.WaitTo(t, addr, n, 30*time.Second)[0].ID)
		if !strings.Contains(m.Subject, subject) {
			t.Fatalf("mail %d: subject %q, want %q", n, m.Subject, subject)
		}
		for _, s := range body {
			if !strings.Contains(m.HTML, s) || !strings.HasPrefix(s, "<") && !strings.Contains(m.Text, s) {
				t.Fatalf("mail %d (%q) lacks %q:\n%s", n, m.Subject, s, m.Text)
			}
		}
		return m
	}
}
