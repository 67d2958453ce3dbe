package auth_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/services/auth/acr"
	"github.com/formsservice/formsservice/services/auth/mfa"
	"github.com/formsservice/formsservice/services/platform/config"
)

// testClock is the provider's clock for second-factor codes, which the test moves a time step at a
// time to get the next code at once (D8); tokens keep the real clock.
type testClock struct{ t atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.t.Store(time.Now().Unix())
	return c
}
func (c *testClock) now() time.Time { return time.Unix(c.t.Load(), 0) }
func (c *testClock) nextStep()      { c.t.Add(mfa.Period) }

// code is what the person's authenticator app shows now.
func (c *testClock) code(t testing.TB, secret string) string {
	t.Helper()
	code, err := mfa.Code(secret, c.now())
	if err != nil {
		t.Fatal(err)
	}
	return code
}

var (
	secretRe = regexp.MustCompile(`<p class="secret"[^>]*>([A-Z2-7 ]+)</p>`)
	codesRe  = regexp.MustCompile(`<li>([a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4})</li>`)
)

// follow GETs u and follows same-site redirects (the account page's sign-in round trip) until an answer
// that is not a redirect, or one that leaves the provider.
func (b *browser) follow(base, u string) response {
	b.t.Helper()
	for range 10 {
		res := b.get(u)
		if res.StatusCode != http.StatusSeeOther && res.StatusCode != http.StatusFound {
			return res
		}
		loc, err := url.Parse(res.Header.Get("Location"))
		if err != nil {
			b.t.Fatal(err)
		}
		next := res.Request.URL.ResolveReference(loc).String()
		if !strings.HasPrefix(next, base+"/") || strings.HasPrefix(next, base+"/cb") {
			return res
		}
		u = next
	}
	b.t.Fatal("too many redirects")
	return response{}
}

// accountSignIn opens /account in b, signing in on the way with the password (and a code when asked).
func (p *provider) accountSignIn(b *browser, email, password string, code func() string) response {
	p.t.Helper()
	page := b.follow(p.base, p.base+"/account")
	if !strings.Contains(page.body, `name="password"`) {
		p.t.Fatalf("no sign-in page on the way to /account: %d\n%.500s", page.StatusCode, page.body)
	}
	res := b.signIn(p.base, page.body, email, password)
	if res.StatusCode == http.StatusOK && strings.Contains(res.body, `value="mfa"`) {
		f := forms(p.t, p.base, res.body)[0]
		f.fields.Set("code", code())
		res = b.postForm(f.action, f.fields)
	}
	if res.StatusCode != http.StatusSeeOther || !strings.HasSuffix(res.Header.Get("Location"), "/account") {
		p.t.Fatalf("sign-in for the account page: %d %s\n%.500s", res.StatusCode, res.Header.Get("Location"), res.body)
	}
	return b.follow(p.base, p.base+"/account")
}

// enrolTOTP sets up an authenticator app from the signed-in account page of b and returns its secret
// and recovery codes.
func (p *provider) enrolTOTP(b *browser, clock *testClock) (string, []string) {
	p.t.Helper()
	secret, codes, _ := p.enrolTOTPFrom(b, clock, b.get(p.base+"/account/totp"))
	return secret, codes
}

// enrolTOTPFrom confirms the app on an enrolment page already open; it returns the secret, the recovery
// codes and the page that shows them.
func (p *provider) enrolTOTPFrom(b *browser, clock *testClock, page response) (string, []string, string) {
	p.t.Helper()
	m := secretRe.FindStringSubmatch(page.body)
	if page.StatusCode != http.StatusOK || m == nil {
		p.t.Fatalf("enrolment page %d:\n%.800s", page.StatusCode, page.body)
	}
	secret := strings.ReplaceAll(m[1], " ", "")
	f := forms(p.t, p.base, page.body)[0]
	f.fields.Set("code", clock.code(p.t, secret))
	res := b.postForm(f.action, f.fields)
	var codes []string
	for _, c := range codesRe.FindAllStringSubmatch(res.body, -1) {
		codes = append(codes, c[1])
	}
	if res.StatusCode != http.StatusOK || len(codes) != 10 {
		p.t.Fatalf("confirming the app: %d, %d codes\n%.800s", res.StatusCode, len(codes), res.body)
	}
	return secret, codes, res.body
}

// secondStep answers the code page of a sign-in with code.
func (b *browser) secondStep(base string, page response, code string) response {
	b.t.Helper()
	if !strings.Contains(page.body, `value="mfa"`) {
		b.t.Fatalf("no code page (%d):\n%.600s", page.StatusCode, page.body)
	}
	f := forms(b.t, base, page.body)[0]
	f.fields.Set("code", code)
	return b.postForm(f.action, f.fields)
}

// verifyIDToken checks an ID token as a relying party does (go-oidc, discovery and JWKS) and returns
// its amr and acr.
func (p *provider) verifyIDToken(raw string) ([]string, string) {
	p.t.Helper()
	return p.verifyIDTokenFor(clientID, raw)
}

// verifyIDTokenFor is verifyIDToken for another client.
func (p *provider) verifyIDTokenFor(client, raw string) ([]string, string) {
	p.t.Helper()
	ctx := context.Background()
	op, err := oidc.NewProvider(ctx, p.base)
	if err != nil {
		p.t.Fatal(err)
	}
	tok, err := op.Verifier(&oidc.Config{ClientID: client}).Verify(ctx, raw)
	if err != nil {
		p.t.Fatal(err)
	}
	var c struct {
		AMR []string `json:"amr"`
		ACR string   `json:"acr"`
	}
	if err := tok.Claims(&c); err != nil {
		p.t.Fatal(err)
	}
	return c.AMR, c.ACR
}

// Password and TOTP: the second step after the password, a wrong and a replayed code refused, a
// recovery code once; the ID token says how (amr, acr), for a relying party verifying it with go-oidc.
func TestSecondStep_PasswordThenCode_AMRAndACRInTheIDToken(t *testing.T) {
	clock := newTestClock()
	p := startProvider(t, setup{now: clock.now})
	p.user(testEmail, testPassword)
	b := newBrowser(t)
	p.accountSignIn(b, testEmail, testPassword, nil)
	secret, codes := p.enrolTOTP(b, clock)

	// A new browser signs in: the password, then the code.
	other := newBrowser(t)
	verifier := oauth2.GenerateVerifier()
	page := other.get(p.authorizeURL("state-0123456789", verifier))
	step := other.signIn(p.base, page.body, testEmail, testPassword)
	if step.StatusCode != http.StatusOK || !strings.Contains(step.body, "Enter your code") {
		t.Fatalf("after the password: %d\n%.500s", step.StatusCode, step.body)
	}
	wrong := other.secondStep(p.base, step, "000000")
	if wrong.StatusCode != http.StatusUnauthorized || !strings.Contains(wrong.body, "not right") {
		t.Fatalf("a wrong code: %d\n%.500s", wrong.StatusCode, wrong.body)
	}
	// The code that confirmed the app a moment ago is spent.
	replayed := other.secondStep(p.base, wrong, clock.code(t, secret))
	if replayed.StatusCode != http.StatusUnauthorized || !strings.Contains(replayed.body, "used already") {
		t.Fatalf("a replayed code: %d\n%.500s", replayed.StatusCode, replayed.body)
	}
	clock.nextStep()
	code, _ := codeFrom(t, other.secondStep(p.base, replayed, clock.code(t, secret)), p.redirect)
	tk := p.exchange(code, verifier)
	amr, level := p.verifyIDToken(tk.IDToken)
	if strings.Join(amr, " ") != "pwd otp mfa" || level != acr.TwoFactor {
		t.Fatalf("amr %v acr %q, want [pwd otp mfa] %s", amr, level, acr.TwoFactor)
	}
	// The refreshed ID token says the same: it is the same sign-in.
	rt := p.refresh(tk.RefreshToken)
	if amr, level := p.verifyIDToken(rt.IDToken); strings.Join(amr, " ") != "pwd otp mfa" || level != acr.TwoFactor {
		t.Fatalf("after refresh: amr %v acr %q", amr, level)
	}

	// A recovery code works once. Its sign-in says so: rc, not otp, and still two factors (D69).
	for i, want := range []int{http.StatusSeeOther, http.StatusUnauthorized} {
		b3 := newBrowser(t)
		verifier := oauth2.GenerateVerifier()
		page := b3.get(p.authorizeURL("state-0123456789", verifier))
		res := b3.secondStep(p.base, b3.signIn(p.base, page.body, testEmail, testPassword), strings.ToUpper(codes[0]))
		if res.StatusCode != want {
			t.Fatalf("recovery code, use %d: %d, want %d\n%.500s", i+1, res.StatusCode, want, res.body)
		}
		if want != http.StatusSeeOther {
			continue
		}
		code, _ := codeFrom(t, res, p.redirect)
		if amr, level := p.verifyIDToken(p.exchange(code, verifier).IDToken); strings.Join(amr, " ") != "pwd rc mfa" || level != acr.TwoFactor {
			t.Fatalf("a recovery code's sign-in: amr %v acr %q, want [pwd rc mfa] %s", amr, level, acr.TwoFactor)
		}
	}
	// The account page tells the sessions apart too.
	if page := b.get(p.base + "/account"); !strings.Contains(page.body, "with password and a recovery code") || !strings.Contains(page.body, "with password and a code") {
		t.Errorf("the account page's sessions do not tell a recovery code from the app's:\n%s", page.body)
	}
}

// A client with requireMFA: a user without a second factor sets one up before the client gets its code,
// and then comes back to the same authorization request; a browser signed in with the password alone is
// asked for a code.
func TestRequireMFA_EnrolBeforeTheCode_StepUpForAPasswordSession(t *testing.T) {
	clock := newTestClock()
	p := startProvider(t, setup{now: clock.now, mutate: func(c *config.Config) {
		c.Auth.Clients[0].RequireMFA = true
		c.Auth.Clients = append(c.Auth.Clients, config.OAuthClient{ClientID: "plain", RedirectURIs: []string{c.PublicURL + "/cb"}})
	}})
	p.user(testEmail, testPassword)
	b := newBrowser(t)
	verifier := oauth2.GenerateVerifier()
	page := b.get(p.authorizeURL("state-0123456789", verifier))
	res := b.signIn(p.base, page.body, testEmail, testPassword)
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/account/totp?return=") {
		t.Fatalf("a user without a second factor: %d %q, want the set-up", res.StatusCode, loc)
	}
	enrol := b.get(p.base + loc)
	if !strings.Contains(enrol.body, "Test App</strong> asks for a second step") {
		t.Fatalf("the set-up does not say who asks:\n%.800s", enrol.body)
	}
	_, _, codesPage := p.enrolTOTPFrom(b, clock, enrol)
	cont := regexp.MustCompile(`<a class="button" href="([^"]+)">Continue to Test App</a>`).FindStringSubmatch(codesPage)
	if cont == nil {
		t.Fatalf("no way back to the app:\n%.800s", codesPage)
	}
	code, state := codeFrom(t, b.get(p.base+html.UnescapeString(cont[1])), p.redirect)
	if state != "state-0123456789" {
		t.Fatalf("state %q", state)
	}
	amr, level := p.verifyIDToken(p.exchange(code, verifier).IDToken)
	if level != acr.TwoFactor || strings.Join(amr, " ") != "pwd otp mfa" {
		t.Fatalf("amr %v acr %q", amr, level)
	}

	// A browser signed in with the password alone (to a client that does not require more, before the
	// user set up an app): the requireMFA client asks it for a code, without the password again.
	const grace = "grace@example.com"
	p.user(grace, testPassword)
	early := newBrowser(t)
	plain := p.oauth2Config()
	plain.ClientID = "plain"
	page = early.get(plain.AuthCodeURL("state-0123456789", oauth2.S256ChallengeOption(verifier)))
	codeFrom(t, early.signIn(p.base, page.body, grace, testPassword), p.redirect)
	setup := newBrowser(t)
	p.accountSignIn(setup, grace, testPassword, nil)
	secret, _ := p.enrolTOTP(setup, clock)
	step := early.get(p.authorizeURL("state-0123456789", verifier))
	if step.StatusCode != http.StatusOK || strings.Contains(step.body, `name="password"`) {
		t.Fatalf("step-up: %d, want the code page without the password\n%.600s", step.StatusCode, step.body)
	}
	clock.nextStep()
	code, _ = codeFrom(t, early.secondStep(p.base, step, clock.code(t, secret)), p.redirect)
	if amr, _ := p.verifyIDToken(p.exchange(code, verifier).IDToken); strings.Join(amr, " ") != "pwd otp mfa" {
		t.Fatalf("after the step-up: amr %v", amr)
	}
	// prompt=none cannot ask: a password-only session gets login_required from the requireMFA client.
	late := newBrowser(t)
	p.user("hedy@example.com", testPassword)
	page = late.get(plain.AuthCodeURL("state-0123456789", oauth2.S256ChallengeOption(verifier)))
	codeFrom(t, late.signIn(p.base, page.body, "hedy@example.com", testPassword), p.redirect)
	res = late.get(p.authorizeURL("state-0123456789", verifier, oauth2.SetAuthURLParam("prompt", "none")))
	if loc, _ := url.Parse(res.Header.Get("Location")); res.StatusCode != http.StatusSeeOther || loc.Query().Get("error") != "login_required" {
		t.Fatalf("prompt=none with too little: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
}

var styleNonceRe = regexp.MustCompile(`<style nonce="([^"]+)">`)

// The account page: only with a session (else the hosted sign-in page, for the provider's own client,
// and back), the hosted page's headers with a fresh style nonce in every answer, CSRF on every form, and
// a session or grant of someone else cannot be ended by naming it.
func TestAccountPage_HeadersCSRFAndSignIn(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	p.user("eve@example.com", testPassword)
	b := newBrowser(t)
	res := b.get(p.base + "/account/totp?x=1")
	loc, _ := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusSeeOther || loc.Path != "/oauth2/authorize" || loc.Query().Get("client_id") != "formsservice-account" ||
		loc.Query().Get("state") != "/account/totp?x=1" || loc.Query().Get("code_challenge_method") != "S256" {
		t.Fatalf("/account without a session: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	first := p.accountSignIn(b, testEmail, testPassword, nil)
	second := b.get(p.base + "/account")
	for _, page := range []response{first, second} {
		h := page.Header
		m := styleNonceRe.FindStringSubmatch(page.body)
		if m == nil || !strings.Contains(h.Get("Content-Security-Policy"), "style-src 'nonce-"+m[1]+"';") ||
			!strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") || strings.Contains(h.Get("Content-Security-Policy"), "unsafe-inline") {
			t.Fatalf("CSP %q for the page's style nonce", h.Get("Content-Security-Policy"))
		}
		if h.Get("X-Frame-Options") != "DENY" || h.Get("Cache-Control") != "no-store" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("headers %v", h)
		}
	}
	if styleNonceRe.FindStringSubmatch(first.body)[1] == styleNonceRe.FindStringSubmatch(second.body)[1] {
		t.Error("the same nonce in two answers")
	}

	// Eve's browser and grant.
	eveTokens, eve := p.fullSignIn("eve@example.com", testPassword)
	eveAccount := eve.follow(p.base, p.base+"/account")
	eveSession := regexp.MustCompile(`name="session" value="([^"]+)"`).FindStringSubmatch(eveAccount.body)[1]
	eveGrant := regexp.MustCompile(`name="grant" value="([^"]+)"`).FindStringSubmatch(eveAccount.body)[1]

	f := forms(t, p.base, second.body)
	var endSession, endGrant pageForm
	for _, x := range f {
		if strings.HasSuffix(x.action, "/account/sessions/end") {
			endSession = x
		}
	}
	endGrant = pageForm{action: p.base + "/account/grants/end", fields: url.Values{"csrf_token": {endSession.fields.Get("csrf_token")}}}
	// Without the CSRF token, or from another origin: 403, nothing ended.
	noToken := url.Values{"session": {endSession.fields.Get("session")}}
	if res := b.postForm(endSession.action, noToken); res.StatusCode != http.StatusForbidden {
		t.Errorf("without the CSRF token: %d", res.StatusCode)
	}
	if res := b.postForm(endSession.action, endSession.fields, "Origin", "https://evil.example"); res.StatusCode != http.StatusForbidden {
		t.Errorf("from another origin: %d", res.StatusCode)
	}
	// Naming Eve's session or grant ends nothing.
	other := url.Values{"csrf_token": endSession.fields["csrf_token"], "session": {eveSession}}
	if res := b.postForm(endSession.action, other); res.StatusCode != http.StatusSeeOther {
		t.Errorf("ending someone else's session: %d", res.StatusCode)
	}
	endGrant.fields.Set("grant", eveGrant)
	if res := b.postForm(endGrant.action, endGrant.fields); res.StatusCode != http.StatusSeeOther || strings.Contains(res.Header.Get("Location"), "done=") {
		t.Errorf("ending someone else's grant: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	if again := eve.get(p.base + "/account"); again.StatusCode != http.StatusOK {
		t.Errorf("Eve's session ended by someone else: %d", again.StatusCode)
	}
	if got := p.refresh(eveTokens.RefreshToken); got.status != http.StatusOK {
		t.Errorf("Eve's grant ended by someone else: %d %s", got.status, got.Error)
	}
	// Still signed in after all that, with the CSRF token: this browser's own session ends, signed out.
	if res := b.postForm(endSession.action, endSession.fields); res.StatusCode != http.StatusOK || !strings.Contains(res.body, "You are signed out") {
		t.Fatalf("ending this browser's session: %d", res.StatusCode)
	}
	if res := b.get(p.base + "/account"); res.StatusCode != http.StatusSeeOther {
		t.Errorf("/account after signing out: %d, want the sign-in", res.StatusCode)
	}
}

// A new session value after the second step (ASVS 3.2.1): the cookie the browser had after the password
// (of a password-only session, here of another client) does not survive the code.
func TestSecondStep_NewSessionValue(t *testing.T) {
	clock := newTestClock()
	p := startProvider(t, setup{now: clock.now, mutate: func(c *config.Config) { c.Auth.Clients[0].RequireMFA = true }})
	p.user(testEmail, testPassword)
	b := newBrowser(t)
	p.accountSignIn(b, testEmail, testPassword, nil)
	before := sessionCookieValue(b, p.base)
	secret, _ := p.enrolTOTP(b, clock)
	afterSetUp := sessionCookieValue(b, p.base)
	if before == "" || afterSetUp == "" || before == afterSetUp {
		t.Fatalf("session value %q before the set-up, %q after: want a new one", before, afterSetUp)
	}
	c := newBrowser(t)
	verifier := oauth2.GenerateVerifier()
	page := c.get(p.authorizeURL("state-0123456789", verifier))
	step := c.signIn(p.base, page.body, testEmail, testPassword)
	if sessionCookieValue(c, p.base) != "" {
		t.Fatal("a session before the code")
	}
	clock.nextStep()
	codeFrom(t, c.secondStep(p.base, step, clock.code(t, secret)), p.redirect)
	if sessionCookieValue(c, p.base) == "" {
		t.Fatal("no session after the code")
	}
}

func sessionCookieValue(b *browser, base string) string {
	u, _ := url.Parse(base)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == "fs_session" {
			return c.Value
		}
	}
	return ""
}

// A session that signed in more than ten minutes ago sets up no second factor without the password
// (someone else's hands on an open session must not add a factor only they hold).
func TestEnrolment_OldSessionNeedsThePassword(t *testing.T) {
	clock := newTestClock()
	p := startProvider(t, setup{now: clock.now})
	p.user(testEmail, testPassword)
	b := newBrowser(t)
	p.accountSignIn(b, testEmail, testPassword, nil)
	// The session signed in eleven minutes ago: its record's auth time moved back.
	ctx := context.Background()
	keys, _ := p.rdb.Keys(ctx, "auth:sso:{*}").Result()
	if len(keys) != 1 {
		t.Fatalf("session keys %v", keys)
	}
	v, _ := p.rdb.Get(ctx, keys[0]).Result()
	parts := strings.SplitN(v, "|", 3)
	parts[1] = strconv.FormatInt(time.Now().Add(-11*time.Minute).Unix(), 10)
	p.rdb.Set(ctx, keys[0], strings.Join(parts, "|"), time.Hour)

	page := b.get(p.base + "/account/totp")
	if !strings.Contains(page.body, `id="enrol-password"`) {
		t.Fatalf("no password field for an old session:\n%.600s", page.body)
	}
	secret := strings.ReplaceAll(secretRe.FindStringSubmatch(page.body)[1], " ", "")
	f := forms(t, p.base, page.body)[0]
	f.fields.Set("code", clock.code(t, secret))
	f.fields.Set("password", "not the password")
	if res := b.postForm(f.action, f.fields); res.StatusCode != http.StatusUnauthorized || strings.Contains(res.body, "recovery codes") {
		t.Fatalf("a wrong password: %d\n%.600s", res.StatusCode, res.body)
	}
	f.fields.Set("password", testPassword)
	if res := b.postForm(f.action, f.fields); res.StatusCode != http.StatusOK || !codesRe.MatchString(res.body) {
		t.Fatalf("with the password: %d\n%.600s", res.StatusCode, res.body)
	}
}
