package auth_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testbrowser"
	"github.com/formsservice/formsservice/internal/testmail"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/platform/config"
)

// open navigates to u (a link from a mail) and waits for sel on the page it leads to.
func (x *person) open(what, u, sel string) {
	x.t.Helper()
	x.mark()
	x.do(what, chromedp.Navigate(u))
	x.waitFor(what, sel)
}

// arrivedCode waits for the redirect to the client and returns its code; unlike landedCode it asks
// again when the page is between documents (the sign-in's redirect is under way).
func (x *person) arrivedCode() string {
	x.t.Helper()
	var code string
	testwait.Until(x.t, 30*time.Second, "the redirect to the client", func() error {
		ctx, cancel := context.WithTimeout(x.ctx, 5*time.Second)
		defer cancel()
		loc, err := chromedp.Run(ctx, chromedp.Location())
		if err != nil {
			return err
		}
		u, err := url.Parse(loc)
		if err != nil || !strings.HasPrefix(loc, x.p.redirect+"?") {
			return errors.New("at " + loc)
		}
		if e := u.Query().Get("error"); e != "" {
			x.t.Fatalf("authorize error %s: %s", e, u.Query().Get("error_description"))
		}
		code = u.Query().Get("code")
		return nil
	})
	return code
}

func (x *person) says(what, sel, want string) {
	x.t.Helper()
	if got := x.text(what, sel); !strings.Contains(got, want) {
		x.t.Errorf("%s: %q, want it to say %q", what, got, want)
	}
}

// E-mail verification in headless Chromium against Mailpit: a sign-up on the hosted page; the client
// (requireVerifiedEmail) refuses the unverified account and offers the link again; the link opened from
// the mail asks, and its button confirms the address; opened again it says it was used, and a tampered one that it is not
// valid; then the sign-in reaches the app with email_verified true. axe-core checks every page.
func TestVerification_InChromium_SignupMailLinkThenSignIn(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	p := startProvider(t, setup{mail: mp, mutate: func(c *config.Config) {
		c.Auth.SelfSignup = true
		c.Auth.Clients[0].RequireVerifiedEmail = true
	}})
	x := &person{t: t, p: p, ctx: testbrowser.New(t)}
	const email, password = "linus@example.com", "a sign-up password"

	x.do("opening the app's sign-in", chromedp.Navigate(p.authorizeURL("state-0123456789", oauth2.GenerateVerifier())))
	x.waitFor("the sign-in page", "#password")
	x.check("sign-in page with Forgot password?", "")
	x.mark()
	x.do("signing up", chromedp.Click(chromedp.CSS("details summary")), chromedp.SendKeys(chromedp.CSS("#signup-email"), email),
		chromedp.SendKeys(chromedp.CSS("#signup-password"), password), chromedp.Click(chromedp.CSS(`form:has(input[value="signup"]) button`)))
	x.waitFor("the sign-up's answer", "#signin-notice")
	first := mailLink(t, mp, email, "/account/verify", 1)

	testbrowser.Get(t, x.ctx, "clearing the address the page kept", chromedp.Evaluate[bool](`(document.querySelector("#email").value = "") === ""`))
	x.signIn(email, password)
	x.waitFor("the refusal", "#resend")
	x.says("the refusal", "#signin-error", "Confirm your e-mail address")
	x.check("sign-in refused: address not confirmed", "verify-required")
	x.mark()
	x.do("asking for the link again", chromedp.Click(chromedp.CSS("#resend")))
	x.waitFor("the answer", "#journey-notice")
	x.says("the answer", "#journey-notice", "we have sent it a new link")
	x.check("link sent again", "")
	mp.WaitTo(t, email, 2, 30*time.Second)

	x.open("the link from the mail", first, "#confirm") // its GET acts on nothing: the page asks (D51)
	x.says("the link's page", "#title", "Confirm your e-mail address")
	x.says("the link's page", ".sub", "with the address "+email+" was made on")
	x.check("the link's page: confirm, or delete an account you did not make", "verify-confirm")
	x.mark()
	x.do("confirming", chromedp.Click(chromedp.CSS("#confirm")))
	x.waitFor("the answer", "#journey-notice")
	x.says("the link's page", "#title", "Your e-mail address is confirmed")
	x.check("address confirmed", "verify-done")
	x.open("the link again", first, "#journey-error")
	x.says("the link's page again", "#title", "This link was already used")
	x.check("link already used", "")
	x.open("a tampered link", tamperedLink(first), "#journey-error")
	x.says("a tampered link", "#title", "This link is not valid")
	x.check("link not valid", "")

	verifier := oauth2.GenerateVerifier()
	x.do("signing in again", chromedp.Navigate(p.authorizeURL("state-0123456790", verifier)))
	x.signIn(email, password)
	tk := p.exchange(x.arrivedCode(), verifier)
	if v := claimsOf(t, tk.IDToken)["email_verified"]; v != true {
		t.Fatalf("email_verified = %v after the link", v)
	}
}

// Password reset in headless Chromium against Mailpit: "Forgot password?" on the sign-in page, the
// address, the link opened from the mail, the new password, and a sign-in with it; the link opened again
// says it was used, and asking past the address's budget says to wait. axe-core checks every page.
func TestPasswordReset_InChromium_ForgotMailLinkNewPassword(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	p := startProvider(t, setup{mail: mp, mutate: func(c *config.Config) { c.Auth.Throttle.MailsPerAddress = 1 }})
	p.user(testEmail, testPassword)
	x := &person{t: t, p: p, ctx: testbrowser.New(t)}

	x.do("opening the app's sign-in", chromedp.Navigate(p.authorizeURL("state-0123456789", oauth2.GenerateVerifier())))
	x.waitFor("the sign-in page", "#forgot")
	x.mark()
	x.do("forgot password", chromedp.Click(chromedp.CSS("#forgot")))
	x.waitFor("the forgot page", "#email")
	x.check("forgot password", "")
	x.mark()
	x.do("sending the address", chromedp.SendKeys(chromedp.CSS("#email"), testEmail), chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
	x.waitFor("the answer", "#journey-notice")
	x.says("the answer", "#journey-notice", "If "+testEmail+" has an account")
	x.check("reset link sent", "reset-sent")
	link := mailLink(t, mp, testEmail, "/account/reset", 1)

	x.open("the link from the mail", link, "#new_password")
	x.check("choose a new password", "reset-form")
	x.mark()
	x.do("the new password", chromedp.SendKeys(chromedp.CSS("#new_password"), "a brand new password"), chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
	x.waitFor("the answer", "#journey-notice")
	x.says("the answer", "#title", "Your password was changed")
	x.check("password changed", "")
	if m := mp.Latest(t, testEmail, 30*time.Second); !strings.Contains(m.Subject, "was changed") {
		t.Fatalf("the newest mail is %q", m.Subject)
	}
	x.open("the link again", link, "#journey-error")
	x.says("the link again", "#title", "This link was already used")
	x.check("reset link already used", "")

	// Past the address's budget (1 here): the same answer as every request (only the mail is dropped,
	// D51), and no mail.
	sent := len(mp.To(t, testEmail))
	x.open("the forgot page", p.base+"/account/forgot", "#email")
	x.mark()
	x.do("asking again", chromedp.SendKeys(chromedp.CSS("#email"), testEmail), chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
	x.waitFor("the answer", "#journey-notice")
	x.says("the answer", "#journey-notice", "If "+testEmail+" has an account")
	x.check("reset asked past the address's budget", "")
	if n := len(mp.To(t, testEmail)); n != sent {
		t.Fatalf("a mail past the address's budget: %d mails, were %d", n, sent)
	}

	verifier := oauth2.GenerateVerifier()
	x.do("signing in with the new password", chromedp.Navigate(p.authorizeURL("state-0123456790", verifier)))
	x.signIn(testEmail, "a brand new password")
	if tk := p.exchange(x.arrivedCode(), verifier); tk.status != 200 {
		t.Fatalf("exchange after the reset: %d %s", tk.status, tk.Error)
	}
}
