package auth_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testmail"
	"github.com/formsservice/formsservice/services/platform/config"
)

func TestSignInPage_SecurityHeadersAndAccessibleForm(t *testing.T) {
	p := startProvider(t, setup{})
	res := newBrowser(t).get(p.authorizeURL("state-headers", oauth2.GenerateVerifier()))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("page: %d", res.StatusCode)
	}
	csp := res.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "style-src 'sha256-", "frame-ancestors 'none'", "form-action 'self' " + p.base} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "script-src") {
		t.Errorf("CSP allows inline code or scripts: %q", csp)
	}
	for h, want := range map[string]string{"X-Frame-Options": "DENY", "Referrer-Policy": "same-origin", "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"} {
		if got := res.Header.Get(h); got != want {
			t.Errorf("%s: %q, want %q", h, got, want)
		}
	}
	for _, want := range []string{`<html lang="en">`, `<label for="email">`, `<label for="password">`, `autocomplete="current-password"`, `type="email"`} {
		if !strings.Contains(res.body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(res.body, "<script") {
		t.Error("the page must work without JavaScript and carries none")
	}
	// The CSRF cookie is HttpOnly and SameSite=Lax.
	var csrf *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "fs_csrf" {
			csrf = c
		}
	}
	if csrf == nil || !csrf.HttpOnly || csrf.SameSite != http.SameSiteLaxMode {
		t.Fatalf("CSRF cookie: %+v", csrf)
	}
}

func TestSessionCookie_HttpOnlyLaxAndSecureUnderHTTPS(t *testing.T) {
	for _, https := range []bool{false, true} {
		p := startProvider(t, setup{mutate: func(c *config.Config) {
			if https {
				c.Auth.Issuer = "https://id.example.test"
			}
		}})
		p.user(testEmail, testPassword)
		b := newBrowser(t)
		page := b.get(p.authorizeURL("state-cookie", oauth2.GenerateVerifier()))
		// A plain-http test client cannot keep Secure cookies: copy the CSRF token from the header.
		for _, c := range page.Cookies() {
			if strings.HasSuffix(c.Name, "fs_csrf") {
				u, _ := url.Parse(p.base)
				c.Secure = false
				b.c.Jar.SetCookies(u, []*http.Cookie{{Name: c.Name, Value: c.Value}})
			}
		}
		res := b.signIn(p.base, page.body, testEmail, testPassword)
		codeFrom(t, res, p.redirect)
		var sess *http.Cookie
		for _, c := range res.Cookies() {
			if strings.HasSuffix(c.Name, "fs_session") {
				sess = c
			}
		}
		if sess == nil || !sess.HttpOnly || sess.SameSite != http.SameSiteLaxMode || sess.Path != "/" {
			t.Fatalf("https=%v session cookie: %+v", https, sess)
		}
		if sess.Secure != https || strings.HasPrefix(sess.Name, "__Host-") != https {
			t.Fatalf("https=%v: session cookie %q Secure=%v", https, sess.Name, sess.Secure)
		}
	}
}

func TestAuthorize_PromptNoneWithoutSession_LoginRequired(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	verifier := oauth2.GenerateVerifier()
	res := newBrowser(t).get(p.authorizeURL("state-none-1", verifier, oauth2.SetAuthURLParam("prompt", "none")))
	authorizeError(t, res, p.redirect, "login_required", "state-none-1")

	// With a session, prompt=none answers with a code at once.
	_, b := p.fullSignIn(testEmail, testPassword)
	code, _ := codeFrom(t, b.get(p.authorizeURL("state-none-2", verifier, oauth2.SetAuthURLParam("prompt", "none"))), p.redirect)
	if tk := p.exchange(code, verifier); tk.status != http.StatusOK {
		t.Fatalf("prompt=none exchange: %d %s", tk.status, tk.Error)
	}
}

func TestAuthorize_PromptLogin_ForcesTheForm(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	_, b := p.fullSignIn(testEmail, testPassword)
	verifier := oauth2.GenerateVerifier()
	page := b.get(p.authorizeURL("state-login", verifier, oauth2.SetAuthURLParam("prompt", "login")))
	if page.StatusCode != http.StatusOK || !strings.Contains(page.body, `name="password"`) {
		t.Fatalf("prompt=login with a session: want the form, got %d", page.StatusCode)
	}
	code, _ := codeFrom(t, b.signIn(p.base, page.body, testEmail, testPassword), p.redirect)
	if tk := p.exchange(code, verifier); tk.status != http.StatusOK || tk.IDToken == "" {
		t.Fatalf("prompt=login exchange: %d %s", tk.status, tk.Error)
	}
	// max_age=0 also forces the form.
	page = b.get(p.authorizeURL("state-maxage", verifier, oauth2.SetAuthURLParam("max_age", "0")))
	if page.StatusCode != http.StatusOK {
		t.Fatalf("max_age=0: want the form, got %d", page.StatusCode)
	}
}

func TestCORS_TokenRevokeUserinfo_ClientOriginsOnly(t *testing.T) {
	p := startProvider(t, setup{mutate: func(c *config.Config) {
		c.Auth.Clients = append(c.Auth.Clients, config.OAuthClient{ClientID: "spa", RedirectURIs: []string{"http://localhost:3000/callback"}})
	}})
	for _, path := range []string{"/oauth2/token", "/oauth2/revoke", "/oauth2/userinfo"} {
		for origin, ok := range map[string]bool{"http://localhost:3000": true, p.base: true, "https://evil.example": false} {
			req, _ := http.NewRequest(http.MethodOptions, p.base+path, nil)
			req.Header.Set("Origin", origin)
			req.Header.Set("Access-Control-Request-Method", "POST")
			req.Header.Set("Access-Control-Request-Headers", "content-type")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			got := res.Header.Get("Access-Control-Allow-Origin")
			if ok && (res.StatusCode != http.StatusNoContent || got != origin) {
				t.Errorf("%s preflight from %s: %d ACAO=%q", path, origin, res.StatusCode, got)
			}
			if !ok && (got != "" || res.StatusCode == http.StatusNoContent) {
				t.Errorf("%s preflight from %s allowed: %d ACAO=%q", path, origin, res.StatusCode, got)
			}
		}
	}
	// The actual request carries the header too (an error response included).
	req, _ := http.NewRequest(http.MethodPost, p.base+"/oauth2/token", strings.NewReader("grant_type=refresh_token&refresh_token=x&client_id=spa"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://localhost:3000")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest || res.Header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" {
		t.Fatalf("token error response: %d ACAO=%q", res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
	}
}

func TestLogout_WithIDTokenHint_RedirectsToRegisteredURIAndEndsSession(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	tk, b := p.fullSignIn(testEmail, testPassword)

	bad := b.get(p.base + "/oauth2/logout?" + url.Values{"id_token_hint": {tk.IDToken}, "post_logout_redirect_uri": {"https://evil.example/"}}.Encode())
	if bad.StatusCode != http.StatusBadRequest || bad.Header.Get("Location") != "" {
		t.Fatalf("unregistered post_logout_redirect_uri: %d %q", bad.StatusCode, bad.Header.Get("Location"))
	}
	res := b.get(p.base + "/oauth2/logout?" + url.Values{"id_token_hint": {tk.IDToken}, "post_logout_redirect_uri": {p.base + "/bye"}, "state": {"s 1"}}.Encode())
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != p.base+"/bye?state=s+1" {
		t.Fatalf("logout: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	// The session is gone: the next authorize shows the form, prompt=none answers login_required.
	if page := b.get(p.authorizeURL("state-after-logout", oauth2.GenerateVerifier())); page.StatusCode != http.StatusOK {
		t.Fatalf("authorize after logout: %d", page.StatusCode)
	}
}

func TestLogout_WithoutHint_AsksForConfirmation(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	_, b := p.fullSignIn(testEmail, testPassword)
	page := b.get(p.base + "/oauth2/logout?" + url.Values{"client_id": {clientID}, "post_logout_redirect_uri": {p.base + "/bye"}}.Encode())
	if page.StatusCode != http.StatusOK || !strings.Contains(page.body, "Sign out?") {
		t.Fatalf("confirmation page: %d", page.StatusCode)
	}
	// A link from another site cannot sign out: the POST needs the CSRF token.
	f := forms(t, p.base, page.body)[0]
	noToken := url.Values{"client_id": {clientID}}
	if res := b.postForm(f.action, noToken); res.StatusCode != http.StatusForbidden {
		t.Fatalf("logout POST without CSRF token: %d", res.StatusCode)
	}
	if _, err := url.Parse(f.action); err != nil {
		t.Fatal(err)
	}
	res := b.postForm(f.action, f.fields)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != p.base+"/bye" {
		t.Fatalf("confirmed logout: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	if page := b.get(p.authorizeURL("state-after", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("prompt", "none"))); page.StatusCode != http.StatusSeeOther ||
		!strings.Contains(page.Header.Get("Location"), "error=login_required") {
		t.Fatalf("prompt=none after logout: %d %q", page.StatusCode, page.Header.Get("Location"))
	}
}

// Sign-up answers a new address and a taken one alike: the same status, the same page (but for its
// CSRF token), the same cookies, nobody signed in, so that the form tells nobody which addresses have
// accounts (it used to answer 409). The owner of the address learns the difference by mail, through a
// real SMTP server (Mailpit); the new account signs in with its password.
func TestSignup_NewAndTakenAddress_SameAnswer_TheMailTellsTheOwner(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	p := startProvider(t, setup{mail: mp, mutate: func(c *config.Config) { c.Auth.SelfSignup = true }})
	p.user("taken@example.com", testPassword)
	csrf := regexp.MustCompile(`name="csrf_token" value="[^"]*"`)
	verifier := oauth2.GenerateVerifier() // one authorization request: the pages differ in nothing else
	signup := func(email string) (response, string) {
		b := newBrowser(t)
		page := b.get(p.authorizeURL("state-signup", verifier))
		fs := forms(t, p.base, page.body) // sign in, cancel, sign up
		if len(fs) != 3 || fs[2].fields.Get("action") != "signup" {
			t.Fatalf("want a sign-up form, got %d forms", len(fs))
		}
		f := fs[2]
		f.fields.Set("name", "Grace Hopper")
		f.fields.Set("email", email)
		f.fields.Set("password", "a long enough password")
		res := b.postForm(f.action, f.fields)
		var cookies []string
		for _, c := range res.Cookies() {
			cookies = append(cookies, c.Name)
		}
		body := strings.ReplaceAll(csrf.ReplaceAllString(res.body, `name="csrf_token" value=""`), email, "ADDRESS")
		return res, fmt.Sprintf("%d %v %s", res.StatusCode, cookies, body)
	}
	newRes, newAnswer := signup("grace@example.com")
	_, takenAnswer := signup("taken@example.com")
	if newAnswer != takenAnswer {
		t.Fatalf("a new and a taken address are answered differently:\n%s\n---\n%s", newAnswer, takenAnswer)
	}
	if newRes.StatusCode != http.StatusOK || !strings.Contains(newRes.body, `role="status"`) || !strings.Contains(newRes.body, "We have sent a message to grace@example.com") {
		t.Fatalf("the answer: %d\n%.800s", newRes.StatusCode, newRes.body)
	}
	if _, err := p.svc.Users().ByEmail(t.Context(), "grace@example.com"); err != nil {
		t.Fatalf("the new account was not created: %v", err)
	}
	created := mp.Latest(t, "grace@example.com", 10*time.Second)
	taken := mp.Latest(t, "taken@example.com", 10*time.Second)
	if !strings.Contains(created.Subject, "Your Test App account") || !strings.Contains(taken.Subject, "tried to create") ||
		!slices.Contains(taken.Links(), p.base) || !slices.Contains(created.Links(), p.base) {
		t.Fatalf("mails: %q %v / %q %v", created.Subject, created.Links(), taken.Subject, taken.Links())
	}
	// The new account signs in with its password, and its claims are what was typed.
	tk, _ := p.fullSignIn("Grace@Example.com", "a long enough password")
	prov, err := oidc.NewProvider(t.Context(), p.base)
	if err != nil {
		t.Fatal(err)
	}
	idt, err := prov.Verifier(&oidc.Config{ClientID: clientID}).Verify(t.Context(), tk.IDToken)
	if err != nil {
		t.Fatal(err)
	}
	var claims struct{ Email, Name string }
	_ = idt.Claims(&claims)
	if claims.Email != "grace@example.com" || claims.Name != "Grace Hopper" {
		t.Fatalf("claims after sign-up: %+v", claims)
	}
	// Invalid fields are still named (they say nothing about who has an account).
	b := newBrowser(t)
	page := b.get(p.authorizeURL("state-signup-bad", oauth2.GenerateVerifier()))
	f := forms(t, p.base, page.body)[2]
	f.fields.Set("email", "not-an-address")
	f.fields.Set("password", "short")
	if res := b.postForm(f.action, f.fields); res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, `id="signup-email-error"`) || !strings.Contains(res.body, `id="signup-password-error"`) {
		t.Fatalf("invalid sign-up: %d\n%.400s", res.StatusCode, res.body)
	}
}

func TestSignup_WhenDisabled_Refused(t *testing.T) {
	p := startProvider(t, setup{})
	b := newBrowser(t)
	page := b.get(p.authorizeURL("state-nosignup", oauth2.GenerateVerifier()))
	f := forms(t, p.base, page.body)
	for _, form := range f {
		if form.fields.Get("action") == "signup" || strings.Contains(page.body, `name="name"`) {
			t.Fatalf("sign-up form shown while disabled")
		}
	}
	f[0].fields.Set("action", "signup")
	f[0].fields.Set("email", "mallory@example.com")
	f[0].fields.Set("password", "a long enough password")
	if res := b.postForm(f[0].action, f[0].fields); res.StatusCode != http.StatusForbidden {
		t.Fatalf("sign-up while disabled: %d", res.StatusCode)
	}
	if _, err := p.svc.Users().ByEmail(t.Context(), "mallory@example.com"); err == nil {
		t.Fatal("an account was created")
	}
}

func TestConfigReload_ClientsChangeWithoutRestart(t *testing.T) {
	p := startProvider(t, setup{})
	u := p.oauth2Config()
	u.ClientID, u.RedirectURL = "late", "https://late.example/cb"
	authURL := u.AuthCodeURL("state-reload", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
	if res := newBrowser(t).get(authURL); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("unknown client before the reload: %d", res.StatusCode)
	}
	next := *p.cfg
	next.Auth.Clients = append(append([]config.OAuthClient(nil), p.cfg.Auth.Clients...),
		config.OAuthClient{ClientID: "late", Name: "Late App", RedirectURIs: []string{"https://late.example/cb"}, Scopes: u.Scopes})
	p.live.c.Store(&next)
	res := newBrowser(t).get(authURL)
	if res.StatusCode != http.StatusOK || !strings.Contains(res.body, "Late App") {
		t.Fatalf("client added by a reload: %d\n%.300s", res.StatusCode, res.body)
	}
}

func TestLogout_SomeoneElsesIDTokenHint_AsksInstead(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	p.user("mallory@example.com", testPassword)
	_, victim := p.fullSignIn(testEmail, testPassword)
	attacker, _ := p.fullSignIn("mallory@example.com", testPassword)
	res := victim.get(p.base + "/oauth2/logout?" + url.Values{"id_token_hint": {attacker.IDToken}}.Encode())
	if res.StatusCode != http.StatusOK || !strings.Contains(res.body, "Sign out?") {
		t.Fatalf("logout with another user's id_token: want the confirmation page, got %d", res.StatusCode)
	}
	if r := victim.get(p.authorizeURL("state-still-in", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("prompt", "none"))); r.StatusCode != http.StatusSeeOther ||
		strings.Contains(r.Header.Get("Location"), "error=") {
		t.Fatalf("the victim was signed out: %d %q", r.StatusCode, r.Header.Get("Location"))
	}
}

func TestAuthorize_FormPostRequest_AnsweredAsGet(t *testing.T) {
	p := startProvider(t, setup{})
	u, _ := url.Parse(p.authorizeURL("state-post-0001", oauth2.GenerateVerifier()))
	b := newBrowser(t)
	res := b.postForm(p.base+"/oauth2/authorize", u.Query())
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/oauth2/authorize?"+u.Query().Encode() {
		t.Fatalf("POSTed authorization request: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	if page := b.get(p.base + res.Header.Get("Location")); page.StatusCode != http.StatusOK {
		t.Fatalf("following it: %d", page.StatusCode)
	}
}

func TestConfigReload_BrokenConfig_KeepsThePreviousOne(t *testing.T) {
	p := startProvider(t, setup{})
	next := *p.cfg
	next.Auth.SelfSignup = true
	next.Auth.Clients = append(append([]config.OAuthClient(nil), p.cfg.Auth.Clients...),
		config.OAuthClient{ClientID: "broken", RedirectURIs: []string{"https://b.example/cb"}, SecretFile: "/nonexistent/secret"})
	p.live.c.Store(&next)
	page := newBrowser(t).get(p.authorizeURL("state-broken", oauth2.GenerateVerifier()))
	if page.StatusCode != http.StatusOK {
		t.Fatalf("existing client after a broken reload: %d", page.StatusCode)
	}
	if strings.Contains(page.body, "Create an account") {
		t.Fatal("a setting of the configuration that could not be applied took effect")
	}
}

// The token store takes its lifetimes from the configuration in effect, like fosite does: after a reload
// that could not be applied, a revoked grant's marker still lives as long as the grant's refresh tokens
// can (the 30 days in effect), not as long as the configuration that was refused would say (1 hour).
func TestConfigReload_BrokenConfig_StoreKeepsThePreviousLifetimes(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	tk, _ := p.fullSignIn(testEmail, testPassword)
	next := *p.cfg
	next.Auth.RefreshTokenLifetime = config.Duration(time.Hour)
	next.Auth.Clients = append(append([]config.OAuthClient(nil), p.cfg.Auth.Clients...),
		config.OAuthClient{ClientID: "broken", RedirectURIs: []string{"https://b.example/cb"}, SecretFile: "/nonexistent/secret"})
	p.live.c.Store(&next)

	res, err := http.PostForm(p.base+"/oauth2/revoke", url.Values{"token": {tk.RefreshToken}, "token_type_hint": {"refresh_token"}, "client_id": {clientID}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d", res.StatusCode)
	}
	family, _, _ := strings.Cut(tk.RefreshToken, "~")
	ttl, err := p.rdb.PTTL(t.Context(), "auth:{"+family+"}:revoked").Result()
	if err != nil || ttl < 30*24*time.Hour {
		t.Fatalf("revocation marker lives %s (%v); want the lifetime in effect, 30 days and more", ttl, err)
	}
}
