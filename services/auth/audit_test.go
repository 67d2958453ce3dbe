package auth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/platform/config"
)

// fromClient sets the headers a client behind the trusted proxy arrives with: the proxy's
// X-Forwarded-For naming it, and its user agent.
type fromClient struct {
	addr, ua string
}

func (f fromClient) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Forwarded-For", f.addr)
	r.Header.Set("User-Agent", f.ua)
	return http.DefaultTransport.RoundTrip(r)
}

// postAs posts a form to the provider as the client f (token, revoke, introspect).
func postAs(t *testing.T, f fromClient, u string, form url.Values, basicUser, basicPassword string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basicUser != "" {
		req.SetBasicAuth(basicUser, basicPassword)
	}
	res, err := (&http.Client{Transport: f}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// trail flushes the provider's audit queue and returns every stored event, oldest first.
func trail(t *testing.T, p *provider) []audit.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.svc.Audit().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	evs, err := audit.NewStore(p.rdb, nil).Query(ctx, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// Every security-relevant action of the provider leaves one structured event in Redis and in the log's
// audit stream, naming the user, the client, the client's address (behind the proxy, the right-most
// untrusted hop) and its user agent, with the reason the person is not told, and never a secret.
func TestAudit_EverySecurityActionLeavesAnEvent(t *testing.T) {
	logs := &testproc.Buffer{}
	confidential := withConfidentialClient(t)
	p := startProvider(t, setup{logs: logs, mutate: func(c *config.Config) {
		confidential(c)
		c.TrustedProxies = []string{"127.0.0.1"}
		c.Auth.SelfSignup = true
		c.Auth.Throttle = config.Throttle{AccountFailures: 3, IPFailures: 100, Window: config.Duration(time.Minute)}
	}})
	ada := p.user(testEmail, testPassword)
	grace := p.user("grace@example.com", testPassword)
	const addr, ua = "203.0.113.7", "AuditTest/1.0 (X11)"
	client := fromClient{"198.51.100.1, " + addr, ua} // a forged left-most hop, then the proxy's
	b := newBrowser(t)
	b.c.Transport = client
	var secrets []string

	verifier := oauth2.GenerateVerifier()
	page := b.get(p.authorizeURL("state-audit-1", verifier))
	if res := b.signIn(p.base, page.body, testEmail, "wrong password one"); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d", res.StatusCode)
	}
	b.signIn(p.base, page.body, "nobody@example.com", "wrong password two")
	code, _ := codeFrom(t, b.signIn(p.base, page.body, testEmail, testPassword), p.redirect)
	exchange := func(code, verifier string) tokens {
		st, body := postAs(t, client, p.base+"/oauth2/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"redirect_uri": {p.redirect}, "client_id": {clientID}, "code_verifier": {verifier}}, "", "")
		var tk tokens
		_ = json.Unmarshal([]byte(body), &tk)
		tk.status = st
		return tk
	}
	refresh := func(rt string) tokens {
		st, body := postAs(t, client, p.base+"/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {clientID}}, "", "")
		var tk tokens
		_ = json.Unmarshal([]byte(body), &tk)
		tk.status = st
		return tk
	}
	a := exchange(code, verifier)
	if a.status != http.StatusOK || exchange(code, verifier).status != http.StatusBadRequest {
		t.Fatal("exchange, then its replay")
	}
	secrets = append(secrets, code, verifier, a.AccessToken, a.RefreshToken, a.IDToken)

	// Grant B: refreshed, then its first refresh token reused.
	verifier = oauth2.GenerateVerifier()
	code, _ = codeFrom(t, b.get(p.authorizeURL("state-audit-2", verifier)), p.redirect) // the session skips the form
	bt := exchange(code, verifier)
	b2 := refresh(bt.RefreshToken)
	if b2.status != http.StatusOK || refresh(bt.RefreshToken).status != http.StatusBadRequest {
		t.Fatal("refresh, then the reuse of its first token")
	}
	secrets = append(secrets, code, bt.RefreshToken, b2.RefreshToken, b2.AccessToken)

	// Grant C: introspected by the resource server, revoked, introspected again.
	verifier = oauth2.GenerateVerifier()
	code, _ = codeFrom(t, b.get(p.authorizeURL("state-audit-3", verifier)), p.redirect)
	c := exchange(code, verifier)
	secrets = append(secrets, code, c.AccessToken, c.RefreshToken, c.IDToken, rsSecret)
	introspect := func() string {
		_, body := postAs(t, client, p.base+"/oauth2/introspect", url.Values{"token": {c.AccessToken}}, "api", rsSecret)
		return body
	}
	if !strings.Contains(introspect(), `"active":true`) {
		t.Fatal("introspection of a live token")
	}
	postAs(t, client, p.base+"/oauth2/introspect", url.Values{"token": {c.AccessToken}}, clientID, "") // a public client: refused
	if st, _ := postAs(t, client, p.base+"/oauth2/revoke", url.Values{"token": {c.RefreshToken}, "client_id": {clientID}}, "", ""); st != http.StatusOK {
		t.Fatalf("revoke: %d", st)
	}
	postAs(t, client, p.base+"/oauth2/revoke", url.Values{"token": {"not-a-token-at-all"}, "client_id": {clientID}}, "", "")
	if !strings.Contains(introspect(), `"active":false`) {
		t.Fatal("introspection of a revoked token")
	}

	// Logout of this browser, with the ID token as hint.
	if res := b.get(p.base + "/oauth2/logout?" + url.Values{"id_token_hint": {c.IDToken}, "post_logout_redirect_uri": {p.base + "/bye"}}.Encode()); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", res.StatusCode)
	}

	// Grace's account reaches its budget: the third failure is a lockout, the fourth is throttled.
	page = b.get(p.authorizeURL("state-audit-4", oauth2.GenerateVerifier()))
	for i := range 4 {
		b.signIn(p.base, page.body, "grace@example.com", fmt.Sprint("guess number ", i))
	}
	// Sign-up: a new address, and a taken one.
	fs := forms(t, p.base, page.body)
	signup := func(email string) {
		f := fs[len(fs)-1]
		f.fields.Set("email", email)
		f.fields.Set("password", "a sign-up password")
		b.postForm(f.action, f.fields)
	}
	signup("linus@example.com")
	page = b.get(p.authorizeURL("state-audit-5", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("prompt", "login")))
	fs = forms(t, p.base, page.body)
	signup("grace@example.com")
	for _, ck := range b.c.Jar.Cookies(mustURL(p.base)) {
		secrets = append(secrets, ck.Value)
	}
	secrets = append(secrets, testPassword, "wrong password one", "wrong password two", "guess number 0", "a sign-up password")

	evs := trail(t, p)
	linus, _ := p.svc.Users().ByEmail(t.Context(), "linus@example.com")
	if linus == nil {
		t.Fatal("sign-up did not create the account")
	}
	type want struct {
		kind    audit.Kind
		outcome audit.Outcome
		reason  string
		user    string
		client  string
		stored  bool // a refusal that names no user is logged, not stored (D52)
	}
	all := []want{
		{audit.SignIn, audit.Failure, "bad_password", ada, clientID, true},
		{audit.SignIn, audit.Failure, "unknown_account", "", clientID, false},
		{audit.SignIn, audit.Success, "", ada, clientID, true},
		{audit.CodeReplay, audit.Failure, "", ada, clientID, true},
		{audit.RefreshReuse, audit.Failure, "", ada, clientID, true},
		{audit.Introspection, audit.Success, "", ada, "api", true},
		{audit.Introspection, audit.Failure, "unauthorized", "", clientID, false},
		{audit.TokenRevoked, audit.Success, "", ada, clientID, true},
		{audit.TokenRevoked, audit.Failure, "unknown_token", "", clientID, false},
		{audit.Introspection, audit.Failure, "inactive", "", "api", false},
		{audit.Logout, audit.Success, "", ada, clientID, true},
		{audit.SignIn, audit.Failure, "bad_password", grace, clientID, true},
		{audit.SignIn, audit.Failure, "bad_password", grace, clientID, true},
		{audit.SignIn, audit.Failure, "bad_password", grace, clientID, true},
		{audit.Lockout, audit.Failure, "", grace, clientID, true},
		{audit.SignIn, audit.Failure, "throttled", "", clientID, false},
		{audit.SignUp, audit.Success, "", linus.ID, clientID, true},
		{audit.VerificationSent, audit.Success, "", linus.ID, clientID, true}, // the sign-up's mail carries the link
		{audit.SignUp, audit.Failure, "taken", "", clientID, false},
	}
	var wants []want
	for _, w := range all {
		if w.stored {
			wants = append(wants, w)
		}
	}
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%s %s %s user=%s client=%s", e.Kind, e.Outcome, e.Reason, e.User, e.Client))
	}
	if len(evs) != len(wants) {
		t.Fatalf("%d events, want %d:\n%s", len(evs), len(wants), strings.Join(got, "\n"))
	}
	for i, w := range wants {
		e := evs[i]
		if e.Kind != w.kind || e.Outcome != w.outcome || (w.reason != "" && e.Reason != w.reason) || e.User != w.user || e.Client != w.client {
			t.Errorf("event %d: %s, want %+v", i, got[i], w)
		}
		if e.Addr != addr || e.UserAgent != ua || e.Time.IsZero() {
			t.Errorf("event %d (%s): addr %q ua %q time %v, want the client's address and user agent", i, e.Kind, e.Addr, e.UserAgent, e.Time)
		}
	}
	for _, i := range []int{2, 3, 5} { // replay, reuse and revocation name the grant
		if evs[i].Grant == "" {
			t.Errorf("event %d (%s) names no grant", i, evs[i].Kind)
		}
	}
	if evs[6].Detail["grants"] != "3" {
		t.Errorf("logout detail %v, want the 3 grants of the session", evs[6].Detail)
	}

	// The log has every event, stored or not, in its own stream.
	log := logs.String()
	if n := strings.Count(log, `"msg":"audit","stream":"audit"`); n != len(all) {
		t.Errorf("%d audit lines in the log, want %d", n, len(all))
	}
	if !strings.Contains(log, `"msg":"token replay detected; the grant is revoked","kind":"code","user":"`+ada+`","client":"app","addr":"`+addr+`"`) {
		t.Errorf("the replay warning does not name the user, client and address:\n%s", log)
	}
	stored, _ := json.Marshal(evs)
	for _, where := range []struct{ name, text string }{{"the stored trail", string(stored)}, {"the log", log}} {
		if s := findSecret(where.text, secrets); s != "" {
			t.Fatalf("%s carries a secret (%.12s…)", where.name, s)
		}
	}
	metrics := b.get(p.base + "/metrics").body
	for _, m := range []string{
		`formsservice_audit_events_total{kind="signin",outcome="failure"} 6`,
		`formsservice_audit_events_total{kind="signin",outcome="success"} 1`,
		`formsservice_audit_events_total{kind="token.code_replay",outcome="failure"} 1`,
		`formsservice_audit_events_total{kind="user.deleted",outcome="success"} 0`,
	} {
		if !strings.Contains(metrics, m) {
			t.Errorf("metrics lack %s", m)
		}
	}
}

// findSecret returns the first secret (or its secret part: what follows an opaque token's family, a
// JWT's signature) found in text.
func findSecret(text string, secrets []string) string {
	for _, s := range secrets {
		parts := []string{s}
		if _, rest, ok := strings.Cut(s, "~"); ok {
			parts = append(parts, rest)
		}
		if i := strings.LastIndexByte(s, '.'); i > 0 && strings.Count(s, ".") == 2 {
			parts = append(parts, s[i+1:])
		}
		for _, part := range parts {
			if len(part) >= 8 && strings.Contains(text, part) {
				return part
			}
		}
	}
	return ""
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// auditCounted is formsservice_audit_events_total{kind,outcome} as p's /metrics says: every event,
// also a refusal naming no user, which is logged (sampled) but not stored (D52).
func auditCounted(t *testing.T, p *provider, kind audit.Kind, outcome audit.Outcome) int {
	t.Helper()
	res, err := http.Get(p.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	re := regexp.MustCompile(`(?m)^formsservice_audit_events_total\{kind="` + regexp.QuoteMeta(string(kind)) + `",outcome="` + string(outcome) + `"\} (\d+)$`)
	m := re.FindSubmatch(body)
	if m == nil {
		t.Fatalf("no formsservice_audit_events_total{kind=%q,outcome=%q} at /metrics", kind, outcome)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
