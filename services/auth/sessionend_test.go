package auth_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth"
	"github.com/formsservice/formsservice/services/platform/config"
)

// codeWithSession runs an authorize that the browser's sign-in session answers at once (no form).
func (p *provider) codeWithSession(b *browser, state, verifier string) response {
	p.t.Helper()
	return b.get(p.authorizeURL(state, verifier))
}

// Issue 22: logout forgot the grants of a session past its 256th (14 of 14 forgotten tokens still
// refreshed). Logout now ends every grant the session started, whatever their number.
func TestLogout_EndsEveryGrantOfTheSession_PastThe256th(t *testing.T) {
	if testing.Short() {
		t.Skip("300 flows")
	}
	p := startProvider(t, setup{mutate: func(c *config.Config) {
		c.Auth.RateLimit = config.AuthRateLimit{PerIP: 1 << 30, PerUser: 1 << 30}
	}})
	p.user(testEmail, testPassword)
	first, b := p.fullSignIn(testEmail, testPassword)
	refreshTokens := []string{first.RefreshToken}
	for i := range 300 {
		verifier := oauth2.GenerateVerifier()
		code, _ := codeFrom(t, p.codeWithSession(b, "state-from-session", verifier), p.redirect)
		tk := p.exchange(code, verifier)
		if tk.status != http.StatusOK || tk.RefreshToken == "" {
			t.Fatalf("exchange %d: %d %s", i, tk.status, tk.Error)
		}
		refreshTokens = append(refreshTokens, tk.RefreshToken)
	}
	res := b.get(p.base + "/oauth2/logout?" + url.Values{"id_token_hint": {first.IDToken}, "post_logout_redirect_uri": {p.base + "/bye"}}.Encode())
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", res.StatusCode)
	}
	survived := 0
	for _, rt := range refreshTokens {
		if r := p.refresh(rt); r.status == http.StatusOK {
			survived++
		}
	}
	if survived > 0 {
		t.Fatalf("%d of the session's %d grants still refresh after its logout", survived, len(refreshTokens))
	}
}

// Issue 22: "sign out everywhere" read the user's sessions and then deleted the list, so a session
// registered in between escaped it and went on issuing codes. A session keeps the user's sign-out
// generation of its sign-in: one that escaped (here restored as it was before the sign-out) gets no
// code, and is ended.
func TestSignOutEverywhere_EscapedSession_GetsNoCode(t *testing.T) {
	p := startProvider(t, setup{})
	uid := p.user(testEmail, testPassword)
	_, b := p.fullSignIn(testEmail, testPassword)
	ctx := context.Background()
	sessionKeys, err := p.rdb.Keys(ctx, "auth:sso:{*}").Result()
	if err != nil || len(sessionKeys) != 1 {
		t.Fatalf("session keys %v, %v", sessionKeys, err)
	}
	dump, err := p.rdb.Dump(ctx, sessionKeys[0]).Result()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := auth.SignOutEverywhere(ctx, p.rdb, p.cfg.Auth, uid); err != nil {
		t.Fatal(err)
	}
	// The race: the session's record written after the sign-out read the user's list.
	if err := p.rdb.Restore(ctx, sessionKeys[0], time.Hour, dump).Err(); err != nil {
		t.Fatal(err)
	}
	// The account page does not open for it either (ASVS 3.3.3): it is sent to sign in, and ended.
	base, _ := url.Parse(p.base + "/")
	cookies := b.c.Jar.Cookies(base)
	if res := b.get(p.base + "/account"); res.StatusCode != http.StatusSeeOther || !strings.Contains(res.Header.Get("Location"), "/oauth2/authorize?") {
		t.Fatalf("the account page for a session older than the sign-out everywhere: %d %q, want the sign-in", res.StatusCode, res.Header.Get("Location"))
	}
	if n := p.rdb.Exists(ctx, sessionKeys[0]).Val(); n != 0 {
		t.Fatal("the escaped session was not ended by the account page")
	}
	b.c.Jar.SetCookies(base, cookies) // the same browser again, for authorize
	if err := p.rdb.Restore(ctx, sessionKeys[0], time.Hour, dump).Err(); err != nil {
		t.Fatal(err)
	}
	res := p.codeWithSession(b, "state-escaped", oauth2.GenerateVerifier())
	if loc := res.Header.Get("Location"); strings.Contains(loc, "code=") || !strings.Contains(loc, "error=login_required") {
		t.Fatalf("a session older than the sign-out everywhere: %d %q, want login_required and no code", res.StatusCode, loc)
	}
	if n := p.rdb.Exists(ctx, sessionKeys[0]).Val(); n != 0 {
		t.Fatal("the escaped session was not ended")
	}
	// Signing in again works: the new session has the new generation.
	if tk, _ := p.fullSignIn(testEmail, testPassword); tk.RefreshToken == "" {
		t.Fatal("no grant after signing in again")
	}
}

// ASVS 3.3.2: a sign-in session not used for auth.sessionIdleTimeout ends (the form again); one in use
// goes on. The default is 30 minutes.
func TestSession_IdleTimeout_FormAgainAfterIt(t *testing.T) {
	p := startProvider(t, setup{mutate: func(c *config.Config) { c.Auth.SessionIdleTimeout = config.Duration(20 * time.Minute) }})
	defaults := config.Config{PublicURL: "https://id.example.com"}
	defaults.ApplyDefaults()
	if d := defaults.Auth.SessionIdleTimeout.D(); d != 30*time.Minute {
		t.Errorf("default idle timeout %v, want 30m", d)
	}
	p.user(testEmail, testPassword)
	_, b := p.fullSignIn(testEmail, testPassword)
	// In use: the session answers at once.
	if res := p.codeWithSession(b, "state-in-use", oauth2.GenerateVerifier()); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("a session in use: %d", res.StatusCode)
	}
	// Unused for the idle timeout: the records live no longer than it; then the form.
	testredis.EndLifetimes(t, p.rdb, "auth:sso:{*}", 20*time.Minute)
	if res := p.codeWithSession(b, "state-idle", oauth2.GenerateVerifier()); res.StatusCode != http.StatusOK || !strings.Contains(res.body, "password") {
		t.Fatalf("after the idle timeout: %d, want the sign-in form", res.StatusCode)
	}
}
