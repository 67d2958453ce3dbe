package auth_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testbrowser"
	"github.com/formsservice/formsservice/internal/testgithub"
	"github.com/formsservice/formsservice/internal/testupstream"
)

// In Chromium, through a real upstream OpenID provider: the sign-in page's button (axe-checked, light
// and dark, 320 px), the upstream's own login page, and back to the app with a code; an unverified
// address of an existing account refused with the way to link it (axe-checked); a disabled account
// refused (D58).
func TestFederation_InChromium(t *testing.T) {
	f := startFederated(t, map[string]testupstream.Account{
		"newcomer": {"email": "newcomer@example.com", "email_verified": true, "name": "New Comer"},
		"mallory":  {"email": testEmail, "email_verified": false, "name": "Not Ada"},
	}, nil)
	f.user(testEmail, testPassword)
	viaButton := func(x *person, login string) {
		t.Helper()
		x.do("opening the app's sign-in", chromedp.Navigate(f.authorizeURL("state-fed-chromium", oauth2.GenerateVerifier())))
		x.waitFor("the sign-in page", `a[data-connector="upstream"]`)
		if s := x.text("the connector's button", `a[data-connector]`); s != "Sign in with Upstream" {
			t.Errorf("the button says %q", s)
		}
		x.mark()
		x.do("choosing the upstream", chromedp.Click(chromedp.CSS(`a[data-connector="upstream"]`)))
		x.waitFor("the upstream's login page", `input[name="login"]`)
		if !strings.HasPrefix(x.location(), f.issuer) {
			t.Fatalf("the login page is at %s, not the upstream's", x.location())
		}
		x.mark()
		x.do("signing in at the upstream as "+login, chromedp.SendKeys(chromedp.CSS(`input[name="login"]`), login),
			chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "any"), chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
	}

	x := &person{t: t, p: f.provider, ctx: testbrowser.New(t)}
	x.do("opening the app's sign-in", chromedp.Navigate(f.authorizeURL("state-fed-chromium", oauth2.GenerateVerifier())))
	x.waitFor("the sign-in page", `a[data-connector]`)
	x.check("the sign-in page with a connector", "")
	viaButton(x, "newcomer")
	if x.landedCode() == "" {
		t.Fatal("no code after signing in through the upstream")
	}

	y := &person{t: t, p: f.provider, ctx: testbrowser.New(t)}
	viaButton(y, "mallory")
	y.waitFor("the refusal", "#signin-error")
	if s := y.text("the refusal", "#signin-error"); !strings.Contains(s, "link Upstream on your account page") {
		t.Errorf("the page says %q", s)
	}
	y.check("an unverified address refused", "")

	if _, err := f.svc.Users().SetDisabled(context.Background(), "newcomer@example.com", true); err != nil {
		t.Fatal(err)
	}
	z := &person{t: t, p: f.provider, ctx: testbrowser.New(t)}
	viaButton(z, "newcomer")
	z.waitFor("the refusal", "#signin-error")
	if s := z.text("the refusal", "#signin-error"); s != "This account is disabled." {
		t.Errorf("a disabled account: the page says %q", s)
	}
}

// In Chromium: a person signed in with a password links an upstream account from the account page
// (whose address is not even the account's: the person proved both sides), signs in with it in
// another browser, and removes the link, after which that upstream account signs in to nothing of hers
// (a new account of its own); the page axe-checked with the link listed (D58).
func TestFederation_InChromium_LinkAndUnlink(t *testing.T) {
	f := startFederated(t, map[string]testupstream.Account{
		"ada-elsewhere": {"email": "ada.elsewhere@example.org", "email_verified": false, "name": "Ada Elsewhere"},
	}, nil)
	id := f.user(testEmail, testPassword)
	a := &person{t: t, p: f.provider, ctx: testbrowser.New(t)}
	a.do("opening /account", chromedp.Navigate(f.base+"/account"))
	a.signIn(testEmail, testPassword)
	a.waitFor("the account page", `button[data-connector="upstream"]`)
	a.mark()
	a.do("linking the upstream", chromedp.Click(chromedp.CSS(`button[data-connector="upstream"]`)))
	a.waitFor("the upstream's login page", `input[name="login"]`)
	a.mark()
	a.do("signing in at the upstream", chromedp.SendKeys(chromedp.CSS(`input[name="login"]`), "ada-elsewhere"),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "any"), chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
	a.waitFor("the account page, linked", `#identities-title`)
	if s := a.text("the notice", `[role="status"]`); !strings.Contains(s, "The account was linked") {
		t.Errorf("the notice says %q", s)
	}
	if s := a.text("the linked account", `section[aria-labelledby="identities-title"] .item-meta`); !strings.Contains(s, "ada.elsewhere@example.org") {
		t.Errorf("the row says %q", s)
	}
	a.check("the account page with a linked account", "")

	b := &person{t: t, p: f.provider, ctx: testbrowser.New(t)}
	b.do("opening the app's sign-in", chromedp.Navigate(f.authorizeURL("state-fed-linked", oauth2.GenerateVerifier())))
	b.waitFor("the sign-in page", `a[data-connector="upstream"]`)
	b.mark()
	b.do("choosing the upstream", chromedp.Click(chromedp.CSS(`a[data-connector="upstream"]`)))
	b.waitFor("the upstream's login page", `input[name="login"]`)
	b.mark()
	b.do("signing in at the upstream", chromedp.SendKeys(chromedp.CSS(`input[name="login"]`), "ada-elsewhere"),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "any"), chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
	if b.landedCode() == "" {
		t.Fatal("no code after signing in with the linked account")
	}
	if u, err := f.svc.Users().ByIdentity(context.Background(), "upstream", "ada-elsewhere"); err != nil || u.ID != id {
		t.Fatalf("the upstream account signs in to %+v (%v), want %s", u, err, id)
	}

	a.mark()
	a.do("removing the link", chromedp.Click(chromedp.CSS(`form[action$="/account/connectors/unlink"] button`)))
	a.waitFor("the account page, unlinked", `button[data-connector="upstream"]`)
	if s := a.text("the notice", `[role="status"]`); s != "The link was removed." {
		t.Errorf("the notice says %q", s)
	}
	if _, err := f.svc.Users().ByIdentity(context.Background(), "upstream", "ada-elsewhere"); err == nil {
		t.Fatal("the link is still there")
	}
}

// In Chromium, through a github connector (GitHub's side is internal/testgithub, an in-process server
// that answers as GitHub's documentation says: GitHub cannot be reached from here): the sign-in page
// with the button in GitHub's look (axe-checked, light and dark, 320 px), GitHub's authorize page, and
// back to the app with a code; a person outside the allowed organisations refused with the reason
// (axe-checked) (D64).
func TestFederation_GitHub_InChromium(t *testing.T) {
	f := startGitHub(t, map[string]testgithub.Account{
		"octocat":  {ID: 583231, Name: "The Octocat", Orgs: []string{"acme"}, Emails: []testgithub.Email{{Email: "octocat@example.com", Primary: true, Verified: true}}},
		"outsider": {ID: 13, Orgs: []string{"elsewhere"}, Emails: []testgithub.Email{{Email: "outsider@example.com", Primary: true, Verified: true}}},
	}, []string{"acme"})
	viaButton := func(x *person, login string) {
		t.Helper()
		x.do("opening the app's sign-in", chromedp.Navigate(f.authorizeURL("state-gh-chromium", oauth2.GenerateVerifier())))
		x.waitFor("the sign-in page", `a[data-connector="github"].brand-github svg`)
		if s := x.text("the GitHub button", `a[data-connector="github"]`); s != "Sign in with GitHub" {
			t.Errorf("the button says %q", s)
		}
		x.mark()
		x.do("choosing GitHub", chromedp.Click(chromedp.CSS(`a[data-connector="github"]`)))
		x.waitFor("GitHub's authorize page", `input[name="login"]`)
		if !strings.HasPrefix(x.location(), f.issuer+"/login/oauth/authorize?") {
			t.Fatalf("the authorize page is at %s, not GitHub's", x.location())
		}
		x.mark()
		x.do("authorizing at GitHub as "+login, chromedp.SendKeys(chromedp.CSS(`input[name="login"]`), login),
			chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
	}

	x := &person{t: t, p: f.provider, ctx: testbrowser.New(t)}
	x.do("opening the app's sign-in", chromedp.Navigate(f.authorizeURL("state-gh-chromium", oauth2.GenerateVerifier())))
	x.waitFor("the sign-in page", `a[data-connector="github"]`)
	x.check("the sign-in page with the GitHub button", "")
	viaButton(x, "octocat")
	if x.landedCode() == "" {
		t.Fatal("no code after signing in through GitHub")
	}

	y := &person{t: t, p: f.provider, ctx: testbrowser.New(t)}
	viaButton(y, "outsider")
	y.waitFor("the refusal", "#signin-error")
	if s := y.text("the refusal", "#signin-error"); !strings.Contains(s, "Your GitHub account may not sign in here") {
		t.Errorf("the page says %q", s)
	}
	y.check("a person outside the organisations refused", "")
}

// In Chromium: a GitHub account whose primary address is unverified does not sign in to the account
// with that address (409), but its owner, signed in with a password, links it from the account page;
// then it signs in to that account (D64; GitHub's side is internal/testgithub, as above).
func TestFederation_GitHub_InChromium_UnverifiedLinksFromTheAccountPage(t *testing.T) {
	f := startGitHub(t, map[string]testgithub.Account{
		"ada-gh": {ID: 42, Name: "Ada", Emails: []testgithub.Email{{Email: testEmail, Primary: true, Verified: false}}},
	}, nil)
	id := f.user(testEmail, testPassword)
	atGitHub := func(x *person, login string) {
		t.Helper()
		x.waitFor("GitHub's authorize page", `input[name="login"]`)
		x.mark()
		x.do("authorizing at GitHub", chromedp.SendKeys(chromedp.CSS(`input[name="login"]`), login), chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
	}

	b := &person{t: t, p: f.provider, ctx: testbrowser.New(t)}
	b.do("opening the app's sign-in", chromedp.Navigate(f.authorizeURL("state-gh-unverified", oauth2.GenerateVerifier())))
	b.waitFor("the sign-in page", `a[data-connector="github"]`)
	b.mark()
	b.do("choosing GitHub", chromedp.Click(chromedp.CSS(`a[data-connector="github"]`)))
	atGitHub(b, "ada-gh")
	b.waitFor("the refusal", "#signin-error")
	if s := b.text("the refusal", "#signin-error"); !strings.Contains(s, "link GitHub on your account page") {
		t.Errorf("the page says %q", s)
	}

	a := &person{t: t, p: f.provider, ctx: testbrowser.New(t)}
	a.do("opening /account", chromedp.Navigate(f.base+"/account"))
	a.signIn(testEmail, testPassword)
	a.waitFor("the account page", `button[data-connector="github"]`)
	a.mark()
	a.do("linking GitHub", chromedp.Click(chromedp.CSS(`button[data-connector="github"]`)))
	atGitHub(a, "ada-gh")
	a.waitFor("the account page, linked", `#identities-title`)
	if s := a.text("the notice", `[role="status"]`); !strings.Contains(s, "The account was linked") {
		t.Errorf("the notice says %q", s)
	}
	if u, err := f.svc.Users().ByIdentity(context.Background(), "github", "42"); err != nil || u.ID != id {
		t.Fatalf("the GitHub account links to %+v (%v), want %s", u, err, id)
	}

	c := &person{t: t, p: f.provider, ctx: testbrowser.New(t)}
	c.do("opening the app's sign-in", chromedp.Navigate(f.authorizeURL("state-gh-linked", oauth2.GenerateVerifier())))
	c.waitFor("the sign-in page", `a[data-connector="github"]`)
	c.mark()
	c.do("choosing GitHub", chromedp.Click(chromedp.CSS(`a[data-connector="github"]`)))
	atGitHub(c, "ada-gh")
	if c.landedCode() == "" {
		t.Fatal("no code after signing in with the linked GitHub account")
	}
}
