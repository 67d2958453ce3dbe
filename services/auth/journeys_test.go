package auth_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testmail"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/platform/config"
)

// mailLink is the first link in the newest mail to addr whose path is path.
func mailLink(t *testing.T, mp *testmail.Server, addr, path string, n int) string {
	t.Helper()
	msgs := mp.WaitTo(t, addr, n, 30*time.Second)
	m := mp.Get(t, msgs[0].ID)
	for _, l := range m.Links() {
		if u, err := url.Parse(l); err == nil && u.Path == path {
			return l
		}
	}
	t.Fatalf("no %s link in the mail %q:\n%s", path, m.Subject, m.Text)
	return ""
}

// tamperedLink is a mailed link with one character of its MAC (the token's last part) changed: the
// sixth from the end, always to another one. Replacing the last two characters with "AA", as the tests
// did, left a link that ended so already as it was: one run in about four thousand found its
// "tampered" link valid (CI met it).
func tamperedLink(link string) string {
	i := len(link) - 6
	c := "A"
	if link[i] == 'A' {
		c = "B"
	}
	return link[:i] + c + link[i+1:]
}

// claimsOf decodes a JWT's payload (the signature is checked by the flows that issue it).
func claimsOf(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", token)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func (p *provider) userinfo(at string) map[string]any {
	p.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.base+"/oauth2/userinfo", nil)
	req.Header.Set("Authorization", "Bearer "+at)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	var c map[string]any
	if err := json.NewDecoder(res.Body).Decode(&c); err != nil || res.StatusCode != http.StatusOK {
		p.t.Fatalf("userinfo: %d %v", res.StatusCode, err)
	}
	return c
}

// formTo is the page's form that posts to path.
// followVerifyLink opens a verification link and, when its page offers the form, presses the button
// of action ("confirm" or "delete"): the link's GET acts on nothing (D51).
func followVerifyLink(t *testing.T, b *browser, base, link, action string) response {
	t.Helper()
	res := b.get(link)
	if res.StatusCode != http.StatusOK {
		return res
	}
	f := formTo(t, base, res.body, "/account/verify")
	f.fields.Set("action", action)
	return b.postForm(f.action, f.fields)
}

func formTo(t *testing.T, base, body, path string) pageForm {
	t.Helper()
	for _, f := range forms(t, base, body) {
		if u, _ := url.Parse(f.action); u != nil && u.Path == path {
			return f
		}
	}
	t.Fatalf("no form to %s on the page:\n%.1500s", path, body)
	return pageForm{}
}

func kindsOf(t *testing.T, p *provider, kinds ...audit.Kind) []string {
	t.Helper()
	if err := p.svc.Audit().Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	evs, err := audit.NewStore(p.rdb, nil).Query(t.Context(), audit.Filter{Kinds: kinds})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s", e.Kind, e.Outcome, e.Reason)))
	}
	return out
}

// ticking reads clock a nanosecond later at each reading. The audit trail orders its two streams'
// events by the time they were recorded (security events, and sign-in attempts); on a frozen clock
// every event has the same time, and the tie falls to when each stream's batch reached the store,
// which load decides. A real clock never stands still; this one moves just enough to say what came
// first.
func ticking(clock *testClock) func() time.Time {
	var n atomic.Int64
	return func() time.Time { return clock.now().Add(time.Duration(n.Add(1))) }
}

// E-mail verification over HTTP against Mailpit: the sign-up's mail carries the link; before it, a
// client with requireVerifiedEmail refuses the sign-in (403) and offers the link again; the link verifies
// once (then 410 "already used"), a tampered one is 400, an expired one 410; after it email_verified is
// true in the ID token and at userinfo. Each step is in the audit trail.
func TestVerification_LinkFromTheMail_EmailVerifiedAfter(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	clock := newTestClock()
	p := startProvider(t, setup{mail: mp, now: ticking(clock), mutate: func(c *config.Config) {
		c.Auth.SelfSignup = true
		c.Auth.Clients[0].RequireVerifiedEmail = true
		c.Auth.Clients = append(c.Auth.Clients, config.OAuthClient{ClientID: "open", Name: "Open App", RedirectURIs: []string{c.PublicURL + "/cb"}})
	}})
	b := newBrowser(t)
	page := b.get(p.authorizeURL("state-verify-1", oauth2.GenerateVerifier()))
	signup := formTo(t, p.base, page.body, "/oauth2/authorize")
	for _, f := range forms(t, p.base, page.body) {
		if f.fields.Get("action") == "signup" {
			signup = f
		}
	}
	signup.fields.Set("email", "linus@example.com")
	signup.fields.Set("password", "a sign-up password")
	if res := b.postForm(signup.action, signup.fields); res.StatusCode != http.StatusOK {
		t.Fatalf("sign-up: %d", res.StatusCode)
	}
	first := mailLink(t, mp, "linus@example.com", "/account/verify", 1)

	// Before the link: the client refuses, and offers the link again.
	page = b.get(p.authorizeURL("state-verify-2", oauth2.GenerateVerifier()))
	res := b.signIn(p.base, page.body, "linus@example.com", "a sign-up password")
	if res.StatusCode != http.StatusForbidden || !strings.Contains(res.body, "Confirm your e-mail address") {
		t.Fatalf("unverified sign-in: %d\n%.1500s", res.StatusCode, res.body)
	}
	resend := formTo(t, p.base, res.body, "/account/verify/resend")
	if resend.fields.Get("email") != "linus@example.com" || resend.fields.Get("client_id") != clientID {
		t.Fatalf("the resend form carries %v", resend.fields)
	}
	if res := b.postForm(resend.action, resend.fields); res.StatusCode != http.StatusOK || !strings.Contains(res.body, "Check your mail") {
		t.Fatalf("resend: %d\n%.800s", res.StatusCode, res.body)
	}
	second := mailLink(t, mp, "linus@example.com", "/account/verify", 2)
	if second == first {
		t.Fatal("the resent link is the first one")
	}

	// Signed in to a client that does not require it, the browser's session does not reach the one that
	// does: prompt=none is interaction_required, without it the page refuses and offers the link.
	open := strings.Replace(p.authorizeURL("state-verify-3", oauth2.GenerateVerifier()), "client_id="+clientID, "client_id=open", 1)
	page = b.get(open)
	if res := b.signIn(p.base, page.body, "linus@example.com", "a sign-up password"); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in to a client that does not require a verified address: %d", res.StatusCode)
	}
	res = b.get(p.authorizeURL("state-verify-4", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("prompt", "none")))
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || !strings.Contains(loc, "error=interaction_required") {
		t.Fatalf("prompt=none with an unverified session: %d %s", res.StatusCode, loc)
	}
	if res := b.get(p.authorizeURL("state-verify-5", oauth2.GenerateVerifier())); res.StatusCode != http.StatusForbidden || !strings.Contains(res.body, `id="resend"`) {
		t.Fatalf("an unverified session at a client that requires it: %d\n%.800s", res.StatusCode, res.body)
	}

	// A tampered link is not valid; the link works once.
	tampered := tamperedLink(first)
	if res := b.get(tampered); res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, "This link is not valid") {
		t.Fatalf("tampered link: %d\n%.800s", res.StatusCode, res.body)
	}
	if res := followVerifyLink(t, b, p.base, first, "confirm"); res.StatusCode != http.StatusOK || !strings.Contains(res.body, "is confirmed") {
		t.Fatalf("the link: %d\n%.800s", res.StatusCode, res.body)
	}
	if res := b.get(first); res.StatusCode != http.StatusGone || !strings.Contains(res.body, "already used") {
		t.Fatalf("the link again: %d\n%.800s", res.StatusCode, res.body)
	}
	clock.t.Add(int64(25 * time.Hour / time.Second))
	if res := b.get(second); res.StatusCode != http.StatusGone || !strings.Contains(res.body, "has expired") {
		t.Fatalf("an expired link: %d\n%.800s", res.StatusCode, res.body)
	}

	// Verified: the client signs the person in, with email_verified true.
	tk, _ := p.fullSignIn("linus@example.com", "a sign-up password")
	if v := claimsOf(t, tk.IDToken)["email_verified"]; v != true {
		t.Fatalf("ID token email_verified = %v", v)
	}
	if v := p.userinfo(tk.AccessToken)["email_verified"]; v != true {
		t.Fatalf("userinfo email_verified = %v", v)
	}
	got := strings.Join(kindsOf(t, p, audit.VerificationSent, audit.EmailVerified, audit.SignIn), "\n")
	// The refused links name nobody: logged, not stored (D52).
	want := strings.Join([]string{"email.verification_sent success", "signin failure unverified", "email.verification_sent success",
		"signin success", "signin failure unverified", "email.verified success", "signin success"}, "\n")
	if got != want {
		t.Fatalf("audit trail:\n%s\nwant:\n%s", got, want)
	}
}

// Asking for a verification link again answers an address without an account, an unverified one and a
// verified one alike (no enumeration); only the unverified one gets a mail; past the address's budget
// the answer is 429 with Retry-After and nothing is sent.
func TestVerification_ResendSameAnswerAndThrottled(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	p := startProvider(t, setup{mail: mp, mutate: func(c *config.Config) { c.Auth.Throttle.MailsPerAddress = 2 }})
	p.unverifiedUser("grace@example.com", testPassword)
	p.user("ada@example.com", testPassword) // verified
	b := newBrowser(t)
	page := b.get(p.base + "/account/verify?token=x") // the invalid link's page offers the form
	if page.StatusCode != http.StatusBadRequest {
		t.Fatalf("garbage token: %d", page.StatusCode)
	}
	form := formTo(t, p.base, page.body, "/account/verify/resend")
	answer := func(email string) response {
		f := pageForm{action: form.action, fields: url.Values{"csrf_token": {form.fields.Get("csrf_token")}, "email": {email}}}
		return b.postForm(f.action, f.fields)
	}
	bodies := map[string]string{}
	for _, email := range []string{"nobody@example.com", "grace@example.com", "ada@example.com"} {
		res := answer(email)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", email, res.StatusCode)
		}
		bodies[email] = strings.ReplaceAll(res.body, email, "ADDRESS")
	}
	if bodies["nobody@example.com"] != bodies["grace@example.com"] || bodies["grace@example.com"] != bodies["ada@example.com"] {
		t.Fatalf("the answers differ:\n%s\n---\n%s", bodies["nobody@example.com"], bodies["grace@example.com"])
	}
	mailLink(t, mp, "grace@example.com", "/account/verify", 1)
	answer("grace@example.com")
	mp.WaitTo(t, "grace@example.com", 2, 30*time.Second)
	// Past the address's budget the answer stays the same (a 429 would let anyone keep the address's
	// owner from asking, D51); only the mail is dropped.
	res := answer("grace@example.com")
	if res.StatusCode != http.StatusOK || strings.ReplaceAll(res.body, "grace@example.com", "ADDRESS") != bodies["grace@example.com"] {
		t.Fatalf("past the budget: %d\n%.800s", res.StatusCode, res.body)
	}
	for _, addr := range []string{"nobody@example.com", "ada@example.com"} {
		if n := len(mp.To(t, addr)); n != 0 {
			t.Fatalf("%d mail(s) to %s", n, addr)
		}
	}
	got := strings.Join(kindsOf(t, p, audit.VerificationSent), "\n")
	// An unknown address and a mail dropped past the budget name nobody: logged, not stored (D52).
	want := "email.verification_sent success\nemail.verification_sent failure already_verified\nemail.verification_sent success"
	if got != want || len(mp.To(t, "grace@example.com")) != 2 {
		t.Fatalf("audit trail:\n%s\nwant:\n%s", got, want)
	}
}

// Password reset over HTTP against Mailpit: "Forgot password?" on the sign-in page, the same answer for
// every address, a link by mail to the account only; the link's form refuses a password outside the
// policy (and still works), sets a good one, ends every grant and session of the user, and the user is
// told by mail. The link then is used (410); a tampered one is 400, one older than its minutes 410; a
// link sent before a password change is void. Throttled per address and per client address.
func TestPasswordReset_LinkFromTheMail_SignsOutEverywhere(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	clock := newTestClock()
	p := startProvider(t, setup{mail: mp, now: clock.now, mutate: func(c *config.Config) {
		c.TrustedProxies = []string{"127.0.0.1"}
		c.Auth.Throttle.MailsPerAddress, c.Auth.Throttle.MailsPerIP = 4, 6
		newBrowserMailsOff(c)
	}})
	p.user(testEmail, testPassword)
	tk, signedIn := p.fullSignIn(testEmail, testPassword)

	b := newBrowser(t)
	page := b.get(p.authorizeURL("state-reset-1", oauth2.GenerateVerifier()))
	href := regexpFind(t, page.body, `<a href="([^"]+)" id="forgot">`)
	forgotPage := b.get(p.base + htmlUnescape(href))
	if forgotPage.StatusCode != http.StatusOK || !strings.Contains(forgotPage.body, "Back to sign-in") {
		t.Fatalf("forgot page: %d\n%.1000s", forgotPage.StatusCode, forgotPage.body)
	}
	form := formTo(t, p.base, forgotPage.body, "/account/forgot")
	if form.fields.Get("client_id") != clientID || !strings.HasPrefix(form.fields.Get("return"), "/oauth2/authorize?") {
		t.Fatalf("the forgot form carries %v", form.fields)
	}
	ask := func(email, from string) response {
		f := url.Values{}
		for k, v := range form.fields {
			f[k] = v
		}
		f.Set("email", email)
		return b.postForm(form.action, f, "X-Forwarded-For", from)
	}
	known, unknown := ask(testEmail, "203.0.113.1"), ask("nobody@example.com", "203.0.113.1")
	if known.StatusCode != http.StatusOK || strings.ReplaceAll(known.body, testEmail, "X") != strings.ReplaceAll(unknown.body, "nobody@example.com", "X") {
		t.Fatalf("the answers differ: %d %d\n%s\n---\n%s", known.StatusCode, unknown.StatusCode, known.body, unknown.body)
	}
	first := mailLink(t, mp, testEmail, "/account/reset", 1)

	// The link's form; a short password is refused and the link still works.
	resetPage := b.get(first)
	if resetPage.StatusCode != http.StatusOK || !strings.Contains(resetPage.body, "Choose a new password") {
		t.Fatalf("reset page: %d\n%.800s", resetPage.StatusCode, resetPage.body)
	}
	reset := formTo(t, p.base, resetPage.body, "/account/reset")
	reset.fields.Set("new_password", "short")
	if res := b.postForm(reset.action, reset.fields); res.StatusCode != http.StatusBadRequest || !strings.Contains(res.body, "Use 12 to 256 characters") {
		t.Fatalf("a short password: %d\n%.800s", res.StatusCode, res.body)
	}
	reset.fields.Set("new_password", "a brand new password")
	if res := b.postForm(reset.action, reset.fields); res.StatusCode != http.StatusOK || !strings.Contains(res.body, "Your password was changed") {
		t.Fatalf("the new password: %d\n%.800s", res.StatusCode, res.body)
	}
	// Signed out everywhere: the grant's refresh token and the browser's session end.
	if r := p.refresh(tk.RefreshToken); r.status == http.StatusOK {
		t.Fatal("the grant from before the reset still refreshes")
	}
	if res := signedIn.get(p.authorizeURL("state-reset-2", oauth2.GenerateVerifier())); res.StatusCode != http.StatusOK {
		t.Fatalf("the browser signed in before the reset was not asked to sign in again: %d", res.StatusCode)
	}
	msgs := mp.WaitTo(t, testEmail, 2, 30*time.Second)
	if !strings.Contains(msgs[0].Subject, "was changed") {
		t.Fatalf("the newest mail is %q", msgs[0].Subject)
	}
	p.fullSignIn(testEmail, "a brand new password")
	if res := b.postForm(reset.action, reset.fields); res.StatusCode != http.StatusGone || !strings.Contains(res.body, "already used") {
		t.Fatalf("the link again: %d\n%.800s", res.StatusCode, res.body)
	}
	if res := b.get(tamperedLink(first)); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("a tampered link: %d", res.StatusCode)
	}

	// A link sent before a password change is void; one older than its minutes has expired.
	ask(testEmail, "203.0.113.2")
	before := mailLink(t, mp, testEmail, "/account/reset", 3)
	if _, err := p.svc.Users().SetPassword(t.Context(), testEmail, "changed by an operator"); err != nil {
		t.Fatal(err)
	}
	if res := b.get(before); res.StatusCode != http.StatusGone {
		t.Fatalf("a link from before a password change: %d", res.StatusCode)
	}
	ask(testEmail, "203.0.113.2")
	late := mailLink(t, mp, testEmail, "/account/reset", 4)
	clock.t.Add(int64(16 * time.Minute / time.Second))
	if res := b.get(late); res.StatusCode != http.StatusGone || !strings.Contains(res.body, "has expired") {
		t.Fatalf("a link after 16 minutes: %d\n%.600s", res.StatusCode, res.body)
	}

	// Throttled: the address's fifth request is answered alike and sends nothing (D51); a client
	// address's seventh is 429.
	if res := ask(testEmail, "203.0.113.3"); res.StatusCode != http.StatusOK {
		t.Fatalf("the address's fourth request: %d", res.StatusCode)
	}
	mp.WaitTo(t, testEmail, 5, 30*time.Second)
	if res := ask(testEmail, "203.0.113.3"); res.StatusCode != http.StatusOK || !strings.Contains(res.body, "Check your mail") {
		t.Fatalf("the address's fifth request: %d", res.StatusCode)
	}
	for i := range 6 {
		if res := ask(fmt.Sprintf("someone%d@example.com", i), "198.51.100.7"); res.StatusCode != http.StatusOK {
			t.Fatalf("request %d from one client address: %d", i, res.StatusCode)
		}
	}
	if res := ask("someone-else@example.com", "198.51.100.7"); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a client address's seventh request: %d", res.StatusCode)
	}
	got := strings.Join(kindsOf(t, p, audit.ResetRequested, audit.PasswordReset), "\n")
	// Kept: what names the account. A refusal that names nobody (an unknown address, a refused link, a
	// mail dropped past the address's budget) is logged, not stored (D52).
	for _, want := range []string{"password.reset_requested success", "password.reset failure weak_password", "password.reset success"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in the audit trail:\n%s", want, got)
		}
	}
	for _, unkept := range []string{"failure unknown_account", "failure used", "failure invalid", "failure expired", "failure throttled"} {
		if strings.Contains(got, unkept) {
			t.Errorf("%q in the audit trail: a refusal naming nobody is not stored\n%s", unkept, got)
		}
	}
}

func regexpFind(t *testing.T, body, expr string) string {
	t.Helper()
	m := regexp.MustCompile(expr).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no %s on the page:\n%.1500s", expr, body)
	}
	return m[1]
}

// The journeys' mails carry the platform's branding: its product name (the reset link of no client),
// its logo when it is https, and its accent colour on the button.
func TestPasswordReset_MailCarriesTheBranding(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	p := startProvider(t, setup{mail: mp, mutate: func(c *config.Config) {
		c.Auth.Branding = config.Branding{ProductName: "Acme ID", LogoURL: "https://cdn.acme.example/logo.png", AccentColor: "#0a7d45"}
	}})
	p.user(testEmail, testPassword)
	b := newBrowser(t)
	form := formTo(t, p.base, b.get(p.base+"/account/forgot").body, "/account/forgot")
	form.fields.Set("email", testEmail)
	if res := b.postForm(form.action, form.fields); res.StatusCode != http.StatusOK {
		t.Fatalf("forgot: %d\n%.800s", res.StatusCode, res.body)
	}
	m := mp.Get(t, mp.WaitTo(t, testEmail, 1, 30*time.Second)[0].ID)
	for _, want := range []string{`src="https://cdn.acme.example/logo.png"`, `alt="Acme ID"`, "background:#0a7d45"} {
		if !strings.Contains(m.HTML, want) {
			t.Errorf("the mail's HTML has no %s:\n%s", want, m.HTML)
		}
	}
	if !strings.Contains(m.Subject+m.Text, "Acme ID") {
		t.Errorf("the mail does not name the product: %q\n%s", m.Subject, m.Text)
	}
}

// The sign-up mails (a new address's and a taken one's) carry the same branding as the journeys' mails:
// before, they had the application's name but neither the logo nor the accent colour.
func TestSignup_MailsCarryTheBranding(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	p := startProvider(t, setup{mail: mp, mutate: func(c *config.Config) {
		c.Auth.SelfSignup = true
		c.Auth.Branding = config.Branding{ProductName: "Acme ID", LogoURL: "https://cdn.acme.example/logo.png", AccentColor: "#0a7d45"}
	}})
	p.user("taken@example.com", testPassword)
	for _, email := range []string{"grace@example.com", "taken@example.com"} {
		b := newBrowser(t)
		f := forms(t, p.base, b.get(p.authorizeURL("state-signup", oauth2.GenerateVerifier())).body)[2]
		f.fields.Set("name", "Grace Hopper")
		f.fields.Set("email", email)
		f.fields.Set("password", "a long enough password")
		if res := b.postForm(f.action, f.fields); res.StatusCode != http.StatusOK {
			t.Fatalf("sign-up of %s: %d\n%.800s", email, res.StatusCode, res.body)
		}
		m := mp.Latest(t, email, 30*time.Second)
		for _, want := range []string{`src="https://cdn.acme.example/logo.png"`, "background:#0a7d45"} {
			if !strings.Contains(m.HTML, want) {
				t.Errorf("the sign-up mail to %s has no %s:\n%s", email, want, m.HTML)
			}
		}
	}
}
