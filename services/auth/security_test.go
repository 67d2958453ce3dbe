package auth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/redis/go-redis/v9"
)

// authorizeError expects a redirect to the client carrying an OAuth error (and the state).
func authorizeError(t *testing.T, res response, redirect, wantError, wantState string) {
	t.Helper()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("want 303 with an OAuth error, got %d:\n%.400s", res.StatusCode, res.body)
	}
	loc, _ := url.Parse(res.Header.Get("Location"))
	if !strings.HasPrefix(loc.String(), redirect+"?") {
		t.Fatalf("error redirect to %q, want %s", loc, redirect)
	}
	q := loc.Query()
	if q.Get("error") != wantError || q.Get("state") != wantState || q.Get("code") != "" {
		t.Fatalf("redirect query %v, want error=%s state=%s and no code", q, wantError, wantState)
	}
}

func TestAuthorize_PKCEPlain_RefusedBeforeSignInPage(t *testing.T) {
	p := startProvider(t, setup{})
	verifier := oauth2.GenerateVerifier()
	u := p.oauth2Config().AuthCodeURL("state-plain-1",
		oauth2.SetAuthURLParam("code_challenge", verifier), oauth2.SetAuthURLParam("code_challenge_method", "plain"))
	authorizeError(t, newBrowser(t).get(u), p.redirect, "invalid_request", "state-plain-1")

	// A challenge without a method defaults to plain (RFC 7636 4.3): refused too.
	u = p.oauth2Config().AuthCodeURL("state-plain-2", oauth2.SetAuthURLParam("code_challenge", verifier))
	authorizeError(t, newBrowser(t).get(u), p.redirect, "invalid_request", "state-plain-2")
}

func TestAuthorize_PKCEMissing_RefusedBeforeSignInPage(t *testing.T) {
	p := startProvider(t, setup{})
	u := p.oauth2Config().AuthCodeURL("state-nopkce")
	authorizeError(t, newBrowser(t).get(u), p.redirect, "invalid_request", "state-nopkce")
}

func TestToken_WrongCodeVerifier_Refused(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	verifier := oauth2.GenerateVerifier()
	code := p.signInAndGetCode(newBrowser(t), testEmail, testPassword, verifier)
	if tk := p.exchange(code, oauth2.GenerateVerifier()); tk.status != http.StatusBadRequest || tk.Error != "invalid_grant" {
		t.Fatalf("wrong verifier: %d %s", tk.status, tk.Error)
	}
	// Missing verifier, and then the right one: the challenge is checked once, so the code is spent.
	if tk := p.exchange(code, ""); tk.status != http.StatusBadRequest {
		t.Fatalf("missing verifier: %d %s", tk.status, tk.Error)
	}
	if tk := p.exchange(code, verifier); tk.status != http.StatusBadRequest {
		t.Fatalf("right verifier after a wrong one: %d %s", tk.status, tk.Error)
	}
}

func TestAuthorize_RedirectURIMismatch_ErrorPageWithoutRedirect(t *testing.T) {
	p := startProvider(t, setup{})
	port := strings.TrimPrefix(p.base, "http://127.0.0.1:")
	n, _ := strconv.Atoi(port)
	otherPort := strconv.Itoa(n%60000 + 1)
	verifier := oauth2.GenerateVerifier()
	for name, redirect := range map[string]string{
		"other host":          "https://evil.example/cb",
		"other path":          p.base + "/cb2",
		"extra query":         p.redirect + "?x=1",
		"trailing slash":      p.redirect + "/",
		"other loopback port": "http://127.0.0.1:" + otherPort + "/cb", // fosite alone accepts any loopback port
		"localhost alias":     "http://localhost:" + port + "/cb",
		"missing":             "",
	} {
		t.Run(name, func(t *testing.T) {
			conf := p.oauth2Config()
			conf.RedirectURL = redirect
			res := newBrowser(t).get(conf.AuthCodeURL("state-mismatch", oauth2.S256ChallengeOption(verifier)))
			if res.StatusCode != http.StatusBadRequest || res.Header.Get("Location") != "" {
				t.Fatalf("want a 400 error page and no redirect, got %d Location=%q", res.StatusCode, res.Header.Get("Location"))
			}
			if !strings.Contains(res.Header.Get("Content-Type"), "text/html") || !strings.Contains(res.body, "not valid") {
				t.Fatalf("want the HTML error page, got %q\n%.300s", res.Header.Get("Content-Type"), res.body)
			}
		})
	}
	t.Run("unknown client", func(t *testing.T) {
		conf := p.oauth2Config()
		conf.ClientID = "nobody"
		res := newBrowser(t).get(conf.AuthCodeURL("state-unknown", oauth2.S256ChallengeOption(verifier)))
		if res.StatusCode != http.StatusBadRequest || res.Header.Get("Location") != "" {
			t.Fatalf("want a 400 error page and no redirect, got %d Location=%q", res.StatusCode, res.Header.Get("Location"))
		}
	})
	t.Run("token endpoint", func(t *testing.T) {
		p.user(testEmail, testPassword)
		code := p.signInAndGetCode(newBrowser(t), testEmail, testPassword, verifier)
		tk := p.tokenRequest(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {p.base + "/cb2"},
			"client_id": {clientID}, "code_verifier": {verifier}})
		if tk.status != http.StatusBadRequest || tk.Error != "invalid_grant" {
			t.Fatalf("exchange with another redirect_uri: %d %s", tk.status, tk.Error)
		}
	})
}

func TestToken_CodeReplay_RevokesIssuedTokens(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	verifier := oauth2.GenerateVerifier()
	code := p.signInAndGetCode(newBrowser(t), testEmail, testPassword, verifier)
	first := p.exchange(code, verifier)
	if first.status != http.StatusOK {
		t.Fatalf("first exchange: %d %s", first.status, first.Error)
	}
	if st := p.userinfoStatus(first.AccessToken); st != http.StatusOK {
		t.Fatalf("userinfo before the replay: %d", st)
	}
	replay := p.exchange(code, verifier)
	if replay.status != http.StatusBadRequest || replay.Error != "invalid_grant" || replay.AccessToken != "" {
		t.Fatalf("replayed code: %d %s", replay.status, replay.Error)
	}
	if st := p.userinfoStatus(first.AccessToken); st != http.StatusUnauthorized {
		t.Fatalf("access token issued for the replayed code still works: %d", st)
	}
	if tk := p.refresh(first.RefreshToken); tk.status != http.StatusBadRequest {
		t.Fatalf("refresh token issued for the replayed code still works: %d", tk.status)
	}
}

func TestToken_RefreshReuse_RevokesFamily(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	first, _ := p.fullSignIn(testEmail, testPassword)
	second := p.refresh(first.RefreshToken)
	if second.status != http.StatusOK {
		t.Fatalf("refresh: %d %s", second.status, second.Error)
	}
	third := p.refresh(second.RefreshToken)
	if third.status != http.StatusOK {
		t.Fatalf("second refresh: %d %s", third.status, third.Error)
	}
	// An attacker replays the first (rotated) refresh token.
	if tk := p.refresh(first.RefreshToken); tk.status != http.StatusBadRequest || tk.Error != "invalid_grant" {
		t.Fatalf("reused refresh token: %d %s", tk.status, tk.Error)
	}
	// Every token of the family is dead, including the newest.
	if tk := p.refresh(third.RefreshToken); tk.status != http.StatusBadRequest {
		t.Fatalf("newest refresh token after reuse: %d", tk.status)
	}
	for i, at := range []string{first.AccessToken, second.AccessToken, third.AccessToken} {
		if st := p.userinfoStatus(at); st != http.StatusUnauthorized {
			t.Fatalf("access token %d after reuse: %d", i, st)
		}
	}
	// Another sign-in of the same user is a different family and unaffected.
	other, _ := p.fullSignIn(testEmail, testPassword)
	if st := p.userinfoStatus(other.AccessToken); st != http.StatusOK {
		t.Fatalf("unrelated grant: %d", st)
	}
}

func TestSignIn_CSRFMissingOrWrong_Refused(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	b := newBrowser(t)
	page := b.get(p.authorizeURL("state-csrf-01", oauth2.GenerateVerifier()))
	f := forms(t, p.base, page.body)[0]
	if f.fields.Get("csrf_token") == "" {
		t.Fatal("the sign-in form has no CSRF token")
	}
	submit := func(token string, header ...string) response {
		form := url.Values{"action": {"signin"}, "email": {testEmail}, "password": {testPassword}}
		if token != "" {
			form.Set("csrf_token", token)
		}
		return b.postForm(f.action, form, header...)
	}
	for name, res := range map[string]response{
		"missing":       submit(""),
		"wrong":         submit(base64.RawURLEncoding.EncodeToString(make([]byte, 32))),
		"cross-origin":  submit(f.fields.Get("csrf_token"), "Origin", "https://evil.example"),
		"opaque origin": submit(f.fields.Get("csrf_token"), "Origin", "null"),
	} {
		if res.StatusCode != http.StatusForbidden || res.Header.Get("Location") != "" || !strings.Contains(res.body, "expired") {
			t.Fatalf("%s CSRF token: want 403 page without redirect, got %d %q", name, res.StatusCode, res.Header.Get("Location"))
		}
	}
	// Without the cookie (another browser posting the same token) it fails too.
	other := newBrowser(t)
	form := url.Values{"csrf_token": {f.fields.Get("csrf_token")}, "action": {"signin"}, "email": {testEmail}, "password": {testPassword}}
	if res := other.postForm(f.action, form); res.StatusCode != http.StatusForbidden {
		t.Fatalf("token without its cookie: %d", res.StatusCode)
	}
	// The real form still works, with the browser's own Origin.
	codeFrom(t, submit(f.fields.Get("csrf_token"), "Origin", p.base), p.redirect)
}

func TestAuthorize_StateEchoedUnchanged(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	b := newBrowser(t)
	state := `a b+c/d?e=f&g%h;ü"<>` + "ẞ"
	page := b.get(p.authorizeURL(state, oauth2.GenerateVerifier()))
	_, got := codeFrom(t, b.signIn(p.base, page.body, testEmail, testPassword), p.redirect)
	if got != state {
		t.Fatalf("state %q, want %q", got, state)
	}
	// The same on the SSO path and on an error redirect.
	_, got = codeFrom(t, b.get(p.authorizeURL(state, oauth2.GenerateVerifier())), p.redirect)
	if got != state {
		t.Fatalf("state on SSO %q, want %q", got, state)
	}
	authorizeError(t, newBrowser(t).get(p.oauth2Config().AuthCodeURL(state)), p.redirect, "invalid_request", state)
}

func TestSignIn_ThrottledAfterRepeatedFailures(t *testing.T) {
	p := startProvider(t, setup{mutate: func(c *config.Config) {
		c.Auth.Throttle = config.Throttle{AccountFailures: 3, IPFailures: 6, Window: config.Duration(time.Minute)}
	}})
	p.user(testEmail, testPassword)
	b := newBrowser(t)
	page := b.get(p.authorizeURL("state-throttle", oauth2.GenerateVerifier()))
	var res response
	for i := 0; i < 3; i++ {
		res = b.signIn(p.base, page.body, testEmail, "wrong password "+string(rune('a'+i)))
		page = res
	}
	if res.StatusCode != http.StatusTooManyRequests || !strings.Contains(res.body, "Try again in") || res.Header.Get("Retry-After") == "" {
		t.Fatalf("third failure: want 429 with 'Try again in N s', got %d\n%.300s", res.StatusCode, res.body)
	}
	// While throttled even the right password is refused, with the page (not a 500).
	res = b.signIn(p.base, page.body, testEmail, testPassword)
	if res.StatusCode != http.StatusTooManyRequests || !strings.Contains(res.body, "Try again in") {
		t.Fatalf("right password while throttled: %d", res.StatusCode)
	}
	// Per address: failures spread over other accounts from the same address reach the IP limit.
	for i := 0; i < 3; i++ {
		res = b.signIn(p.base, page.body, "someone"+string(rune('a'+i))+"@example.com", "whatever-password")
	}
	p.user("grace@example.com", testPassword)
	res = b.signIn(p.base, page.body, "grace@example.com", testPassword)
	if res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("another account from a throttled address: %d", res.StatusCode)
	}
}

// The account budget belongs to the account, not to one spelling of it: failures typed with an IDN
// domain, its punycode form and other letter case all count against the same account.
func TestSignIn_ThrottleCountsEverySpellingOfAnAccount(t *testing.T) {
	p := startProvider(t, setup{mutate: func(c *config.Config) {
		c.Auth.Throttle = config.Throttle{AccountFailures: 3, IPFailures: 100, Window: config.Duration(time.Minute)}
	}})
	p.user("ada@bücher.example", testPassword)
	b := newBrowser(t)
	page := b.get(p.authorizeURL("state-spellings", oauth2.GenerateVerifier()))
	var res response
	for _, spelling := range []string{"ada@bücher.example", "ADA@xn--bcher-kva.example", "Ada@BÜCHER.example"} {
		res = b.signIn(p.base, page.body, spelling, "wrong password")
		page = res
	}
	if res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("third failure over three spellings of one account: %d, want 429\n%.300s", res.StatusCode, res.body)
	}
	if res = b.signIn(p.base, page.body, "ada@xn--bcher-kva.example", testPassword); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the right password under a fourth spelling while throttled: %d, want 429", res.StatusCode)
	}
}

// behindProxy starts a provider behind a trusted proxy (127.0.0.1) that allows two failed sign-ins per
// client address, opens the sign-in page, and returns a function that submits it as the proxy would, with
// the given X-Forwarded-For, and the verifier of the page's authorization request.
func behindProxy(t *testing.T) (p *provider, signIn func(xff, email, password string) response, verifier string) {
	p = startProvider(t, setup{mutate: func(c *config.Config) {
		c.TrustedProxies = []string{"127.0.0.1"}
		c.Auth.Throttle = config.Throttle{AccountFailures: 100, IPFailures: 2, Window: config.Duration(time.Minute)}
	}})
	p.user(testEmail, testPassword)
	b := newBrowser(t)
	verifier = oauth2.GenerateVerifier()
	page := b.get(p.authorizeURL("state-proxy", verifier))
	signIn = func(xff, email, password string) response {
		f := forms(t, p.base, page.body)[0]
		f.fields.Set("email", email)
		f.fields.Set("password", password)
		return b.postForm(f.action, f.fields, "X-Forwarded-For", xff)
	}
	return p, signIn, verifier
}

// Behind the ingress every request comes from the proxy: the per-address throttle counts the client's
// address (the right-most X-Forwarded-For hop that is not a trusted proxy), so one client's failures
// neither lock out everyone else nor escape the throttle with a forged left-most entry.
func TestSignIn_ThrottlePerClientBehindTrustedProxy(t *testing.T) {
	p, signIn, verifier := behindProxy(t)
	if res := signIn("203.0.113.7", "a@example.com", "wrong password"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("first failure: %d", res.StatusCode)
	}
	if res := signIn("203.0.113.7", "b@example.com", "wrong password"); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the client's address at its limit: %d", res.StatusCode)
	}
	if res := signIn("198.51.100.1, 203.0.113.7", testEmail, testPassword); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a forged left-most entry escaped the throttle: %d", res.StatusCode)
	}
	code, _ := codeFrom(t, signIn("203.0.113.9", testEmail, testPassword), p.redirect)
	if tk := p.exchange(code, verifier); tk.status != http.StatusOK {
		t.Fatalf("another client behind the proxy: exchange %d %s", tk.status, tk.Error)
	}
}

// HAProxy's `option forwardfor` appends its own X-Forwarded-For line after the one the client sent:
// the throttle counts the client by the proxy's line, so a forged first line does not escape it (the
// first line alone used to be read).
func TestSignIn_ThrottleBehindHAProxy_ForgedFirstLineDoesNotEscape(t *testing.T) {
	p, signIn, _ := behindProxy(t)
	signIn("203.0.113.7", "a@example.com", "wrong password")
	signIn("203.0.113.7", "b@example.com", "wrong password") // the address's budget (2) is used up
	b := newBrowser(t)
	page := b.get(p.authorizeURL("state-haproxy", oauth2.GenerateVerifier()))
	f := forms(t, p.base, page.body)[0]
	f.fields.Set("email", testEmail)
	f.fields.Set("password", testPassword)
	req, _ := http.NewRequest(http.MethodPost, f.action, strings.NewReader(f.fields.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Add("X-Forwarded-For", "198.51.100.1") // the client's forged line
	req.Header.Add("X-Forwarded-For", "203.0.113.7")  // HAProxy's
	if res := b.do(req); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a forged first X-Forwarded-For line escaped the address's budget: %d", res.StatusCode)
	}
}

// An IPv6 client usually holds a whole /64: the per-address budget is the /64's, so that a client cannot
// spread its guesses over addresses of its own prefix, while another prefix keeps its own budget.
func TestSignIn_ThrottlePerIPv6Prefix(t *testing.T) {
	p, signIn, verifier := behindProxy(t)
	signIn("2001:db8:1:2::1", "a@example.com", "wrong password")
	signIn("2001:db8:1:2:ffff:ffff:ffff:fffe", "b@example.com", "wrong password")
	if res := signIn("2001:db8:1:2:abcd::9", testEmail, testPassword); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a third address of the same /64 after two failures: %d, want 429", res.StatusCode)
	}
	code, _ := codeFrom(t, signIn("2001:db8:1:3::1", testEmail, testPassword), p.redirect)
	if tk := p.exchange(code, verifier); tk.status != http.StatusOK {
		t.Fatalf("a client of another /64: exchange %d %s", tk.status, tk.Error)
	}
}

func TestSignIn_WrongEmailOrPassword_SameGenericError(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	b := newBrowser(t)
	page := b.get(p.authorizeURL("state-generic", oauth2.GenerateVerifier()))
	wrongPassword := b.signIn(p.base, page.body, testEmail, "not the password")
	unknownEmail := b.signIn(p.base, page.body, "nobody@example.com", "not the password")
	for _, res := range []response{wrongPassword, unknownEmail} {
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.body, "Wrong e-mail address or password.") {
			t.Fatalf("want 401 with the generic message, got %d\n%.300s", res.StatusCode, res.body)
		}
	}
}

func TestIntrospect_DeletedUser_TokenInactive(t *testing.T) {
	p := startProvider(t, setup{mutate: withConfidentialClient(t)}) // "api", the resource server of the app's tokens
	p.user(testEmail, testPassword)
	tk, _ := p.fullSignIn(testEmail, testPassword)
	introspect := func(token string) (int, bool) {
		req, _ := http.NewRequest(http.MethodPost, p.base+"/oauth2/introspect", strings.NewReader(url.Values{"token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("api", "resource-server-secret-0123456789")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body struct {
			Active bool `json:"active"`
		}
		_ = jsonDecode(res.Body, &body)
		return res.StatusCode, body.Active
	}
	if st, active := introspect(tk.AccessToken); st != http.StatusOK || !active {
		t.Fatalf("introspection before deletion: %d active=%v", st, active)
	}
	if _, err := p.svc.Users().Delete(context.Background(), testEmail); err != nil {
		t.Fatal(err)
	}
	if st, active := introspect(tk.AccessToken); st != http.StatusOK || active {
		t.Fatalf("introspection after deletion: %d active=%v", st, active)
	}
	if st := p.userinfoStatus(tk.AccessToken); st != http.StatusUnauthorized {
		t.Fatalf("userinfo after deletion: %d", st)
	}
	if r := p.refresh(tk.RefreshToken); r.status != http.StatusBadRequest {
		t.Fatalf("refresh after deletion: %d", r.status)
	}
	// Wrong resource-server credentials are refused.
	req, _ := http.NewRequest(http.MethodPost, p.base+"/oauth2/introspect", strings.NewReader("token="+tk.AccessToken))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("api", "wrong")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("introspection with a wrong secret: %d", res.StatusCode)
	}
}

// A code is refused once its lifetime has passed. fosite and Redis read their own clocks (fosite has no
// clock to inject), so the test does not wait for the lifetime: it checks that the stored code ends
// exactly CodeLifetime after it was issued (the session's expiry, which fosite checks, and the record's
// TTL, after which Redis drops it), then ends the record's lifetime at once and exchanges the code.
func TestToken_ExpiredCode_Refused(t *testing.T) {
	const lifetime = 42 * time.Second // not the default (60s): a lifetime that is ignored shows
	p := startProvider(t, setup{mutate: func(c *config.Config) { c.Auth.CodeLifetime = config.Duration(lifetime) }})
	p.user(testEmail, testPassword)
	verifier := oauth2.GenerateVerifier()
	before := time.Now()
	code := p.signInAndGetCode(newBrowser(t), testEmail, testPassword, verifier)
	after := time.Now()

	family, _, ok := strings.Cut(code, "~")
	if !ok {
		t.Fatalf("code %q has no family", code)
	}
	k := "auth:{" + family + "}:code"
	v, err := p.rdb.Get(t.Context(), k).Result()
	if err != nil {
		t.Fatalf("the code's record %s: %v", k, err)
	}
	_, record, _ := strings.Cut(v, "\n") // "signature\n" then 'A' and the request as JSON
	var stored struct {
		Session struct {
			ExpiresAt map[string]int64 `json:"e"` // Unix ms
		} `json:"session"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(record, "A")), &stored); err != nil {
		t.Fatalf("the code's record %q: %v", v, err)
	}
	exp := time.UnixMilli(stored.Session.ExpiresAt["authorize_code"])
	if lo, hi := before.Add(lifetime).Truncate(time.Millisecond), after.Add(lifetime); exp.Before(lo) || exp.After(hi) {
		t.Fatalf("the code expires at %s, want issue time + %s: within [%s, %s]", exp, lifetime, lo, hi)
	}
	ttl, err := p.rdb.PTTL(t.Context(), k).Result()
	if err != nil {
		t.Fatal(err)
	}
	// The record lives until the code expires: at least what is left of the lifetime since before it
	// was issued (less a millisecond of rounding), and at most the lifetime (EndLifetimes checks that).
	if least := lifetime - time.Since(before) - time.Millisecond; ttl < least {
		t.Fatalf("the code's record lives %s, want at least %s", ttl, least)
	}

	testredis.EndLifetimes(t, p.rdb, k, lifetime) // the lifetime passes
	if tk := p.exchange(code, verifier); tk.status != http.StatusBadRequest || tk.Error != "invalid_grant" {
		t.Fatalf("expired code: %d %s", tk.status, tk.Error)
	}

	// The stored expiry is what fosite checks, record or no record: a second code whose record still
	// exists but whose session says it expired a second ago is refused too.
	code = p.signInAndGetCode(newBrowser(t), testEmail, testPassword, verifier)
	family, _, _ = strings.Cut(code, "~")
	k = "auth:{" + family + "}:code"
	v, err = p.rdb.Get(t.Context(), k).Result()
	if err != nil {
		t.Fatalf("the second code's record %s: %v", k, err)
	}
	issued := regexp.MustCompile(`"authorize_code":\d+`)
	if len(issued.FindAllString(v, -1)) != 1 {
		t.Fatalf("the second code's record has no single authorize_code expiry: %q", v)
	}
	expired := issued.ReplaceAllString(v, fmt.Sprintf(`"authorize_code":%d`, time.Now().Add(-time.Second).UnixMilli()))
	if err := p.rdb.SetArgs(t.Context(), k, expired, redis.SetArgs{KeepTTL: true}).Err(); err != nil {
		t.Fatal(err)
	}
	if tk := p.exchange(code, verifier); tk.status != http.StatusBadRequest || tk.Error != "invalid_grant" {
		t.Fatalf("a code past its session's expiry: %d %s", tk.status, tk.Error)
	}
}

// A right password gives its attempt back also when no session starts (D44 settles the reservation in
// the round trip that starts the session, and on every other way out): an unverified account refused by
// a client that requires a verified address signs in twice the account's budget of times and is never
// throttled.
func TestSignIn_RightPasswordWithoutASession_GivesTheAttemptBack(t *testing.T) {
	p := startProvider(t, setup{mutate: func(c *config.Config) {
		c.Auth.Throttle = config.Throttle{AccountFailures: 3, IPFailures: 6, Window: config.Duration(time.Minute)}
		c.Auth.Clients[0].RequireVerifiedEmail = true
	}})
	p.unverifiedUser(testEmail, testPassword)
	for i := range 8 {
		b := newBrowser(t) // an unknown browser each time: the account's shared budget and the address's
		page := b.get(p.authorizeURL("state-unverified", oauth2.GenerateVerifier()))
		res := b.signIn(p.base, page.body, testEmail, testPassword)
		if res.StatusCode != http.StatusForbidden || !strings.Contains(res.body, "Confirm your e-mail address") {
			t.Fatalf("sign-in %d with the right password: %d, want 403 (the attempt was not given back?)\n%.600s", i+1, res.StatusCode, res.body)
		}
	}
}
