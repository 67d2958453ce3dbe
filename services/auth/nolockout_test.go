package auth_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testmail"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Nobody is locked out (D51): an attacker who knows the address spends every budget it can reach from
// 500 client addresses — wrong passwords against the account's unknown browsers, reset links and
// verification links for the address — and is answered as anyone is (the mail requests never 429 for
// the address: only the mails are dropped past its budget). The owner, on a new device and refused at
// the sign-in page, asks for a reset link (the same answer), finds one in the mailbox, sets a new
// password, and that browser, now a known browser of the account, signs in.
func TestNoLockout_AttackerSpendsEveryBudgetFrom500Addresses_OwnerResetsAndSignsIn(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	p := startProvider(t, setup{mail: mp, mutate: func(c *config.Config) {
		c.TrustedProxies = []string{"127.0.0.1"} // the test is the ingress: X-Forwarded-For names the client
		c.Auth.RateLimit = config.AuthRateLimit{PerIP: 1 << 20, PerUser: 1 << 20}
	}})
	p.user(testEmail, testPassword)
	lim := p.cfg.Auth.Throttle

	attacker := newBrowser(t)
	signIn := formTo(t, p.base, attacker.get(p.authorizeURL("state-attack-0123", oauth2.GenerateVerifier())).body, "/oauth2/authorize")
	forgot := formTo(t, p.base, attacker.get(p.base+"/account/forgot").body, "/account/forgot")
	resend := formTo(t, p.base, attacker.get(p.base+"/account/verify?token=x").body, "/account/verify/resend")
	for i := range 500 {
		from := fmt.Sprintf("198.51.%d.%d", 100+i/250, i%250+1)
		signIn.fields.Set("email", testEmail)
		signIn.fields.Set("password", fmt.Sprintf("guess %d", i))
		if res := attacker.postForm(signIn.action, signIn.fields, "X-Forwarded-For", from); res.StatusCode != http.StatusUnauthorized && res.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("guess %d: %d", i, res.StatusCode)
		}
		for _, f := range []pageForm{forgot, resend} {
			f.fields.Set("email", testEmail)
			if res := attacker.postForm(f.action, f.fields, "X-Forwarded-For", from); res.StatusCode != http.StatusOK || !strings.Contains(res.body, "Check your mail") {
				t.Fatalf("request %d to %s: %d, want the answer every address gets\n%.600s", i, f.action, res.StatusCode, res.body)
			}
		}
	}
	if n := len(mp.To(t, testEmail)); n != lim.MailsPerAddress {
		t.Fatalf("%d mails reached the owner, want the address's budget, %d (the verified account gets no verification mail)", n, lim.MailsPerAddress)
	}

	// The owner, on a new device: the sign-in page refuses (the unknown browsers' budget is spent) ...
	owner := newBrowser(t)
	page := owner.get(p.authorizeURL("state-owner-0123", oauth2.GenerateVerifier()))
	if res := owner.signIn(p.base, page.body, testEmail, testPassword); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the owner's unknown browser during the attack: %d, want 429 (the model's one cost)", res.StatusCode)
	}
	// ... asking for a link gets the same answer as everyone (its mail is dropped, past the budget) ...
	f := formTo(t, p.base, owner.get(p.base+"/account/forgot").body, "/account/forgot")
	f.fields.Set("email", testEmail)
	if res := owner.postForm(f.action, f.fields, "X-Forwarded-For", "192.0.2.77"); res.StatusCode != http.StatusOK || !strings.Contains(res.body, "Check your mail") {
		t.Fatalf("the owner's reset request: %d", res.StatusCode)
	}
	// ... and the mailbox holds links the attacker's requests sent, valid for the next 15 minutes.
	reset := owner.get(mailLink(t, mp, testEmail, "/account/reset", lim.MailsPerAddress))
	rf := formTo(t, p.base, reset.body, "/account/reset")
	rf.fields.Set("new_password", "the owner's new password")
	if res := owner.postForm(rf.action, rf.fields, "X-Forwarded-For", "192.0.2.77"); res.StatusCode != http.StatusOK || !strings.Contains(res.body, "Your password was changed") {
		t.Fatalf("the reset: %d\n%.600s", res.StatusCode, res.body)
	}
	// The browser that set the password is a known browser now: it signs in while the attack's budgets
	// stay spent.
	page = owner.get(p.authorizeURL("state-owner-0124", oauth2.GenerateVerifier()))
	g := formTo(t, p.base, page.body, "/oauth2/authorize")
	g.fields.Set("email", testEmail)
	g.fields.Set("password", "the owner's new password")
	res := owner.postForm(g.action, g.fields, "X-Forwarded-For", "192.0.2.77")
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the owner's sign-in after the reset: %d\n%.600s", res.StatusCode, res.body)
	}
}

// The account page's password checks of a signed-in browser without a device cookie (signed in before
// it had one, or its cookie was cleared) count against the session's own budget: an attacker who spent
// the account's unknown browsers' budget does not keep its owner from changing the password.
func TestNoLockout_TheAccountPageCountsAgainstTheSessionsOwnBudget(t *testing.T) {
	p := startProvider(t, setup{mutate: func(c *config.Config) {
		c.Auth.Throttle = config.Throttle{DeviceFailures: 10, AccountFailures: 2, IPFailures: 100, Window: config.Duration(time.Minute)}
	}})
	p.user(testEmail, testPassword)
	owner := newBrowser(t)
	p.accountSignIn(owner, testEmail, testPassword, nil)
	base, _ := url.Parse(p.base)
	owner.c.Jar.SetCookies(base, []*http.Cookie{{Name: "fs_device", Value: "", Path: "/", MaxAge: -1}})
	if deviceCookieID(owner, p.base) != "" {
		t.Fatal("the device cookie is still there")
	}

	attacker := newBrowser(t)
	page := attacker.get(p.authorizeURL("state-attack-0123", oauth2.GenerateVerifier()))
	for i := range 3 {
		page = attacker.signIn(p.base, page.body, testEmail, fmt.Sprintf("guess %d", i))
	}
	if page.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the attack did not use the unknown browsers' budget up: %d", page.StatusCode)
	}
	csrf := csrfOf(t, owner.get(p.base+"/account").body)
	if res := owner.postForm(p.base+"/account/password", url.Values{"csrf_token": {csrf}, "current_password": {testPassword}, "new_password": {"the owner's new password"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the owner's password change during the attack: %d, want 303 (the session's own budget)", res.StatusCode)
	}
}
