package auth_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testbrowser"
)

// In Chromium, through a real directory (slapd): the sign-in page's button for the ldap connector, its
// username and password page (axe-checked, light and dark, 320 px; and with a refusal), and back to the
// app with a code (D75).
func TestFederation_LDAPInChromium(t *testing.T) {
	f := startDirectory(t, false)
	x := &person{t: t, p: f.provider, ctx: testbrowser.New(t)}
	x.do("opening the app's sign-in", chromedp.Navigate(f.authorizeURL("state-ldap-chromium", oauth2.GenerateVerifier())))
	x.waitFor("the sign-in page", `a[data-connector="corp"]`)
	if s := x.text("the connector's button", `a[data-connector="corp"]`); s != "Sign in with Corp directory" {
		t.Errorf("the button says %q", s)
	}
	x.mark()
	x.do("choosing the directory", chromedp.Click(chromedp.CSS(`a[data-connector="corp"]`)))
	x.waitFor("the directory's page", `input[name="username"]`)
	x.check("the directory's sign-in page", "")
	x.mark()
	x.do("signing in with a wrong password", chromedp.SendKeys(chromedp.CSS(`input[name="username"]`), "alice"),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "not-her-password"), chromedp.Click(chromedp.CSS(`form button[type="submit"]`)))
	x.waitFor("the refusal", "#signin-error")
	if s := x.text("the refusal", "#signin-error"); !strings.HasPrefix(s, "Wrong username or password.") {
		t.Errorf("the page says %q", s)
	}
	x.check("the directory's page with a refusal", "")
	// The page kept the username; the password is typed again.
	if v := testbrowser.Get(t, x.ctx, "the username kept", chromedp.Evaluate[string](`document.querySelector('input[name="username"]').value`)); v != "alice" {
		t.Errorf("the username field holds %q", v)
	}
	x.mark()
	x.do("signing in", chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "alice-pass"), chromedp.Click(chromedp.CSS(`form button[type="submit"]`)))
	if x.landedCode() == "" {
		t.Fatal("no code after signing in through the directory")
	}
}
