package auth_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Every action of the account journeys leaves an audit event that reads back from the trail, naming the
// user and the client (the account page's own for its actions), the address and the browser, and never
// a password, a code or a TOTP secret: a second factor set up (after a wrong code), the second step's
// wrong, replayed and throttled codes and the lockout, a code and a recovery code accepted and a
// recovery code spent twice, a client's requireMFA met by a user without a factor, by a password-only
// session and with prompt=none, new recovery codes, a password change refused (wrong, too short) and
// made, a session and a grant ended from the account page, and the factor turned off.
func TestAudit_AccountJourneys_EveryActionLeavesAnEvent(t *testing.T) {
	logs := &testproc.Buffer{}
	clock := newTestClock()
	p := startProvider(t, setup{now: clock.now, logs: logs, mutate: func(c *config.Config) {
		c.Auth.Clients = append(c.Auth.Clients, config.OAuthClient{ClientID: "strict", Name: "Strict App", RequireMFA: true,
			RedirectURIs: []string{c.PublicURL + "/cb"}})
	}})
	ada := p.user(testEmail, testPassword)
	grace := p.user("grace@example.com", testPassword)
	const account = "formsservice-account"
	secrets := []string{testPassword}

	// Ada sets up an app on her account page: a wrong code first.
	b := newBrowser(t)
	p.accountSignIn(b, testEmail, testPassword, nil)
	enrol := b.get(p.base + "/account/totp")
	f := forms(t, p.base, enrol.body)[0]
	f.fields.Set("code", "000000")
	if res := b.postForm(f.action, f.fields); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("a wrong set-up code: %d", res.StatusCode)
	}
	secret, codes := p.enrolTOTP(b, clock)
	secrets = append(secrets, secret)
	secrets = append(secrets, codes...)

	// The second step: a wrong code, the set-up's code again, then the next step's code.
	signIn := func(email string) (*browser, response) {
		c := newBrowser(t)
		page := c.get(p.authorizeURL("state-0123456789", oauth2.GenerateVerifier()))
		return c, c.signIn(p.base, page.body, email, testPassword)
	}
	c, step := signIn(testEmail)
	step = c.secondStep(p.base, step, "000000")
	step = c.secondStep(p.base, step, clock.code(t, secret))
	clock.nextStep()
	secrets = append(secrets, clock.code(t, secret))
	codeFrom(t, c.secondStep(p.base, step, clock.code(t, secret)), p.redirect)
	// A recovery code, then the same one again (the third wrong code: the next must wait 1 s), at once
	// another (throttled), and after the waits two more wrong codes, the last of which uses the budget up.
	d, step := signIn(testEmail)
	codeFrom(t, d.secondStep(p.base, step, codes[0]), p.redirect)
	e, step := signIn(testEmail)
	step = e.secondStep(p.base, step, codes[0])
	if step.StatusCode != http.StatusUnauthorized || step.Header.Get("Retry-After") != "1" {
		t.Fatalf("the third wrong code: %d Retry-After %q", step.StatusCode, step.Header.Get("Retry-After"))
	}
	if step = e.secondStep(p.base, step, "000000"); step.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a code at once after: %d", step.StatusCode)
	}
	clock.t.Add(1)
	step = e.secondStep(p.base, step, "000000")
	clock.t.Add(2)
	if step = e.secondStep(p.base, step, "000000"); step.StatusCode != http.StatusTooManyRequests || !strings.Contains(step.body, "Too many") && !strings.Contains(step.body, "Try again") {
		t.Fatalf("the fifth wrong code: %d\n%.400s", step.StatusCode, step.body)
	}

	// requireMFA: Grace has no app (sent to set one up), asks with prompt=none, then has one set up
	// elsewhere and is asked for a code on her password-only session (step-up).
	strict := p.oauth2Config()
	strict.ClientID = "strict"
	g := newBrowser(t)
	page := g.get(strict.AuthCodeURL("state-0123456789", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	if res := g.signIn(p.base, page.body, "grace@example.com", testPassword); !strings.HasPrefix(res.Header.Get("Location"), "/account/totp?") {
		t.Fatalf("grace without an app: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	none := g.get(strict.AuthCodeURL("state-0123456789", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), oauth2.SetAuthURLParam("prompt", "none")))
	if loc, _ := url.Parse(none.Header.Get("Location")); loc == nil || loc.Query().Get("error") != "login_required" {
		t.Fatalf("prompt=none: %d %s", none.StatusCode, none.Header.Get("Location"))
	}
	gs := newBrowser(t)
	p.accountSignIn(gs, "grace@example.com", testPassword, nil)
	graceSecret, graceCodes := p.enrolTOTP(gs, clock)
	secrets = append(append(secrets, graceSecret), graceCodes...)
	if step := g.get(strict.AuthCodeURL("state-0123456789", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))); !strings.Contains(step.body, `value="mfa"`) {
		t.Fatalf("step-up: %d", step.StatusCode)
	}

	// Ada's account page: new recovery codes (a wrong password first).
	csrf := forms(t, p.base, b.get(p.base+"/account").body)[0].fields.Get("csrf_token")
	post := func(path string, v url.Values) response {
		v.Set("csrf_token", csrf)
		return b.postForm(p.base+path, v)
	}
	if res := post("/account/mfa", url.Values{"action": {"recovery-codes"}, "password": {"not her password"}}); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("new codes with a wrong password: %d", res.StatusCode)
	}
	clock.t.Add(15 * 60) // past the code budget's window (the second step's wrong codes above used it up)
	clock.nextStep()
	secrets = append(secrets, clock.code(t, secret))
	if res := post("/account/mfa", url.Values{"action": {"recovery-codes"}, "password": {testPassword}, "code": {clock.code(t, secret)}}); res.StatusCode != http.StatusOK {
		t.Fatalf("new codes: %d\n%.800s", res.StatusCode, res.body)
	}
	// Her password: wrong, too short, then changed (every other session and grant ends).
	const newPassword = "a new password for ada"
	secrets = append(secrets, newPassword)
	if res := post("/account/password", url.Values{"current_password": {"not her password"}, "new_password": {newPassword}}); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong current password: %d", res.StatusCode)
	}
	if res := post("/account/password", url.Values{"current_password": {testPassword}, "new_password": {"short"}}); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("a short new password: %d", res.StatusCode)
	}
	if res := post("/account/password", url.Values{"current_password": {testPassword}, "new_password": {newPassword}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the change: %d", res.StatusCode)
	}
	// A new browser signs in to the app (with a code from her app) and gets a grant; her account page
	// ends its session (and the grant started in it), and then another grant.
	grantOf := func() {
		h := newBrowser(t)
		verifier := oauth2.GenerateVerifier()
		page := h.get(p.authorizeURL("state-0123456789", verifier))
		clock.t.Add(15 * 60) // past the code budget's window
		clock.nextStep()
		step := h.secondStep(p.base, h.signIn(p.base, page.body, testEmail, newPassword), clock.code(t, secret))
		code, _ := codeFrom(t, step, p.redirect)
		if tk := p.exchange(code, verifier); tk.status != http.StatusOK {
			t.Fatalf("exchange: %d", tk.status)
		}
	}
	grantOf()
	acct := b.get(p.base + "/account")
	csrf = forms(t, p.base, acct.body)[0].fields.Get("csrf_token")
	sessionIDs := regexp.MustCompile(`name="session" value="([^"]+)"`).FindAllStringSubmatch(acct.body, -1)
	sum := sha256.Sum256([]byte(sessionCookieValue(b, p.base))) // a session's ID on the page names its cookie's hash
	current := base64.RawURLEncoding.EncodeToString(sum[:])
	var other string
	for _, m := range sessionIDs {
		if m[1] != current {
			other = m[1]
		}
	}
	if len(sessionIDs) != 2 || other == "" || !strings.Contains(acct.body, `value="`+current+`"`) {
		t.Fatalf("sessions on the page: %v", sessionIDs)
	}
	if res := post("/account/sessions/end", url.Values{"session": {other}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("ending the other session: %d", res.StatusCode)
	}
	grantOf()
	grant := regexp.MustCompile(`name="grant" value="([^"]+)"`).FindStringSubmatch(b.get(p.base + "/account").body)
	if grant == nil {
		t.Fatal("no grant on the page")
	}
	if res := post("/account/grants/end", url.Values{"grant": {grant[1]}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("ending the grant: %d", res.StatusCode)
	}
	// The factor turned off.
	clock.nextStep()
	secrets = append(secrets, clock.code(t, secret))
	if res := post("/account/mfa", url.Values{"action": {"remove"}, "password": {newPassword}, "code": {clock.code(t, secret)}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("turning it off: %d\n%.800s", res.StatusCode, res.body)
	}

	wants := []struct {
		kind    audit.Kind
		outcome audit.Outcome
		reason  string
		user    string
		client  string
	}{
		{audit.MFAEnrolled, audit.Failure, "wrong_code", ada, account},
		{audit.MFAEnrolled, audit.Success, "", ada, account},
		{audit.SecondFactor, audit.Failure, "wrong_code", ada, clientID},
		{audit.SecondFactor, audit.Failure, "replayed_code", ada, clientID},
		{audit.SecondFactor, audit.Success, "", ada, clientID},
		{audit.RecoveryCodeUsed, audit.Success, "", ada, clientID},
		{audit.SecondFactor, audit.Failure, "wrong_recovery_code", ada, clientID},
		{audit.SecondFactor, audit.Failure, "throttled", ada, clientID},
		{audit.SecondFactor, audit.Failure, "wrong_code", ada, clientID},
		{audit.SecondFactor, audit.Failure, "wrong_code", ada, clientID},
		{audit.Lockout, audit.Failure, "code", ada, clientID},
		{audit.MFARequired, audit.Failure, "not_enrolled", grace, "strict"},
		{audit.MFARequired, audit.Failure, "prompt_none", grace, "strict"},
		{audit.MFAEnrolled, audit.Success, "", grace, account},
		{audit.MFARequired, audit.Failure, "step_up", grace, "strict"},
		{audit.RecoveryReplaced, audit.Failure, "wrong_password", ada, account},
		{audit.RecoveryReplaced, audit.Success, "", ada, account},
		{audit.PasswordChanged, audit.Failure, "wrong_password", ada, account},
		{audit.PasswordChanged, audit.Failure, "invalid", ada, account},
		{audit.PasswordChanged, audit.Success, "", ada, account},
		{audit.SecondFactor, audit.Success, "", ada, clientID},
		{audit.SessionEnded, audit.Success, "", ada, account},
		{audit.SecondFactor, audit.Success, "", ada, clientID},
		{audit.GrantEnded, audit.Success, "", ada, account},
		{audit.MFARemoved, audit.Success, "", ada, account},
	}
	ours := map[audit.Kind]bool{audit.Lockout: true}
	for _, w := range wants {
		ours[w.kind] = true
	}
	all := trail(t, p)
	var evs []audit.Event
	var got []string
	for _, e := range all {
		if ours[e.Kind] {
			evs = append(evs, e)
			got = append(got, fmt.Sprintf("%s %s %s user=%s client=%s %v", e.Kind, e.Outcome, e.Reason, e.User, e.Client, e.Detail))
		}
	}
	if len(evs) != len(wants) {
		t.Fatalf("%d events, want %d:\n%s", len(evs), len(wants), strings.Join(got, "\n"))
	}
	for i, w := range wants {
		e := evs[i]
		if e.Kind != w.kind || e.Outcome != w.outcome || e.Reason != w.reason || e.User != w.user || e.Client != w.client {
			t.Errorf("event %d: %s\nwant %+v", i, got[i], w)
		}
		if e.Addr == "" || e.UserAgent == "" || e.Time.IsZero() {
			t.Errorf("event %d (%s): addr %q user agent %q time %v", i, e.Kind, e.Addr, e.UserAgent, e.Time)
		}
	}
	for i, want := range map[int]map[string]string{
		4:  {"method": "totp", "amr": "pwd otp mfa"},
		5:  {"left": "9"},
		7:  {"budget": "code", "state": "slowed", "retryAfter": "1"},
		16: {"codes": "10"},
		19: {"grants": "2", "sessions": "3"}, // the browsers c and d (codes issued), b, c, d
		21: {"current": "false", "grants": "1"},
	} {
		for k, v := range want {
			if evs[i].Detail[k] != v {
				t.Errorf("event %d (%s) detail %v, want %s=%s", i, evs[i].Kind, evs[i].Detail, k, v)
			}
		}
	}
	if evs[23].Grant != grant[1] {
		t.Errorf("grant ended: %q, want %q", evs[23].Grant, grant[1])
	}
	stored, _ := json.Marshal(all)
	for _, where := range []struct{ name, text string }{{"the stored trail", string(stored)}, {"the log", logs.String()}} {
		if s := findSecret(where.text, secrets); s != "" {
			t.Fatalf("%s carries a secret (%.4s…)", where.name, s)
		}
	}
	if n := strings.Count(logs.String(), `"kind":"account.password_changed"`); n != 3 {
		t.Errorf("%d account.password_changed lines in the log's audit stream, want 3", n)
	}
}
