package auth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testbrowser"
	"github.com/formsservice/formsservice/internal/testmail"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/auth/acr"
	"github.com/formsservice/formsservice/services/platform/config"
)

// person is one headless Chromium (its own cookies) used by the browser tests.
type person struct {
	t   *testing.T
	p   *provider
	ctx context.Context
}

func (x *person) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	x.t.Helper()
	testbrowser.Do(x.t, x.ctx, what, actions...)
}

func (x *person) text(what, sel string) string {
	x.t.Helper()
	return testbrowser.Get(x.t, x.ctx, what, chromedp.Text(chromedp.CSS(sel)))
}

func (x *person) location() string {
	x.t.Helper()
	return testbrowser.Get(x.t, x.ctx, "location", chromedp.Location())
}

// check runs axe-core (WCAG 2.2 A and AA) on the page as it is, at 320 px in light and dark mode, checks
// that nothing scrolls sideways, and writes a screenshot for the docs when SCREENSHOTS names a folder
// (docs/img: `SCREENSHOTS=$PWD/docs/img go test -run InChromium ./services/auth/`).
func (x *person) check(what, shot string) {
	x.t.Helper()
	for _, scheme := range []string{"light", "dark"} {
		w := what + " at 320 px, " + scheme
		x.do(w, testbrowser.Viewport(320, scheme))
		testbrowser.Accessible(x.t, x.ctx, w)
		if width := testbrowser.Get(x.t, x.ctx, w, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); width > 320 {
			x.t.Errorf("%s: %d px wide (scrolls sideways)", w, width)
		}
	}
	if dir := os.Getenv("SCREENSHOTS"); dir != "" && shot != "" {
		x.do("screenshot", testbrowser.Viewport(400, "light"))
		png := testbrowser.Get(x.t, x.ctx, "screenshot", chromedp.FullScreenshot(100))
		if err := os.WriteFile(filepath.Join(dir, "account-"+shot+".png"), png, 0o644); err != nil {
			x.t.Fatal(err)
		}
	}
}

// waitFor waits until the page shows sel (after a form was sent).
// mark flags the page shown now, before an action that leaves it: waitFor then waits for a page
// without the flag, so it never mistakes the old page for the next one.
func (x *person) mark() {
	x.t.Helper()
	testbrowser.Get(x.t, x.ctx, "marking the page", chromedp.Evaluate[bool](`window.__left = true`))
}

// waitFor waits until a page loaded after the last mark shows sel.
func (x *person) waitFor(what, sel string) {
	x.t.Helper()
	js := fmt.Sprintf(`(() => { if (window.__left || document.readyState !== "complete") return false;
		const e = document.querySelector(%q); return !!e && e.getClientRects().length > 0; })()`, sel)
	if err := testwait.Poll(30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(x.ctx, 5*time.Second)
		defer cancel()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err != nil {
			return err // the page is between documents
		}
		if !ok {
			return errors.New("not shown yet")
		}
		return nil
	}); err != nil {
		body, _ := chromedp.Run(x.ctx, chromedp.Text("body"))
		x.t.Fatalf("%s: %s: %v; at %s the page says:\n%.1500s", what, sel, err, x.location(), body)
	}
}

// landedCode waits for the redirect to the client and returns its code.
func (x *person) landedCode() string {
	x.t.Helper()
	var loc *url.URL
	testwait.Until(x.t, 30*time.Second, "the redirect to the client", func() error {
		u, err := url.Parse(x.location())
		if err != nil || !strings.HasPrefix(u.String(), x.p.redirect+"?") {
			return errors.New("at " + x.location())
		}
		loc = u
		return nil
	})
	if e := loc.Query().Get("error"); e != "" {
		x.t.Fatalf("authorize error %s: %s", e, loc.Query().Get("error_description"))
	}
	return loc.Query().Get("code")
}

func (x *person) signIn(email, password string) {
	x.t.Helper()
	x.waitFor("the sign-in page", "#password")
	x.mark()
	x.do("signing in", chromedp.SendKeys(chromedp.CSS("#email"), email), chromedp.SendKeys(chromedp.CSS("#password"), password), chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
}

func (x *person) clearCode() {
	x.t.Helper()
	testbrowser.Get(x.t, x.ctx, "clearing the code", chromedp.Evaluate[bool](`(document.querySelector("#code").value = "") === ""`))
}

func (x *person) enterCode(code, waitSel string) {
	x.t.Helper()
	x.clearCode()
	x.mark()
	x.do("entering "+code, chromedp.SendKeys(chromedp.CSS("#code"), code), chromedp.Click(chromedp.CSS(`form button[type="submit"]`)))
	x.waitFor("after the code", waitSel)
}

// Every account journey in headless Chromium against a real redis-server and Mailpit: the account page
// signed in through the hosted page, the set-up of an authenticator app with its QR code and recovery
// codes, the second step of a sign-in (a wrong code, a replayed code, a recovery code once), a client
// with requireMFA, the sessions and grants listed and ended, and the password changed (the wrong current
// password refused, the other sessions ended, the mail sent). axe-core checks every page and state at
// 320 px in light and dark mode; go-oidc verifies the ID tokens' amr and acr.
func TestAccount_InChromium_EveryJourney(t *testing.T) {
	clock := newTestClock()
	mp := testmail.Start(t, testmail.Options{})
	p := startProvider(t, setup{now: clock.now, mail: mp, mutate: func(c *config.Config) {
		c.Auth.Clients = append(c.Auth.Clients, config.OAuthClient{ClientID: "strict", Name: "Strict App", RequireMFA: true,
			RedirectURIs: []string{c.PublicURL + "/cb"}})
	}})
	p.user(testEmail, testPassword)
	if _, _, err := p.svc.Users().AddGroups(t.Context(), testEmail, []string{"ops", "system:masters"}); err != nil { // the read-only groups block, checked by axe too
		t.Fatal(err)
	}
	a := &person{t: t, p: p, ctx: testbrowser.New(t)}
	b := &person{t: t, p: p, ctx: testbrowser.New(t)}

	// The account page signs in through the hosted page and comes back.
	a.do("opening /account", chromedp.Navigate(p.base+"/account"))
	a.waitFor("the sign-in page", "#password")
	if sub := a.text("subtitle", ".sub"); !strings.Contains(sub, "your account") {
		t.Errorf("the sign-in page says %q", sub)
	}
	a.check("sign-in for the account page", "signin")
	a.signIn(testEmail, testPassword)
	a.waitFor("the account page", "#password-title")
	a.check("account page", "page")
	if g := a.text("groups", "#groups-title + p + ul"); !strings.Contains(g, "ops") || !strings.Contains(g, "system:masters") {
		t.Errorf("the groups block says %q", g)
	}

	// Set up the app: the QR code and the key as text; a wrong code refused; the right one shows the
	// recovery codes once.
	a.mark()
	a.do("setting up", chromedp.Click(chromedp.CSS(`a[href$="/account/totp"]`)))
	a.waitFor("the set-up", "svg.qr")
	a.check("set-up of an authenticator app", "totp")
	secret := strings.ReplaceAll(a.text("the key", ".secret"), " ", "")
	if uri := testbrowser.Get(t, a.ctx, "the setup link", chromedp.TextContent(chromedp.CSS(".uri"))); !strings.Contains(uri, "secret="+secret) {
		t.Fatalf("the setup link %q does not carry the key %q", uri, secret)
	}
	a.enterCode("000000", "#code-error")
	a.check("set-up, wrong code", "")
	confirmed := clock.code(t, secret)
	a.enterCode(confirmed, "ol.codes")
	a.check("recovery codes", "codes")
	codes := strings.Fields(a.text("the codes", "ol.codes"))
	if len(codes) != 10 {
		t.Fatalf("recovery codes %v", codes)
	}
	a.mark()
	a.do("back", chromedp.Click(chromedp.CSS(`a.button`)))
	a.waitFor("the account page", "#mfa-title")
	if s := a.text("two-step", "#mfa-title + p"); !strings.Contains(s, "10 of 10 recovery codes left") {
		t.Errorf("the page says %q", s)
	}

	// Another browser signs in to the app: password, then the code. A wrong code and the code already
	// used for the set-up are refused.
	verifier := oauth2.GenerateVerifier()
	b.do("opening the app's sign-in", chromedp.Navigate(p.authorizeURL("state-0123456789", verifier)))
	b.signIn(testEmail, testPassword)
	b.waitFor("the second step", "#code")
	b.check("second step", "second-step")
	b.enterCode("000000", "#code-error")
	b.check("second step, wrong code", "second-step-wrong")
	b.enterCode(confirmed, "#code-error")
	if e := b.text("error", "#code-error"); !strings.Contains(e, "used already") {
		t.Errorf("a replayed code: %q", e)
	}
	clock.nextStep()
	b.clearCode()
	b.mark()
	b.do("entering the right code", chromedp.SendKeys(chromedp.CSS("#code"), clock.code(t, secret)), chromedp.Click(chromedp.CSS(`form button[type="submit"]`)))
	tk := p.exchange(b.landedCode(), verifier)
	if amr, level := p.verifyIDToken(tk.IDToken); strings.Join(amr, " ") != "pwd otp mfa" || level != acr.TwoFactor {
		t.Fatalf("amr %v acr %q", amr, level)
	}

	// A recovery code instead, twice: once it works, then it is spent.
	for i := range 2 {
		b.do("signing in again", chromedp.Navigate(p.authorizeURL("state-0123456789", verifier, oauth2.SetAuthURLParam("prompt", "login"))))
		b.signIn(testEmail, testPassword)
		b.waitFor("the second step", "#code")
		if i == 0 {
			b.mark()
			b.do("a recovery code", chromedp.SendKeys(chromedp.CSS("#code"), codes[0]), chromedp.Click(chromedp.CSS(`form button[type="submit"]`)))
			b.landedCode()
			continue
		}
		b.enterCode(codes[0], "#code-error")
		if e := b.text("error", "#code-error"); !strings.Contains(e, "recovery code is not right, or was used already") {
			t.Errorf("a spent recovery code: %q", e)
		}
	}

	// The account page lists both browsers and the app's grant; removing the grant ends its refresh token,
	// signing the other browser out ends its session.
	a.do("reloading the account page", chromedp.Navigate(p.base+"/account"))
	a.waitFor("the account page", "#sessions-title")
	if n := testbrowser.Get(t, a.ctx, "sessions", chromedp.Evaluate[int](`document.querySelectorAll('section[aria-labelledby="sessions-title"] li').length`)); n != 2 {
		t.Errorf("%d sessions listed, want 2", n)
	}
	if s := a.text("grants", `section[aria-labelledby="grants-title"] li`); !strings.Contains(s, "Test App") || !strings.Contains(s, "Stays signed in") {
		t.Errorf("the grant: %q", s)
	}
	a.check("account page with sessions and grants", "sessions")
	a.mark()
	a.do("removing the app's access", chromedp.Click(chromedp.CSS(`form[action$="/account/grants/end"] button`)))
	a.waitFor("the notice", `div[role="status"]`)
	if got := p.refresh(tk.RefreshToken); got.status != http.StatusBadRequest || got.Error != "invalid_grant" {
		t.Fatalf("the removed grant's refresh token: %d %s", got.status, got.Error)
	}
	a.mark()
	a.do("signing the other browser out", chromedp.Click(chromedp.CSS(`section[aria-labelledby="sessions-title"] li:not(:has(.tag)) button`)))
	a.waitFor("the notice", `div[role="status"]`)
	a.check("account page after ending a session", "")
	b.do("the app again", chromedp.Navigate(p.authorizeURL("state-0123456789", verifier)))
	b.waitFor("the sign-in page: the session ended", "#password")

	// A client that requires a second factor: a user without one sets it up on the way, then lands.
	const grace = "grace@example.com"
	p.user(grace, testPassword)
	c := &person{t: t, p: p, ctx: testbrowser.New(t)}
	strict := p.oauth2Config()
	strict.ClientID = "strict"
	c.do("opening the strict app's sign-in", chromedp.Navigate(strict.AuthCodeURL("state-0123456789", oauth2.S256ChallengeOption(verifier))))
	c.signIn(grace, testPassword)
	c.waitFor("the set-up", "svg.qr")
	if s := c.text("who asks", `[role="status"]`); !strings.Contains(s, "Strict App asks for a second step") {
		t.Errorf("the set-up says %q", s)
	}
	c.check("set-up asked for by a client", "totp-required")
	graceSecret := strings.ReplaceAll(c.text("the key", ".secret"), " ", "")
	c.enterCode(clock.code(t, graceSecret), "ol.codes")
	c.mark()
	c.do("continuing to the app", chromedp.Click(chromedp.CSS(`a.button`)))
	tk2 := p.tokenRequest(url.Values{"grant_type": {"authorization_code"}, "code": {c.landedCode()}, "redirect_uri": {p.redirect},
		"client_id": {"strict"}, "code_verifier": {verifier}})
	if amr, _ := p.verifyIDTokenFor("strict", tk2.IDToken); strings.Join(amr, " ") != "pwd otp mfa" {
		t.Fatalf("requireMFA: amr %v", amr)
	}

	// The password: a wrong current one is refused; the right one changes it, ends the other browser's
	// session (b signs in again first) and sends the mail.
	b.signIn(testEmail, testPassword)
	b.waitFor("the second step", "#code")
	clock.nextStep()
	b.enterCode(clock.code(t, secret), "body") // lands on the client
	b.landedCode()
	a.do("reloading the account page", chromedp.Navigate(p.base+"/account"))
	a.waitFor("the account page", "#current-password")
	a.mark()
	a.do("a wrong current password", chromedp.SendKeys(chromedp.CSS("#current-password"), "not my password"), chromedp.SendKeys(chromedp.CSS("#new-password"), "a brand new passphrase"),
		chromedp.Click(chromedp.CSS(`form[action$="/account/password"] button`)))
	a.waitFor("the error", "#current-password-error")
	a.check("password change, wrong current password", "password-wrong")
	const newPassword = "a brand new passphrase"
	a.mark()
	a.do("the right current password", chromedp.SendKeys(chromedp.CSS("#current-password"), testPassword), chromedp.SendKeys(chromedp.CSS("#new-password"), newPassword),
		chromedp.Click(chromedp.CSS(`form[action$="/account/password"] button`)))
	a.waitFor("the notice", `div[role="status"]`)
	if s := a.text("notice", `div[role="status"]`); !strings.Contains(s, "Your password was changed") {
		t.Errorf("the notice: %q", s)
	}
	a.check("account page after the password change", "password-changed")
	m := mp.Latest(t, testEmail, 30*time.Second)
	if !strings.Contains(m.Subject, "Your password for") || !strings.Contains(m.Text, "was changed") || !strings.Contains(m.HTML, p.base+"/account") {
		t.Errorf("the mail: %q\n%s", m.Subject, m.Text)
	}
	b.do("the app again", chromedp.Navigate(p.authorizeURL("state-0123456789", verifier)))
	b.waitFor("the sign-in page: signed out by the password change", "#password")
	// This browser stays signed in; its own session's "Sign out" ends it.
	a.mark()
	a.do("signing this browser out", chromedp.Click(chromedp.CSS(`section[aria-labelledby="sessions-title"] li:has(.tag) button`)))
	a.waitFor("signed out", "h1")
	if h := a.text("title", "h1"); h != "You are signed out" {
		t.Errorf("after signing this browser out: %q", h)
	}
	a.check("signed out from the account page", "")
}
