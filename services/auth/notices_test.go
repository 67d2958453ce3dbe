package auth_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testmail"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/platform/config"
)

// The owner hears about it (issue 38 item 6, D66): a sign-in from a browser never seen for the account,
// and a lockout, are mailed in the page's language, rated per account, each with a link that works once.

// withHeaders sends every request of a test browser with the headers a real browser sends (its user
// agent, its languages).
type withHeaders map[string]string

func (h withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

const (
	firefoxUA = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
	chromeUA  = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
)

func browserWith(t *testing.T, h withHeaders) *browser {
	b := newBrowser(t)
	b.c.Transport = h
	return b
}

// signInWith signs b in to the test app with the password (prompt=login: a browser signed in already is
// asked again) and returns the tokens.
func (p *provider) signInWith(b *browser, email, password string) tokens {
	p.t.Helper()
	verifier := oauth2.GenerateVerifier()
	page := b.get(p.authorizeURL("state-0123456789", verifier, oauth2.SetAuthURLParam("prompt", "login")))
	if page.StatusCode != http.StatusOK {
		p.t.Fatalf("authorize page: %d\n%.500s", page.StatusCode, page.body)
	}
	code, _ := codeFrom(p.t, b.signIn(p.base, page.body, email, password), p.redirect)
	tk := p.exchange(code, verifier)
	if tk.status != http.StatusOK {
		p.t.Fatalf("exchange: %d %s", tk.status, tk.Error)
	}
	return tk
}

// mailCount waits for the notices in flight and returns how many mails addr has.
func (p *provider) mailCount(t *testing.T, mp *testmail.Server, addr string) int {
	t.Helper()
	p.svc.Notices().Wait()
	return len(mp.To(t, addr))
}

// linkIn is the link to path in mail m.
func linkIn(t *testing.T, m testmail.Mail, path string) string {
	t.Helper()
	for _, l := range m.Links() {
		if u, err := url.Parse(l); err == nil && u.Path == path {
			return l
		}
	}
	t.Fatalf("no link to %s in %q:\n%s", path, m.Subject, m.Text)
	return ""
}

// A sign-in from a new browser is mailed once, in the page's language, naming the browser; the same
// browser signing in again (it holds its device cookie now) is not; the account's very first sign-in is
// not either (there is no browser to compare with). The mail carries no secret.
func TestNewBrowser_SignInIsMailedOnce_InThePagesLanguage(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	p := startProvider(t, setup{mail: mp})
	p.user(testEmail, testPassword)
	next := mailsTo(t, mp, testEmail)

	first := browserWith(t, withHeaders{"User-Agent": chromeUA})
	p.signInWith(first, testEmail, testPassword)
	if n := p.mailCount(t, mp, testEmail); n != 0 {
		t.Fatalf("the account's first sign-in sent %d mails", n)
	}

	german := browserWith(t, withHeaders{"User-Agent": firefoxUA, "Accept-Language": "de-DE,de;q=0.9"})
	p.signInWith(german, testEmail, testPassword)
	m := next("Neue Anmeldung bei Ihrem Konto", "Firefox unter Linux", "mit einem Browser angemeldet, der dafür noch nie verwendet wurde", `<html lang="de"`)
	notMe := linkIn(t, m, "/account/not-me")
	if strings.Contains(m.Raw, testPassword) {
		t.Fatal("the mail holds the password")
	}
	p.signInWith(german, testEmail, testPassword) // a known browser now
	p.signInWith(first, testEmail, testPassword)  // known since the first sign-in
	if n := p.mailCount(t, mp, testEmail); n != 1 {
		t.Fatalf("%d mails, want 1: a known browser's sign-in was mailed", n)
	}

	english := browserWith(t, withHeaders{"User-Agent": chromeUA})
	p.signInWith(english, testEmail, testPassword)
	m = next("New sign-in to your", "Chrome on Windows", "from a browser it had not been used with before", "If it was not you, someone knows your password")
	if other := linkIn(t, m, "/account/not-me"); other == notMe {
		t.Fatal("two mails carry the same link")
	}
}

// "This wasn't me": the link's GET acts on nothing (a mail scanner follows it); its button signs the
// account out everywhere (the other browser's grant stops refreshing, its session asks again), mails a
// reset link, and the link is used up.
func TestNewBrowser_ThisWasntMe_SignsOutEverywhere(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	p := startProvider(t, setup{mail: mp})
	p.user(testEmail, testPassword)
	next := mailsTo(t, mp, testEmail)
	owner := newBrowser(t)
	ownerTokens := p.signInWith(owner, testEmail, testPassword)
	intruder := newBrowser(t)
	intruderTokens := p.signInWith(intruder, testEmail, testPassword)
	notMe := linkIn(t, next("New sign-in to your"), "/account/not-me")

	reader := newBrowser(t)
	res := reader.get(notMe)
	if res.StatusCode != http.StatusOK || !strings.Contains(res.body, "Sign out everywhere") {
		t.Fatalf("the link's page: %d\n%.600s", res.StatusCode, res.body)
	}
	reader.get(notMe) // a scanner, twice
	if r := p.refresh(intruderTokens.RefreshToken); r.status != http.StatusOK {
		t.Fatalf("the GET signed out: refresh %d %s", r.status, r.Error)
	}
	f := formTo(t, p.base, res.body, "/account/not-me")
	bad := url.Values{"token": f.fields["token"], "csrf_token": {"forged"}}
	if r := reader.postForm(f.action, bad); r.StatusCode != http.StatusForbidden {
		t.Fatalf("a forged CSRF token: %d", r.StatusCode)
	}
	res = reader.postForm(f.action, f.fields)
	if res.StatusCode != http.StatusOK || !strings.Contains(res.body, "was signed out everywhere") {
		t.Fatalf("the button: %d\n%.600s", res.StatusCode, res.body)
	}
	for name, tk := range map[string]tokens{"the intruder's": intruderTokens, "the owner's": ownerTokens} {
		if r := p.refresh(tk.RefreshToken); r.status != http.StatusBadRequest {
			t.Errorf("%s grant still refreshes: %d", name, r.status)
		}
	}
	if !p.signedOut(intruder) {
		t.Error("the intruder's browser is still signed in")
	}
	linkIn(t, next("Reset your password"), "/account/reset")

	if r := reader.postForm(f.action, f.fields); r.StatusCode != http.StatusGone {
		t.Fatalf("the link used again: %d", r.StatusCode)
	}
	if r := reader.get(notMe); r.StatusCode != http.StatusGone {
		t.Fatalf("the used link's page: %d", r.StatusCode)
	}
	if got := strings.Join(kindsOf(t, p, audit.NotMe), "\n"); !strings.Contains(got, "account.not_me success") || !strings.Contains(got, "account.not_me failure csrf") {
		t.Fatalf("not-me events:\n%s", got)
	}
}

// The new-browser mail is rated per account: however many new browsers sign in, at most
// auth.notify.mailsPerAccount mails go out within auth.notify.window; the rest are dropped and counted.
func TestNewBrowser_MailsRatedPerAccount(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	p := startProvider(t, setup{mail: mp, mutate: func(c *config.Config) { c.Auth.Notify.MailsPerAccount = 2 }})
	p.user(testEmail, testPassword)
	p.user("grace@example.com", testPassword)
	for range 6 {
		p.signInWith(newBrowser(t), testEmail, testPassword)
	}
	p.signInWith(newBrowser(t), "grace@example.com", testPassword)
	p.signInWith(newBrowser(t), "grace@example.com", testPassword)
	if n := p.mailCount(t, mp, testEmail); n != 2 {
		t.Fatalf("%d mails after 5 new browsers (the first sign-in is not mailed), want 2", n)
	}
	if n := p.mailCount(t, mp, "grace@example.com"); n != 1 { // another account's budget is its own
		t.Fatalf("grace: %d mails, want 1", n)
	}
	body := metricsOf(t, p)
	for _, want := range []string{`formsservice_auth_notices_total{notice="new_browser",result="dropped"} 3`, `formsservice_auth_notices_total{notice="new_browser",result="sent"} 3`} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// A lockout is mailed once, with a link that lets the owner's browser through: after its button that
// browser signs in, while the guesser's browser is still refused; the link works once.
func TestLockout_IsMailed_UnblockLetsTheOwnersBrowserThrough(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	p := startProvider(t, setup{mail: mp, mutate: func(c *config.Config) {
		c.Auth.Throttle.AccountFailures, c.Auth.Throttle.DelayAfter = 3, 100 // no delays: three failures lock
	}})
	p.user(testEmail, testPassword)
	next := mailsTo(t, mp, testEmail)
	guesser := browserWith(t, withHeaders{"User-Agent": chromeUA, "Accept-Language": "de"})
	guess := func(b *browser, password string) response {
		page := b.get(p.authorizeURL("state-0123456789", oauth2.GenerateVerifier()))
		return b.signIn(p.base, page.body, testEmail, password)
	}
	for i := range 3 {
		if res := guess(guesser, "wrong password "+string(rune('a'+i))); res.StatusCode != http.StatusUnauthorized && res.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("guess %d: %d", i, res.StatusCode)
		}
	}
	if res := guess(guesser, "wrong password d"); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("after the lockout: %d", res.StatusCode)
	}
	m := next("Die Anmeldung bei Ihrem Konto", "Chrome unter Windows", "Browsern aus, mit denen Sie sich noch nie angemeldet haben")
	unblock := linkIn(t, m, "/account/unblock")
	if n := p.mailCount(t, mp, testEmail); n != 1 {
		t.Fatalf("%d mails, want 1 (the refused attempt after the lockout sends none)", n)
	}

	owner := newBrowser(t)
	if res := guess(owner, testPassword); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the owner's new browser before the link: %d", res.StatusCode)
	}
	res := owner.get(unblock)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the link's page: %d\n%.600s", res.StatusCode, res.body)
	}
	if res := guess(owner, testPassword); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the link's GET let the browser through: %d", res.StatusCode)
	}
	f := formTo(t, p.base, res.body, "/account/unblock")
	if r := owner.postForm(f.action, f.fields); r.StatusCode != http.StatusOK || !strings.Contains(r.body, "can sign in again") {
		t.Fatalf("the button: %d\n%.600s", r.StatusCode, r.body)
	}
	p.signInWith(owner, testEmail, testPassword)
	if res := guess(guesser, testPassword); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the guesser's browser with the right password after the unblock: %d", res.StatusCode)
	}
	if r := newBrowser(t).postForm(f.action, f.fields); r.StatusCode != http.StatusGone && r.StatusCode != http.StatusForbidden {
		t.Fatalf("the link used again: %d", r.StatusCode)
	}
	if r := owner.postForm(f.action, f.fields); r.StatusCode != http.StatusGone {
		t.Fatalf("the link used again from the owner's browser: %d", r.StatusCode)
	}
	if got := strings.Join(kindsOf(t, p, audit.Unblocked), "\n"); !strings.Contains(got, "account.unblocked success") {
		t.Fatalf("unblock events:\n%s", got)
	}
	if n := p.mailCount(t, mp, testEmail); n != 1 {
		t.Fatalf("%d mails, want 1 (the unblocked browser is a known one)", n)
	}
}

// metricsOf is p's /metrics.
func metricsOf(t *testing.T, p *provider) string {
	t.Helper()
	return newBrowser(t).get(p.base + "/metrics").body
}

// newBrowserMailsOff turns the new-browser mail off, for the tests that count or order the other mails
// while several browsers sign in (this file tests it).
func newBrowserMailsOff(c *config.Config) {
	off := false
	c.Auth.Notify.NewBrowser = &off
}

// With two-step sign-in the new browser is known after its password and mailed once its code is
// accepted: the challenge carries it over to the session (a browser that stops at the code page gets no
// mail: nobody signed in).
func TestNewBrowser_AfterTheSecondStep(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	clock := newTestClock()
	p := startProvider(t, setup{mail: mp, now: clock.now})
	p.user(testEmail, testPassword)
	next := mailsTo(t, mp, testEmail)
	b := newBrowser(t)
	p.accountSignIn(b, testEmail, testPassword, nil)
	secret, _ := p.enrolTOTP(b, clock)
	next("Two-step sign-in was turned on")
	clock.nextStep()

	other := newBrowser(t)
	page := other.get(p.authorizeURL("state-0123456789", oauth2.GenerateVerifier()))
	codePage := other.signIn(p.base, page.body, testEmail, testPassword)
	if n := p.mailCount(t, mp, testEmail); n != 1 {
		t.Fatalf("%d mails after the password alone, want 1", n)
	}
	if res := other.secondStep(p.base, codePage, clock.code(t, secret)); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the code: %d\n%.400s", res.StatusCode, res.body)
	}
	next("New sign-in to your", "from a browser it had not been used with before")
}
