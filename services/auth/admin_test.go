package auth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v3"
	josejwt "github.com/go-jose/go-jose/v3/jwt"
	"github.com/google/uuid"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/services/auth"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/platform/config"
)

// The machine clients of these tests: robot authenticates with a secret, signer with a private_key_jwt
// assertion; webapp is confidential but allowed only the code grant; app (the harness's) is public.
const (
	robot       = "robot"
	robotSecret = "robot-secret-0123456789abcdef"
	signer      = "signer"
	webapp      = "webapp"
)

// machines is a provider with the machine clients, the signer's key and a clock the test moves.
type machines struct {
	*provider
	key   *ecdsa.PrivateKey
	clock *atomic.Int64 // Unix seconds of the provider's clock
}

func startMachines(t *testing.T) *machines {
	t.Helper()
	dir := t.TempDir()
	secret := filepath.Join(dir, "robot")
	if err := os.WriteFile(secret, []byte(robotSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "signer-1", Algorithm: "ES256"}}})
	clock := &atomic.Int64{}
	clock.Store(time.Now().Unix())
	p := startProvider(t, setup{now: func() time.Time { return time.Unix(clock.Load(), 0) }, mutate: func(c *config.Config) {
		admin := c.PublicURL + "/admin"
		app := &c.Auth.Clients[0]
		app.Scopes = []string{"openid", "email", "offline_access", "users:read"}
		app.Audiences = []string{admin, testAPI}
		c.Auth.Clients = append(c.Auth.Clients,
			config.OAuthClient{ClientID: robot, SecretFile: secret, GrantTypes: []string{"client_credentials"},
				Scopes: []string{"users:read", "forms:read", "reports"}, Audiences: []string{admin, testAPI}},
			config.OAuthClient{ClientID: signer, TokenEndpointAuthMethod: "private_key_jwt", JWKS: jwks,
				GrantTypes: []string{"client_credentials"}, Scopes: []string{"audit:read"}, Audiences: []string{admin}},
			config.OAuthClient{ClientID: webapp, SecretFile: secret, RedirectURIs: []string{c.PublicURL + "/web-cb"}, Scopes: []string{"users:read"},
				Audiences: []string{admin}},
			config.OAuthClient{ClientID: "api", SecretFile: secret, RedirectURIs: []string{c.PublicURL + "/api-cb"}, Resources: []string{testAPI}},
		)
	}})
	return &machines{provider: p, key: key, clock: clock}
}

// grant asks the token endpoint for a client_credentials token: with HTTP Basic when secret is set.
func (m *machines) grant(id, secret string, form url.Values) (int, tokenAnswer) {
	m.t.Helper()
	form.Set("grant_type", "client_credentials")
	req, _ := http.NewRequest(http.MethodPost, m.base+"/oauth2/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if secret != "" {
		req.SetBasicAuth(id, secret)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer res.Body.Close()
	var a tokenAnswer
	if err := json.NewDecoder(res.Body).Decode(&a); err != nil {
		m.t.Fatalf("token answer (%d): %v", res.StatusCode, err)
	}
	return res.StatusCode, a
}

type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	TokenType    string `json:"token_type"`
	Scope        string `json:"scope"`
	Error        string `json:"error"`
	Description  string `json:"error_description"`
}

// assertion is a private_key_jwt client assertion of the signer (RFC 7523 3) with jti, for the token
// endpoint.
func (m *machines) assertion(jti string) string { return m.assertionFor(jti, m.base+"/oauth2/token") }

// assertionFor is an assertion for the audience aud.
func (m *machines) assertionFor(jti, aud string) string {
	m.t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: m.key}, (&jose.SignerOptions{}).WithHeader("kid", "signer-1"))
	if err != nil {
		m.t.Fatal(err)
	}
	now := time.Now()
	tok, err := josejwt.Signed(sig).Claims(josejwt.Claims{Issuer: signer, Subject: signer, Audience: josejwt.Audience{aud},
		ID: jti, IssuedAt: josejwt.NewNumericDate(now), Expiry: josejwt.NewNumericDate(now.Add(time.Minute))}).CompactSerialize()
	if err != nil {
		m.t.Fatal(err)
	}
	return tok
}

func assertionForm(assertion string, extra url.Values) url.Values {
	extra.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
	extra.Set("client_assertion", assertion)
	return extra
}

// adminAnswer is an answer of the admin API.
type adminAnswer struct {
	status      int
	challenge   string
	contentType string
	body        map[string]any
}

func (m *machines) whoami(token string) adminAnswer {
	m.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, m.base+"/admin/v1/whoami", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	a := adminAnswer{status: res.StatusCode, challenge: res.Header.Get("WWW-Authenticate"), contentType: res.Header.Get("Content-Type")}
	if err := json.Unmarshal(b, &a.body); err != nil {
		m.t.Fatalf("whoami (%d) answered no JSON: %q", res.StatusCode, b)
	}
	return a
}

// refused fails unless a is a refusal with status, the error code in WWW-Authenticate and an RFC 9457
// problem body.
func refused(t *testing.T, name string, a adminAnswer, status int, code string) {
	t.Helper()
	if a.status != status || !strings.Contains(a.challenge, `error="`+code+`"`) || !strings.HasPrefix(a.challenge, `Bearer realm="`) {
		t.Errorf("%s: %d, WWW-Authenticate %q; want %d with error=%q", name, a.status, a.challenge, status, code)
	}
	if a.contentType != "application/problem+json" || a.body["status"] != float64(status) || a.body["title"] == "" {
		t.Errorf("%s: body %v (%s), want an RFC 9457 problem", name, a.body, a.contentType)
	}
}

// A machine with a client secret gets a token of its own (no refresh token), for the admin API by
// RFC 8707 resource, and /admin/v1/whoami names it.
func TestAdmin_ClientCredentialsWithSecret_Whoami(t *testing.T) {
	m := startMachines(t)
	admin := m.base + "/admin"
	st, tk := m.grant(robot, robotSecret, url.Values{"scope": {"users:read"}, "resource": {admin}})
	if st != http.StatusOK || tk.AccessToken == "" || tk.RefreshToken != "" || tk.Scope != "users:read" {
		t.Fatalf("client_credentials: %d %+v; want a token with scope users:read and no refresh token", st, tk)
	}
	a := m.whoami(tk.AccessToken)
	if a.status != http.StatusOK || a.body["sub"] != robot || a.body["client_id"] != robot || a.body["machine"] != true {
		t.Fatalf("whoami: %d %v", a.status, a.body)
	}
	// Without resource the token is for every API of the client, as a code's is (audiences).
	if st, tk := m.grant(robot, robotSecret, url.Values{"scope": {"forms:read"}}); st != http.StatusOK || m.whoami(tk.AccessToken).status != http.StatusOK {
		t.Fatalf("client_credentials without resource: %d", st)
	}
	res := newBrowser(t).get(m.base + "/metrics")
	for _, want := range []string{`formsservice_auth_tokens_issued_total{grant_type="client_credentials"} 2`,
		`formsservice_auth_token_duration_seconds_count{grant_type="client_credentials",outcome="ok"} 2`} {
		if !strings.Contains(res.body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	var got []audit.Event
	for _, e := range trail(t, m.provider) {
		if e.Kind == audit.ClientCredentials {
			got = append(got, e)
		}
	}
	if len(got) != 2 || got[0].Outcome != audit.Success || got[0].Client != robot || got[0].Actor != audit.ActorClient || got[0].Grant == "" ||
		got[0].User != "" || got[0].Detail["scope"] != "users:read" || got[0].Detail["aud"] != admin {
		t.Fatalf("audit: %+v", got)
	}
}

// A machine with private_key_jwt gets its token with a signed assertion; the same assertion again (its
// jti) is refused, and so is one for another audience or signed by another key.
func TestAdmin_ClientCredentialsWithPrivateKeyJWT_ReplayRefused(t *testing.T) {
	m := startMachines(t)
	assertion := m.assertion(uuid.NewString())
	st, tk := m.grant(signer, "", assertionForm(assertion, url.Values{"scope": {"audit:read"}}))
	if st != http.StatusOK || tk.AccessToken == "" {
		t.Fatalf("private_key_jwt: %d %+v", st, tk)
	}
	if a := m.whoami(tk.AccessToken); a.status != http.StatusOK || a.body["sub"] != signer || a.body["machine"] != true {
		t.Fatalf("whoami: %d %v", a.status, a.body)
	}
	st, tk = m.grant(signer, "", assertionForm(assertion, url.Values{"scope": {"audit:read"}}))
	if st != http.StatusUnauthorized || tk.Error != "invalid_client" || !strings.Contains(tk.Description, "used before") {
		t.Fatalf("replayed assertion: %d %+v; want 401 invalid_client", st, tk)
	}
	// The issuer is an audience too (RFC 7523 3); another endpoint is not.
	if st, tk := m.grant(signer, "", assertionForm(m.assertionFor(uuid.NewString(), m.base), url.Values{"scope": {"audit:read"}})); st != http.StatusOK {
		t.Fatalf("assertion for the issuer: %d %+v", st, tk)
	}
	if st, tk := m.grant(signer, "", assertionForm(m.assertionFor(uuid.NewString(), m.base+"/oauth2/introspect"), url.Values{"scope": {"audit:read"}})); st != http.StatusUnauthorized || tk.Error != "invalid_client" {
		t.Fatalf("assertion for another endpoint: %d %+v", st, tk)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	m.key = other
	if st, tk := m.grant(signer, "", assertionForm(m.assertion(uuid.NewString()), url.Values{"scope": {"audit:read"}})); st != http.StatusUnauthorized || tk.Error != "invalid_client" {
		t.Fatalf("assertion signed by another key: %d %+v", st, tk)
	}
	// A secret is no credential of a private_key_jwt client.
	if st, tk := m.grant(signer, robotSecret, url.Values{"scope": {"audit:read"}}); st != http.StatusUnauthorized || tk.Error != "invalid_client" {
		t.Fatalf("secret for a private_key_jwt client: %d %+v", st, tk)
	}
	var reasons []string
	for _, e := range trail(t, m.provider) {
		if e.Kind == audit.ClientCredentials && e.Outcome == audit.Failure {
			reasons = append(reasons, e.Reason)
		}
	}
	if !slices.Contains(reasons, "assertion_replay") {
		t.Fatalf("audit failures %v, want assertion_replay among them", reasons)
	}
}

// Who may not use the grant, and what it may not ask for.
func TestAdmin_ClientCredentialsRefusals(t *testing.T) {
	m := startMachines(t)
	for name, c := range map[string]struct {
		id, secret string
		form       url.Values
		status     int
		code       string
	}{
		"a public client":              {clientID, "", url.Values{"client_id": {clientID}}, http.StatusBadRequest, "unauthorized_client"},
		"a client not allowed it":      {webapp, robotSecret, url.Values{"scope": {"users:read"}}, http.StatusBadRequest, "unauthorized_client"},
		"a wrong secret":               {robot, "not-the-secret-0123456789", url.Values{}, http.StatusUnauthorized, "invalid_client"},
		"a person's scope":             {robot, robotSecret, url.Values{"scope": {"openid users:read"}}, http.StatusBadRequest, "invalid_scope"},
		"a scope not the client's":     {robot, robotSecret, url.Values{"scope": {"audit:read"}}, http.StatusBadRequest, "invalid_scope"},
		"an API not the client's":      {robot, robotSecret, url.Values{"resource": {"https://elsewhere.example/"}}, http.StatusBadRequest, "invalid_target"},
		"an audience not the client's": {robot, robotSecret, url.Values{"audience": {"https://elsewhere.example/"}}, http.StatusBadRequest, "invalid_target"},
	} {
		if st, tk := m.grant(c.id, c.secret, c.form); st != c.status || tk.Error != c.code || tk.AccessToken != "" {
			t.Errorf("%s: %d %+v; want %d %s", name, st, tk, c.status, c.code)
		}
	}
}

// The admin API refuses, each with RFC 6750's answer: no token, a token for another API, a token
// without an admin scope, a person outside the admin group, an expired token, a revoked grant.
func TestAdmin_BearerRefusals(t *testing.T) {
	m := startMachines(t)
	admin := m.base + "/admin"

	a := m.whoami("")
	if a.status != http.StatusUnauthorized || a.challenge != `Bearer realm="`+admin+`"` || a.contentType != "application/problem+json" {
		t.Errorf("no token: %d %q %s; want 401 with the realm alone (RFC 6750 3.1)", a.status, a.challenge, a.contentType)
	}
	refused(t, "not a JWT", m.whoami("not-a-token"), http.StatusUnauthorized, "invalid_token")

	_, other := m.grant(robot, robotSecret, url.Values{"scope": {"users:read"}, "resource": {testAPI}})
	refused(t, "a token for another API", m.whoami(other.AccessToken), http.StatusUnauthorized, "invalid_token")

	_, noScope := m.grant(robot, robotSecret, url.Values{"scope": {"reports"}, "resource": {admin}})
	a = m.whoami(noScope.AccessToken)
	refused(t, "a token without an admin scope", a, http.StatusForbidden, "insufficient_scope")
	if !strings.Contains(a.challenge, `scope="forms:read forms:write users:read users:write audit:read"`) {
		t.Errorf("insufficient_scope names no scopes: %q", a.challenge)
	}

	_, revoked := m.grant(robot, robotSecret, url.Values{"scope": {"users:read"}, "resource": {admin}})
	if a := m.whoami(revoked.AccessToken); a.status != http.StatusOK {
		t.Fatalf("before revocation: %d %v", a.status, a.body)
	}
	req, _ := http.NewRequest(http.MethodPost, m.base+"/oauth2/revoke", strings.NewReader(url.Values{"token": {revoked.AccessToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(robot, robotSecret)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %v %v", err, res)
	}
	refused(t, "a revoked grant", m.whoami(revoked.AccessToken), http.StatusUnauthorized, "invalid_token")

	_, fresh := m.grant(robot, robotSecret, url.Values{"scope": {"users:read"}, "resource": {admin}})
	m.clock.Add(int64((15*time.Minute + time.Second) / time.Second)) // the access token lifetime, on the provider's clock
	a = m.whoami(fresh.AccessToken)
	refused(t, "an expired token", a, http.StatusUnauthorized, "invalid_token")
	if !strings.Contains(a.challenge, "expired") {
		t.Errorf("expired: %q", a.challenge)
	}
}

// A person's token needs the admin group as well as the scope; a sign-out everywhere ends it at once.
func TestAdmin_PersonNeedsTheAdminGroup(t *testing.T) {
	m := startMachines(t)
	admin := m.base + "/admin"
	id := m.user(testEmail, testPassword)
	b := newBrowser(t)
	verifier := oauth2.GenerateVerifier()
	page := b.get(m.authorizeURL("state-admin-0123", verifier, oauth2.SetAuthURLParam("scope", "openid users:read"), oauth2.SetAuthURLParam("resource", admin)))
	code, _ := codeFrom(t, b.signIn(m.base, page.body, testEmail, testPassword), m.redirect)
	tk := m.exchange(code, verifier)
	if tk.status != http.StatusOK {
		t.Fatalf("exchange: %d %s", tk.status, tk.Error)
	}
	a := m.whoami(tk.AccessToken)
	refused(t, "a user outside the admin group", a, http.StatusForbidden, "insufficient_scope")
	if !strings.Contains(a.body["detail"].(string), config.DefaultAdminGroup) {
		t.Errorf("the refusal does not name the group: %v", a.body)
	}
	if _, _, err := m.svc.Users().AddGroups(context.Background(), testEmail, []string{config.DefaultAdminGroup}); err != nil {
		t.Fatal(err)
	}
	a = m.whoami(tk.AccessToken)
	if a.status != http.StatusOK || a.body["sub"] != id || a.body["client_id"] != clientID || a.body["machine"] != false {
		t.Fatalf("a member of the admin group: %d %v", a.status, a.body)
	}
	if _, _, err := auth.SignOutEverywhere(context.Background(), m.rdb, m.cfg.Auth, id); err != nil {
		t.Fatal(err)
	}
	refused(t, "after a sign-out everywhere", m.whoami(tk.AccessToken), http.StatusUnauthorized, "invalid_token")
}

// A resource server's introspection sees a machine's token for its API as active, as the admin API
// does: one answer to "is it live" (bearer.Live).
func TestIntrospect_MachineTokenActive(t *testing.T) {
	m := startMachines(t)
	_, tk := m.grant(robot, robotSecret, url.Values{"scope": {"reports"}, "resource": {testAPI}})
	req, _ := http.NewRequest(http.MethodPost, m.base+"/oauth2/introspect", strings.NewReader(url.Values{"token": {tk.AccessToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("api", robotSecret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var got map[string]any
	_ = json.NewDecoder(res.Body).Decode(&got)
	if got["active"] != true || got["sub"] != robot || got["client_id"] != robot {
		t.Fatalf("introspection of a machine's token: %v", got)
	}
}

// Discovery advertises the grant, the assertion method and its algorithms.
func TestDiscovery_MachineClients(t *testing.T) {
	p := startProvider(t, setup{})
	res, err := http.Get(p.base + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var doc struct {
		Grants  []string `json:"grant_types_supported"`
		Methods []string `json:"token_endpoint_auth_methods_supported"`
		Algs    []string `json:"token_endpoint_auth_signing_alg_values_supported"`
	}
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(doc.Grants, []string{"authorization_code", "refresh_token", "client_credentials"}) ||
		!slices.Equal(doc.Methods, []string{"none", "client_secret_basic", "client_secret_post", "private_key_jwt"}) ||
		!slices.Equal(doc.Algs, []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}) {
		t.Fatalf("discovery: %+v", doc)
	}
}
