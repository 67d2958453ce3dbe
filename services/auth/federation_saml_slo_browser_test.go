package auth_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testbrowser"
	"github.com/formsservice/formsservice/internal/testsaml"
	"github.com/formsservice/formsservice/internal/testwait"
)

// Single logout in Chromium, with the IdP on another site (localhost; we are 127.0.0.1), D89: signing
// out of the app goes through the IdP's SLO and back to our "signed out" page (axe-checked), and the
// next sign-in asks the IdP's password again; then the IdP's own logout ends our session through
// our SLO URL and comes back to the IdP.
func TestFederation_SAMLSingleLogout_InChromium(t *testing.T) {
	f := startSAMLAt(t, "localhost", []testsaml.User{{Login: "ada", Email: testEmail, Name: "Ada"}})
	x := &person{t: t, p: f.provider, ctx: testbrowser.New(t)}
	signIn := func() tokens {
		t.Helper()
		verifier := oauth2.GenerateVerifier()
		x.do("opening the app's sign-in", chromedp.Navigate(f.authorizeURL("state-slo-chromium", verifier)))
		x.waitFor("the sign-in page", `a[data-connector="corp"]`)
		x.mark()
		x.do("choosing the IdP", chromedp.Click(chromedp.CSS(`a[data-connector="corp"]`)))
		x.waitFor("the IdP's login page (its session is gone)", `input[name="password"]`)
		x.mark()
		x.do("signing in at the IdP", chromedp.SendKeys(chromedp.CSS(`input[name="user"]`), "ada"),
			chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), testsaml.Password), chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
		tk := f.exchange(x.landedCode(), verifier)
		if tk.status != http.StatusOK {
			t.Fatalf("exchange: %d %s", tk.status, tk.Error)
		}
		return tk
	}

	tk := signIn()
	x.mark()
	x.do("signing out of the app", chromedp.Navigate(f.base+"/oauth2/logout?"+url.Values{"id_token_hint": {tk.IDToken}}.Encode()))
	x.waitFor("our signed-out page, after the IdP's SLO", "h1#title")
	if loc := x.location(); !strings.HasPrefix(loc, f.base+"/oauth2/saml/corp/slo?SAMLResponse=") {
		t.Fatalf("the signed-out page is at %s, not our SLO URL after the IdP's answer", loc)
	}
	if s := x.text("the signed-out page", "h1#title"); s != "You are signed out" {
		t.Errorf("the signed-out page says %q", s)
	}
	x.check("signed out through the IdP", "")
	if rt := f.refresh(tk.RefreshToken); rt.status == http.StatusOK {
		t.Fatal("the grant survived the logout")
	}

	// Signed in again (the IdP asks for the password: its session ended), then out at the IdP.
	tk = signIn()
	x.do("logging out at the IdP", chromedp.Navigate(f.idp.URL+"/logout"))
	testwait.Until(t, 30*time.Second, "the IdP's logout, through our SLO and back", func() error {
		if loc := x.location(); !strings.HasPrefix(loc, f.idp.URL+"/slo?SAMLResponse=") {
			return errors.New("at " + loc)
		}
		return nil
	})
	if rt := f.refresh(tk.RefreshToken); rt.status == http.StatusOK {
		t.Fatal("the grant survived the IdP's logout")
	}
	x.do("opening the app's sign-in", chromedp.Navigate(f.authorizeURL("state-slo-after", oauth2.GenerateVerifier())))
	x.waitFor("the sign-in page (our session ended)", `a[data-connector="corp"]`)
}
