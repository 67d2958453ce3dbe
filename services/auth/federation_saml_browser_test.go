package auth_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testbrowser"
	"github.com/formsservice/formsservice/internal/testsaml"
)

// In Chromium, through a real SAML IdP on another site (localhost, where we are 127.0.0.1): the sign-in
// page's button, the IdP's login page, its page posting the signed answer to our ACS cross-site (no
// SameSite=Lax cookie goes with it), the same-site step to /oauth2/callback that carries fs_fed, and
// back to the app with a code; a disabled account refused on the sign-in page, axe-checked (D76).
func TestFederation_SAML_InChromium(t *testing.T) {
	f := startSAMLAt(t, "localhost", []testsaml.User{{Login: "newcomer", Email: "newcomer@example.com", Name: "New Comer"}})
	viaIdP := func(x *person) {
		t.Helper()
		x.do("opening the app's sign-in", chromedp.Navigate(f.authorizeURL("state-saml-chromium", oauth2.GenerateVerifier())))
		x.waitFor("the sign-in page", `a[data-connector="corp"]`)
		if s := x.text("the connector's button", `a[data-connector="corp"]`); s != "Sign in with Corp" {
			t.Errorf("the button says %q", s)
		}
		x.mark()
		x.do("choosing the IdP", chromedp.Click(chromedp.CSS(`a[data-connector="corp"]`)))
		x.waitFor("the IdP's login page", `input[name="password"]`)
		if !strings.HasPrefix(x.location(), f.idp.URL) || !strings.HasPrefix(f.idp.URL, "http://localhost:") {
			t.Fatalf("the login page is at %s, not the IdP's on another site", x.location())
		}
		x.mark()
		x.do("signing in at the IdP", chromedp.SendKeys(chromedp.CSS(`input[name="user"]`), "newcomer"),
			chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), testsaml.Password), chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
	}

	x := &person{t: t, p: f.provider, ctx: testbrowser.New(t)}
	x.do("opening the app's sign-in", chromedp.Navigate(f.authorizeURL("state-saml-chromium", oauth2.GenerateVerifier())))
	x.waitFor("the sign-in page", `a[data-connector="corp"]`)
	x.check("the sign-in page with a SAML connector", "")
	viaIdP(x)
	if x.landedCode() == "" {
		t.Fatal("no code after signing in through the IdP")
	}

	if _, err := f.svc.Users().SetDisabled(context.Background(), "newcomer@example.com", true); err != nil {
		t.Fatal(err)
	}
	y := &person{t: t, p: f.provider, ctx: testbrowser.New(t)}
	viaIdP(y)
	y.waitFor("the refusal", "#signin-error")
	if s := y.text("the refusal", "#signin-error"); s != "This account is disabled." {
		t.Errorf("a disabled account: the page says %q", s)
	}
	y.check("a SAML sign-in refused", "")
}
