package auth_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testbrowser"
)

// In Chromium, against a real directory (slapd): a person signed in with a password links their
// directory account from the account page (its form axe-checked, light and dark, 320 px, in English and
// in German with a refusal), signs in through the directory in another browser to the same account,
// and removes the link (D82).
func TestFederation_LDAPLinkInChromium(t *testing.T) {
	f := startDirectory(t, false)
	id := f.user(testEmail, testPassword)
	a := &person{t: t, p: f.provider, ctx: testbrowser.New(t)}
	a.do("opening /account", chromedp.Navigate(f.base+"/account"))
	a.signIn(testEmail, testPassword)
	a.waitFor("the account page", `a[data-connector="corp"]`)
	if s := a.text("the link", `a[data-connector="corp"]`); s != "Link Corp directory" {
		t.Errorf("the link says %q", s)
	}
	a.check("the account page with a directory to link", "")
	a.mark()
	a.do("choosing to link the directory", chromedp.Click(chromedp.CSS(`a[data-connector="corp"]`)))
	a.waitFor("the directory's link form", `input[name="username"]`)
	a.check("the directory's link form", "")

	a.do("a German browser", acceptLanguage("de"))
	a.mark()
	a.do("linking with a wrong password", chromedp.SendKeys(chromedp.CSS(`input[name="username"]`), "alice"),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "not-her-password"), chromedp.Click(chromedp.CSS(`main form button[type="submit"]`)))
	a.waitFor("the refusal", "#link-error")
	if s := a.text("the refusal", "#link-error"); !strings.HasPrefix(s, "Benutzername oder Passwort falsch.") {
		t.Errorf("the German page says %q", s)
	}
	if s := a.text("the heading", "h1"); s != "Corp directory verknüpfen" {
		t.Errorf("the German heading is %q", s)
	}
	a.check("the directory's link form, German, with a refusal", "ldap-link-de")
	a.do("an English browser", acceptLanguage("en"))
	a.mark()
	// The form kept the username; the password is typed again.
	a.do("linking", chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "alice-pass"), chromedp.Click(chromedp.CSS(`main form button[type="submit"]`)))
	a.waitFor("the account page, linked", `#identities-title`)
	if s := a.text("the notice", `[role="status"]`); !strings.Contains(s, "The account was linked") {
		t.Errorf("the notice says %q", s)
	}
	if s := a.text("the linked account", `section[aria-labelledby="identities-title"] .item-meta`); !strings.Contains(s, "alice@example.com") {
		t.Errorf("the row says %q", s)
	}
	a.check("the account page with the directory linked", "")

	b := &person{t: t, p: f.provider, ctx: testbrowser.New(t)}
	b.do("opening the app's sign-in", chromedp.Navigate(f.authorizeURL("state-ldap-linked", oauth2.GenerateVerifier())))
	b.waitFor("the sign-in page", `a[data-connector="corp"]`)
	b.mark()
	b.do("choosing the directory", chromedp.Click(chromedp.CSS(`a[data-connector="corp"]`)))
	b.waitFor("the directory's page", `input[name="username"]`)
	b.mark()
	b.do("signing in as alice", chromedp.SendKeys(chromedp.CSS(`input[name="username"]`), "alice"),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "alice-pass"), chromedp.Click(chromedp.CSS(`form button[type="submit"]`)))
	if b.landedCode() == "" {
		t.Fatal("no code after signing in with the linked directory account")
	}
	subject := mustIdentity(t, f.svc.Users(), id)
	if u, err := f.svc.Users().ByIdentity(context.Background(), "corp", subject); err != nil || u.ID != id {
		t.Fatalf("the directory account signs in to %+v (%v), want %s", u, err, id)
	}

	a.mark()
	a.do("removing the link", chromedp.Click(chromedp.CSS(`form[action$="/account/connectors/unlink"] button`)))
	a.waitFor("the account page, unlinked", `a[data-connector="corp"]`)
	if s := a.text("the notice", `[role="status"]`); s != "The link was removed." {
		t.Errorf("the notice says %q", s)
	}
	if _, err := f.svc.Users().ByIdentity(context.Background(), "corp", subject); err == nil {
		t.Fatal("the link is still there")
	}
}
