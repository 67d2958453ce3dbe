package auth_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/services/auth"
	"github.com/formsservice/formsservice/services/platform/config"
)

// signedOut asserts that a browser's sign-in session is gone: prompt=none answers login_required.
func (p *provider) signedOut(b *browser) bool {
	p.t.Helper()
	r := b.get(p.authorizeURL("state-signed-out", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("prompt", "none")))
	return r.StatusCode == http.StatusSeeOther && strings.Contains(r.Header.Get("Location"), "error=login_required")
}

// A password change, a disabled account and an administrator's "sign out everywhere" revoke every grant
// and end every sign-in session of the user (ASVS 3.3.3), in every browser, and no other user's.
func TestSignOutEverywhere_RevokesEveryGrantAndSessionOfTheUser(t *testing.T) {
	for _, how := range []string{"signout", "set-password", "disable"} {
		t.Run(how, func(t *testing.T) {
			p := startProvider(t, setup{})
			id := p.user(testEmail, testPassword)
			p.user("grace@example.com", testPassword)
			first, b1 := p.fullSignIn(testEmail, testPassword)
			second, b2 := p.fullSignIn(testEmail, testPassword)
			other, b3 := p.fullSignIn("grace@example.com", testPassword)
			ctx := context.Background()
			switch how {
			case "set-password":
				if _, err := p.svc.Users().SetPassword(ctx, testEmail, "a new password"); err != nil {
					t.Fatal(err)
				}
			case "disable":
				if _, err := p.svc.Users().SetDisabled(ctx, testEmail, true); err != nil {
					t.Fatal(err)
				}
			}
			grants, sessions, err := auth.SignOutEverywhere(ctx, p.rdb, p.cfg.Auth, id)
			if err != nil || grants != 2 || sessions != 2 {
				t.Fatalf("SignOutEverywhere: %d grants, %d sessions, %v; want 2 and 2", grants, sessions, err)
			}
			for i, tk := range []tokens{first, second} {
				if r := p.refresh(tk.RefreshToken); r.status != http.StatusBadRequest || r.Error != "invalid_grant" {
					t.Errorf("grant %d refreshed after %s: %d %s", i, how, r.status, r.Error)
				}
			}
			if !p.signedOut(b1) || !p.signedOut(b2) {
				t.Errorf("a browser is still signed in after %s", how)
			}
			if r := p.refresh(other.RefreshToken); r.status != http.StatusOK {
				t.Errorf("another user's grant: %d %s", r.status, r.Error)
			}
			if p.signedOut(b3) {
				t.Error("another user was signed out")
			}
		})
	}
}

// A disabled account cannot sign in, and its tokens stop working even without a revocation.
func TestDisabledUser_CannotSignInOrUseTokens(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	tk, _ := p.fullSignIn(testEmail, testPassword)
	if _, err := p.svc.Users().SetDisabled(context.Background(), testEmail, true); err != nil {
		t.Fatal(err)
	}
	if st := p.userinfoStatus(tk.AccessToken); st != http.StatusUnauthorized {
		t.Fatalf("userinfo of a disabled user: %d", st)
	}
	if r := p.refresh(tk.RefreshToken); r.status != http.StatusBadRequest {
		t.Fatalf("refresh of a disabled user: %d", r.status)
	}
	b := newBrowser(t)
	page := b.get(p.authorizeURL("state-disabled-1", oauth2.GenerateVerifier()))
	if res := b.signIn(p.base, page.body, testEmail, testPassword); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("sign-in of a disabled user: %d", res.StatusCode)
	}
	if _, err := p.svc.Users().SetDisabled(context.Background(), testEmail, false); err != nil {
		t.Fatal(err)
	}
	p.fullSignIn(testEmail, testPassword)
}

// Logout ends the sign-in session and revokes the grants started in it, and only those: a grant of the
// same user from another browser lives on.
func TestLogout_RevokesTheGrantsStartedInTheSession(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	tk, b := p.fullSignIn(testEmail, testPassword)
	// A second app sign-in through the same session (the form is skipped).
	verifier := oauth2.GenerateVerifier()
	code, _ := codeFrom(t, b.get(p.authorizeURL("state-sso-second", verifier)), p.redirect)
	second := p.exchange(code, verifier)
	elsewhere, _ := p.fullSignIn(testEmail, testPassword)

	res := b.get(p.base + "/oauth2/logout?" + url.Values{"id_token_hint": {tk.IDToken}, "post_logout_redirect_uri": {p.base + "/bye"}}.Encode())
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", res.StatusCode)
	}
	for i, g := range []tokens{tk, second} {
		if r := p.refresh(g.RefreshToken); r.status != http.StatusBadRequest || r.Error != "invalid_grant" {
			t.Errorf("grant %d of the session refreshed after logout: %d %s", i, r.status, r.Error)
		}
	}
	if r := p.refresh(elsewhere.RefreshToken); r.status != http.StatusOK {
		t.Errorf("a grant from another browser: %d %s", r.status, r.Error)
	}
}

// The logout page says what logout does, no more.
func TestLogout_PageSaysWhatItDoes(t *testing.T) {
	p := startProvider(t, setup{})
	page := newBrowser(t).get(p.base + "/oauth2/logout")
	if strings.Contains(page.body, "every application") || !strings.Contains(page.body, "can no longer renew their access") {
		t.Fatalf("logout page:\n%.1500s", page.body)
	}
}

// A grant ends at its absolute lifetime from the sign-in that started it, however often it is refreshed.
func TestRefresh_AbsoluteFamilyLifetime(t *testing.T) {
	p := startProvider(t, setup{mutate: func(c *config.Config) { c.Auth.FamilyLifetime = config.Duration(time.Millisecond) }})
	p.user(testEmail, testPassword)
	tk, _ := p.fullSignIn(testEmail, testPassword)
	if r := p.refresh(tk.RefreshToken); r.status != http.StatusBadRequest || r.Error != "invalid_grant" {
		t.Fatalf("refresh past the family's absolute lifetime: %d %s", r.status, r.Error)
	}
}
