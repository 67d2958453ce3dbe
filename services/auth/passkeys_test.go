package auth_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/passkey"
	"github.com/formsservice/formsservice/services/platform/config"
)

// localhostIssuer makes the provider's issuer http://localhost:<its port>: a host name, so passkeys are
// offered (the test's requests still go to 127.0.0.1; the provider does not look at the host).
func localhostIssuer(more func(*config.Config)) func(*config.Config) {
	return func(c *config.Config) {
		u, _ := url.Parse(c.PublicURL)
		c.Auth.Issuer = "http://localhost:" + u.Port()
		if more != nil {
			more(c)
		}
	}
}

var (
	nonceInCSP    = regexp.MustCompile(`script-src 'nonce-([A-Za-z0-9_-]+)'`)
	nonceInScript = regexp.MustCompile(`<script nonce="([^"]+)">`)
)

// A page's one script is allowed by a nonce new for every response, nothing else: no 'unsafe-inline',
// no other script source.
func checkScriptNonce(t *testing.T, what string, res response) string {
	t.Helper()
	csp := res.Header.Get("Content-Security-Policy")
	m, s := nonceInCSP.FindStringSubmatch(csp), nonceInScript.FindAllStringSubmatch(res.body, -1)
	if m == nil || len(s) != 1 || s[0][1] != m[1] || len(m[1]) < 22 {
		t.Fatalf("%s: CSP %q and scripts %v: want one script whose nonce the CSP names (128 bits)", what, csp, s)
	}
	for _, bad := range []string{"unsafe-inline", "unsafe-eval", "strict-dynamic", "script-src *", "'self' 'nonce"} {
		if strings.Contains(csp, bad) {
			t.Errorf("%s: CSP %q has %s", what, csp, bad)
		}
	}
	for _, want := range []string{"connect-src 'self'", "frame-ancestors 'none'", "default-src 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("%s: CSP %q lacks %s", what, csp, want)
		}
	}
	if res.Header.Get("X-Frame-Options") != "DENY" || res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("%s: X-Frame-Options %q, Cache-Control %q", what, res.Header.Get("X-Frame-Options"), res.Header.Get("Cache-Control"))
	}
	return m[1]
}

func TestPasskeys_NotOfferedWhenDisabledOrTheIssuerIsAnIPAddress(t *testing.T) {
	off := false
	for name, mutate := range map[string]func(*config.Config){
		"issuer on 127.0.0.1": nil,
		"enabled: false":      localhostIssuer(func(c *config.Config) { c.Auth.Passkeys.Enabled = &off }),
	} {
		p := startProvider(t, setup{mutate: mutate})
		b := newBrowser(t)
		res := b.get(p.authorizeURL("state-offered", oauth2.GenerateVerifier()))
		if res.StatusCode != http.StatusOK || strings.Contains(res.body, `id="passkey-signin"`) || strings.Contains(res.body, "<script") ||
			strings.Contains(res.Header.Get("Content-Security-Policy"), "script-src") {
			t.Errorf("%s: the sign-in page offers passkeys or carries a script", name)
		}
		begin := b.postForm(p.base+"/oauth2/passkey/begin", url.Values{"csrf_token": {csrfOf(t, res.body)}})
		account := b.get(p.base + "/account/passkeys")
		if begin.StatusCode != http.StatusNotFound || account.StatusCode != http.StatusNotFound {
			t.Errorf("%s: begin %d, passkeys page %d; want 404", name, begin.StatusCode, account.StatusCode)
		}
		// Nor does the account page link to the passkeys page.
		p.user(testEmail, testPassword)
		p.signInAndGetCode(b, testEmail, testPassword, oauth2.GenerateVerifier())
		if page := b.get(p.base + "/account"); page.StatusCode != http.StatusOK || strings.Contains(page.body, "/account/passkeys") {
			t.Errorf("%s: the account page (%d) links to the passkeys page", name, page.StatusCode)
		}
	}
}

var csrfInput = regexp.MustCompile(`<input type="hidden" name="csrf_token" value="([^"]+)">`)

// csrfOf is the CSRF token in a page's forms.
func csrfOf(t testing.TB, body string) string {
	t.Helper()
	m := csrfInput.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token on the page:\n%.600s", body)
	}
	return m[1]
}

func TestSignInPage_WithPasskeys_OneScriptByNonce_FormsWorkWithoutIt(t *testing.T) {
	p := startProvider(t, setup{mutate: localhostIssuer(nil)})
	b := newBrowser(t)
	first := b.get(p.authorizeURL("state-first", oauth2.GenerateVerifier()))
	if first.StatusCode != http.StatusOK {
		t.Fatalf("sign-in page: %d %.300s", first.StatusCode, first.body)
	}
	second := b.get(p.authorizeURL("state-second", oauth2.GenerateVerifier()))
	if n1, n2 := checkScriptNonce(t, "sign-in page", first), checkScriptNonce(t, "sign-in page", second); n1 == n2 {
		t.Errorf("two responses share the nonce %q", n1)
	}
	for _, want := range []string{`autocomplete="username webauthn"`, `id="passkey-signin"`, `data-begin="/oauth2/passkey/begin" hidden>`} {
		if !strings.Contains(first.body, want) {
			t.Errorf("sign-in page lacks %s", want)
		}
	}
	// Without the script the password form is what it was.
	p.user(testEmail, testPassword)
	codeFrom(t, b.signIn(p.base, first.body, testEmail, testPassword), p.redirect)
}

func TestPasskeyBegin_NeedsTheFormsCSRFToken_AnswersOptionsThatRequireUserVerification(t *testing.T) {
	p := startProvider(t, setup{mutate: localhostIssuer(nil)})
	b := newBrowser(t)
	page := b.get(p.authorizeURL("state-begin", oauth2.GenerateVerifier()))
	for name, form := range map[string]url.Values{"no token": {}, "wrong token": {"csrf_token": {strings.Repeat("x", 43)}}} {
		if res := b.postForm(p.base+"/oauth2/passkey/begin", form); res.StatusCode != http.StatusForbidden || !strings.Contains(res.body, `"error"`) {
			t.Errorf("%s: %d %s, want 403 with an error", name, res.StatusCode, res.body)
		}
	}
	res := b.postForm(p.base+"/oauth2/passkey/begin", url.Values{"csrf_token": {csrfOf(t, page.body)}}, "Origin", "http://evil.example")
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("from another origin: %d, want 403", res.StatusCode)
	}
	res = b.postForm(p.base+"/oauth2/passkey/begin", url.Values{"csrf_token": {csrfOf(t, page.body)}})
	var o struct {
		Ceremony  string `json:"ceremony"`
		PublicKey struct {
			Challenge        string `json:"challenge"`
			RPID             string `json:"rpId"`
			UserVerification string `json:"userVerification"`
			AllowCredentials []any  `json:"allowCredentials"`
		} `json:"publicKey"`
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal([]byte(res.body), &o) != nil || res.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("begin: %d %s", res.StatusCode, res.body)
	}
	if len(o.Ceremony) != 43 || len(o.PublicKey.Challenge) < 22 || o.PublicKey.RPID != "localhost" || o.PublicKey.UserVerification != "required" || len(o.PublicKey.AllowCredentials) != 0 {
		t.Errorf("options %+v: want a ceremony, a challenge, RP ID localhost, user verification required, no allow list (discoverable)", o)
	}
}

// A refused passkey counts against the client address's sign-in budget as a wrong password does, and
// against no account's: a passkey's user handle is anyone's to send.
func TestPasskeySignIn_RefusalsCountAgainstTheAddressNotTheAccount(t *testing.T) {
	logs := &testproc.Buffer{}
	p := startProvider(t, setup{logs: logs, mutate: localhostIssuer(func(c *config.Config) { c.Auth.Throttle.IPFailures = 3 })})
	userID := p.user(testEmail, testPassword)
	b := newBrowser(t)
	// attempt answers a ceremony: malformed, or (named) well formed — this origin, this ceremony's
	// challenge — under the account's own user handle, with a credential the account does not have.
	attempt := func(named bool) response {
		page := b.get(p.authorizeURL("state-throttle", oauth2.GenerateVerifier()))
		begin := b.postForm(p.base+"/oauth2/passkey/begin", url.Values{"csrf_token": {csrfOf(t, page.body)}})
		var o struct {
			Ceremony  string
			PublicKey struct{ Challenge string } `json:"publicKey"`
		}
		_ = json.Unmarshal([]byte(begin.body), &o)
		f := forms(t, p.base, page.body)[0]
		f.fields.Set("action", "passkey")
		f.fields.Set("ceremony", o.Ceremony)
		b64 := base64.RawURLEncoding.EncodeToString
		clientData, authData, handle := "e30", "AAAA", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY"
		if named {
			issuer := p.cfg.Auth.Issuer
			cd, _ := json.Marshal(map[string]any{"type": "webauthn.get", "challenge": o.PublicKey.Challenge, "origin": issuer, "crossOrigin": false})
			rpID := sha256.Sum256([]byte("localhost"))
			clientData, authData, handle = b64(cd), b64(append(rpID[:], 0x05, 0, 0, 0, 1)), b64([]byte(userID)) // UP and UV, counter 1
		}
		f.fields.Set("credential", `{"id":"AAAA","rawId":"AAAA","type":"public-key","response":{"clientDataJSON":"`+clientData+
			`","authenticatorData":"`+authData+`","signature":"AAAA","userHandle":"`+handle+`"}}`)
		return b.postForm(f.action, f.fields)
	}
	for i, want := range []int{http.StatusUnauthorized, http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusTooManyRequests} {
		res := attempt(i == 1)
		if res.StatusCode != want || !strings.Contains(res.body, `id="passkey-error"`) {
			t.Fatalf("attempt %d: %d, want %d with the passkey error on the page", i+1, res.StatusCode, want)
		}
		if want == http.StatusTooManyRequests && res.Header.Get("Retry-After") == "" {
			t.Errorf("attempt %d: 429 without Retry-After", i+1)
		}
	}
	// No account's budget was touched; the address's is shared with passwords.
	keys, err := p.rdb.Keys(context.Background(), "auth:throttle:[^r]*").Result() // not the rate limits
	if err != nil || len(keys) != 1 || !strings.HasPrefix(keys[0], "auth:throttle:addr:") {
		t.Errorf("budgets after passkey refusals: %v %v, want the address's only", keys, err)
	}
	// Each refusal, the lockout of the address and the attempt the budget refused are counted; they name
	// no account — not even the one whose handle the second attempt sent — so they are logged, not
	// stored (D52).
	if n := auditCounted(t, p, audit.SignInPasskey, audit.Failure); n != 4 {
		t.Errorf("%d signin.passkey failures counted, want 2 malformed, 1 unknown passkey and 1 throttled", n)
	}
	var unknown []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `"kind":"`+string(audit.SignInPasskey)+`"`) && strings.Contains(line, `"reason":"`+passkey.ReasonUnknownPasskey+`"`) {
			unknown = append(unknown, line)
		}
	}
	if len(unknown) != 1 || strings.Contains(unknown[0], userID) || strings.Contains(unknown[0], `"user"`) {
		t.Errorf("the refusal under the account's handle, as logged: %q; want one line naming no user", unknown)
	}
	if n := auditCounted(t, p, audit.Lockout, audit.Failure); n != 1 {
		t.Errorf("%d lockouts counted, want the address's", n)
	}
	if evs := trail(t, p); len(evs) != 0 {
		t.Errorf("refusals naming no account were stored: %+v", evs)
	}
	page := b.get(p.authorizeURL("state-throttle", oauth2.GenerateVerifier()))
	if res := b.signIn(p.base, page.body, testEmail, testPassword); res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a password from the throttled address: %d, want 429", res.StatusCode)
	}
}

func TestPasskeysPage_SignInSessionCSRFAndCurrentPassword(t *testing.T) {
	// The browser signs in below and so holds a device cookie: its own budget is the one that counts.
	p := startProvider(t, setup{mutate: localhostIssuer(func(c *config.Config) { c.Auth.Throttle.DeviceFailures = 2 })})
	user := p.user(testEmail, testPassword)
	b := newBrowser(t)
	if res := b.get(p.base + "/account/passkeys"); res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.body, "Sign in first") {
		t.Fatalf("without a sign-in session: %d", res.StatusCode)
	}
	if res := b.postForm(p.base+"/account/passkeys/begin", url.Values{}); res.StatusCode != http.StatusForbidden {
		t.Errorf("begin without a session or token: %d, want 403", res.StatusCode)
	}
	p.signInAndGetCode(b, testEmail, testPassword, oauth2.GenerateVerifier())

	res := b.get(p.base + "/account/passkeys")
	if res.StatusCode != http.StatusOK || !strings.Contains(res.body, "You have no passkeys yet.") || !strings.Contains(res.body, testEmail) {
		t.Fatalf("passkeys page: %d\n%.600s", res.StatusCode, res.body)
	}
	checkScriptNonce(t, "passkeys page", res)
	if !strings.Contains(res.body, `<a href="/account">Your account</a>`) {
		t.Errorf("the passkeys page does not link back to the account page")
	}
	if page := b.get(p.base + "/account"); page.StatusCode != http.StatusOK || !strings.Contains(page.body, `href="/account/passkeys"`) {
		t.Errorf("the account page (%d) does not link to the passkeys page", page.StatusCode)
	}
	token := csrfOf(t, res.body)

	if r := b.postForm(p.base+"/account/passkeys", url.Values{"action": {"remove"}, "id": {"AAAA"}}); r.StatusCode != http.StatusForbidden {
		t.Errorf("remove without the CSRF token: %d, want 403", r.StatusCode)
	}
	if r := b.postForm(p.base+"/account/passkeys", url.Values{"csrf_token": {token}, "action": {"remove"}, "id": {"AAAA"}}); r.StatusCode != http.StatusNotFound {
		t.Errorf("removing a passkey the user does not have: %d, want 404", r.StatusCode)
	}
	if r := b.postForm(p.base+"/account/passkeys", url.Values{"csrf_token": {token}, "action": {"add"}, "ceremony": {"x"}, "credential": {"{}"}}); r.StatusCode != http.StatusBadRequest {
		t.Errorf("adding with no ceremony: %d, want 400", r.StatusCode)
	}
	begin := func(name, password string) (int, string) {
		r := b.postForm(p.base+"/account/passkeys/begin", url.Values{"csrf_token": {token}, "name": {name}, "password": {password}})
		var e struct{ Field string }
		_ = json.Unmarshal([]byte(r.body), &e)
		return r.StatusCode, e.Field
	}
	if status, field := begin("", testPassword); status != http.StatusBadRequest || field != "name" {
		t.Errorf("no name: %d %q", status, field)
	}
	if status, field := begin("Key", "wrong password"); status != http.StatusUnauthorized || field != "password" {
		t.Errorf("wrong password: %d %q", status, field)
	}
	if status, _ := begin("Key", "wrong password"); status != http.StatusTooManyRequests {
		t.Errorf("second wrong password with deviceFailures 2: %d, want 429", status)
	}
	if status, _ := begin("Key", testPassword); status != http.StatusTooManyRequests {
		t.Errorf("the right password while the browser is throttled: %d, want 429", status)
	}
	if r := b.postForm(p.base+"/account/passkeys", url.Values{"csrf_token": {token}, "action": {"rename"}, "id": {"AAAA"}, "name": {"Key"}}); r.StatusCode != http.StatusNotFound {
		t.Errorf("renaming a passkey the user does not have: %d, want 404", r.StatusCode)
	}
	if r := b.postForm(p.base+"/account/passkeys", url.Values{"csrf_token": {token}, "action": {"rename"}, "id": {"AAAA"}, "name": {" "}}); r.StatusCode != http.StatusBadRequest {
		t.Errorf("renaming to a blank name: %d, want 400", r.StatusCode)
	}

	// Each refusal is in the audit trail, of this user, with its reason.
	var got []string
	for _, e := range trail(t, p) {
		if e.Kind == audit.SignIn {
			continue
		}
		if e.User != user {
			t.Errorf("event %+v: want user %s", e, user)
		}
		got = append(got, string(e.Kind)+" "+string(e.Outcome)+" "+e.Reason)
	}
	slices.Sort(got)
	want := []string{"passkey.added failure bad_password", "passkey.added failure bad_password", "passkey.added failure expired",
		"passkey.added failure throttled", "passkey.removed failure not_found", "passkey.renamed failure not_found", "signin.lockout failure device"}
	if !slices.Equal(got, want) {
		t.Errorf("audit trail %q, want %q", got, want)
	}
}

// A password sign-in's ID tokens say amr ["pwd"]: at the code exchange, after a refresh, and when a
// second authorization skips the form on the same sign-in session.
func TestPasswordSignIn_IDTokenAMRIsPwd(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	tk, b := p.fullSignIn(testEmail, testPassword)
	again := p.refresh(tk.RefreshToken)
	verifier := oauth2.GenerateVerifier()
	res := b.get(p.authorizeURL("state-sso", verifier))
	code, _ := codeFrom(t, res, p.redirect)
	sso := p.exchange(code, verifier)
	for name, idt := range map[string]string{"exchange": tk.IDToken, "refresh": again.IDToken, "session": sso.IDToken} {
		if amr := amrOf(jwtClaims(t, idt)); strings.Join(amr, " ") != "pwd" {
			t.Errorf("%s: amr %v, want [pwd]", name, amr)
		}
	}
}

// jwtClaims are a JWT's claims, read without checking the signature (the flow tests check it; here the
// claims are what matter).
func jwtClaims(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", token)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(raw, &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}
