package auth_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testbrowser"
)

// In Chromium: an account with a password from before the rules signs in to the app and is shown the
// page asking for a new one (axe-checked); it follows the link to the account page, which says why; a
// password of the breach list is refused there with the reason at the field; a strong one is taken, and
// the next sign-in goes straight back to the app.
func TestOldWeakPassword_InChromium_AskedThenChanged(t *testing.T) {
	p := startProvider(t, setup{})
	const old = "password"
	p.user(testEmail, old)
	x := &person{t: t, p: p, ctx: testbrowser.New(t)}

	x.do("opening the app's sign-in", chromedp.Navigate(p.authorizeURL("state-weak-chromium", oauth2.GenerateVerifier())))
	x.signIn(testEmail, old)
	x.waitFor("the page asking for a new password", "#journey-notice")
	if h := x.text("title", "h1"); h != "Please choose a new password" {
		t.Errorf("the page's title is %q", h)
	}
	if s := x.text("skip link", `main p:last-of-type a`); !strings.HasPrefix(s, "Not now: continue to ") {
		t.Errorf("the way on says %q", s)
	}
	x.check("asked for a new password", "")

	x.mark()
	x.do("choosing a new password now", chromedp.Click(chromedp.CSS(`a[href$="/account#password-title"]`)))
	x.waitFor("the account page", "#password-error")
	if s := x.text("the account page's alert", "#password-error"); !strings.Contains(s, "does not meet our rules") {
		t.Errorf("the account page says %q", s)
	}
	change := func(next, waitSel string) {
		x.mark()
		x.do("changing to "+next, chromedp.SendKeys(chromedp.CSS("#current-password"), old), chromedp.SendKeys(chromedp.CSS("#new-password"), next),
			chromedp.Click(chromedp.CSS(`form[action$="/account/password"] button[type="submit"]`)))
		x.waitFor("after the change", waitSel)
	}
	change("password1234", "#new-password-error")
	if s := x.text("the field's error", "#new-password-error"); !strings.Contains(s, "leaked in data breaches") {
		t.Errorf("the field says %q", s)
	}
	x.check("a breached new password refused", "")
	change(strongNew, ".status")
	if body := x.text("the account page", "main"); strings.Contains(body, "does not meet our rules") {
		t.Error("the account page still asks after the change")
	}

	y := &person{t: t, p: p, ctx: testbrowser.New(t)}
	y.do("signing in again", chromedp.Navigate(p.authorizeURL("state-weak-after", oauth2.GenerateVerifier())))
	y.signIn(testEmail, strongNew)
	if y.landedCode() == "" {
		t.Fatal("no code after signing in with the new password")
	}
}
