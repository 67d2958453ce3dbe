package auth_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/services/platform/config"
)

const rsSecret = "resource-server-secret-0123456789"

// withConfidentialClient registers "api", a confidential client (a resource server, or a server-side app).
func withConfidentialClient(t *testing.T) func(*config.Config) {
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte(rsSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(c *config.Config) {
		// The test app's tokens are for the API that "api" serves: "api" may introspect them.
		c.Auth.Clients[0].Audiences = []string{testAPI}
		c.Auth.Clients = append(c.Auth.Clients, config.OAuthClient{ClientID: "api", RedirectURIs: []string{c.PublicURL + "/api-cb"}, SecretFile: secretFile,
			Resources: []string{testAPI}})
	}
}

const testAPI = "https://api.example.test/"

// PKCE is required of every client, confidential ones too (RFC 9700 2.1.1).
func TestAuthorize_ConfidentialClientWithoutPKCE_Refused(t *testing.T) {
	p := startProvider(t, setup{mutate: withConfidentialClient(t)})
	conf := p.oauth2Config()
	conf.ClientID, conf.RedirectURL = "api", p.base+"/api-cb"
	authorizeError(t, newBrowser(t).get(conf.AuthCodeURL("state-conf-nopkce")), p.base+"/api-cb", "invalid_request", "state-conf-nopkce")
}

// prompt values the provider does not honour are refused before the page, and not advertised.
func TestAuthorize_UnsupportedPrompt_RefusedAndNotAdvertised(t *testing.T) {
	p := startProvider(t, setup{})
	for _, prompt := range []string{"consent", "select_account", "login consent"} {
		u := p.authorizeURL("state-prompt-x", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("prompt", prompt))
		authorizeError(t, newBrowser(t).get(u), p.redirect, "invalid_request", "state-prompt-x")
	}
	res, err := http.Get(p.base + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var doc struct {
		Prompts []string `json:"prompt_values_supported"`
	}
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	slices.Sort(doc.Prompts)
	if !slices.Equal(doc.Prompts, []string{"login", "none"}) {
		t.Fatalf("prompt_values_supported %v, want exactly login and none", doc.Prompts)
	}
}

// Introspection is for resource servers: a user's access token (as a bearer header or in the form) or a
// public client's ID is no credential for it.
func TestIntrospect_OnlyConfidentialClientCredentials(t *testing.T) {
	p := startProvider(t, setup{mutate: withConfidentialClient(t)})
	p.user(testEmail, testPassword)
	tk, _ := p.fullSignIn(testEmail, testPassword)
	other, _ := p.fullSignIn(testEmail, testPassword)
	introspect := func(form url.Values, set func(*http.Request)) int {
		req, _ := http.NewRequest(http.MethodPost, p.base+"/oauth2/introspect", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		set(req)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	token := url.Values{"token": {tk.AccessToken}}
	for name, set := range map[string]func(*http.Request){
		"a user's access token as bearer": func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+other.AccessToken) },
		"a public client":                 func(r *http.Request) { r.SetBasicAuth(clientID, "") },
		"no credentials":                  func(*http.Request) {},
	} {
		if st := introspect(token, set); st != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", name, st)
		}
	}
	withForm := url.Values{"token": {tk.AccessToken}, "access_token": {other.AccessToken}}
	if st := introspect(withForm, func(r *http.Request) {}); st != http.StatusUnauthorized {
		t.Errorf("a user's access token in the form: %d, want 401", st)
	}
	if st := introspect(token, func(r *http.Request) { r.SetBasicAuth("api", rsSecret) }); st != http.StatusOK {
		t.Errorf("the resource server's credentials: %d, want 200", st)
	}
}

// A resource server learns only about the access tokens that are for it: those whose aud names one of
// its resources (or its client ID). Another confidential client, whose API the token is not for, gets
// active:false, and so does the resource server for a refresh token of the app (it used to get any
// token, other clients' refresh tokens included, with the user's e-mail). The e-mail goes out as
// username only when the grant has the email scope.
func TestIntrospect_OnlyTokensForTheCaller(t *testing.T) {
	otherSecret := filepath.Join(t.TempDir(), "other")
	if err := os.WriteFile(otherSecret, []byte("other-resource-server-secret-42\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	resourceServer := withConfidentialClient(t)
	p := startProvider(t, setup{mutate: func(c *config.Config) {
		resourceServer(c)
		c.Auth.Clients = append(c.Auth.Clients, config.OAuthClient{ClientID: "billing", RedirectURIs: []string{c.PublicURL + "/billing-cb"},
			SecretFile: otherSecret, Resources: []string{"https://billing.example.test/"}})
	}})
	p.user(testEmail, testPassword)
	tk, _ := p.fullSignIn(testEmail, testPassword)
	introspect := func(token, user, secret string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, p.base+"/oauth2/introspect", strings.NewReader(url.Values{"token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(user, secret)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("introspection by %s: %d %v", user, res.StatusCode, err)
		}
		return body
	}
	mine := introspect(tk.AccessToken, "api", rsSecret)
	if mine["active"] != true || mine["sub"] == nil || mine["username"] != testEmail {
		t.Fatalf("the token's own resource server: %v", mine)
	}
	for name, got := range map[string]map[string]any{
		"another resource server":         introspect(tk.AccessToken, "billing", "other-resource-server-secret-42"),
		"the app's refresh token":         introspect(tk.RefreshToken, "api", rsSecret),
		"the refresh token, by the other": introspect(tk.RefreshToken, "billing", "other-resource-server-secret-42"),
	} {
		if len(got) != 1 || got["active"] != false {
			t.Errorf("%s: %v, want only active:false", name, got)
		}
	}

	// Without the email scope, no e-mail address as username.
	conf := p.oauth2Config()
	conf.Scopes = []string{"openid"}
	b := newBrowser(t)
	verifier := oauth2.GenerateVerifier()
	page := b.get(conf.AuthCodeURL("state-no-email", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("nonce", "n-no-email")))
	code, _ := codeFrom(t, b.signIn(p.base, page.body, testEmail, testPassword), p.redirect)
	noEmail := p.exchange(code, verifier)
	if got := introspect(noEmail.AccessToken, "api", rsSecret); got["active"] != true || got["username"] != nil {
		t.Fatalf("a token without the email scope: %v", got)
	}
}

// Strict-Transport-Security on every answer of an https issuer, none under a loopback http one.
func TestHSTS_OnHTTPSIssuerOnly(t *testing.T) {
	for _, https := range []bool{false, true} {
		p := startProvider(t, setup{mutate: func(c *config.Config) {
			if https {
				c.Auth.Issuer = "https://id.example.test"
			}
		}})
		for _, path := range []string{"/.well-known/openid-configuration", "/.well-known/jwks.json", "/oauth2/authorize", "/oauth2/userinfo"} {
			res, err := http.Get(p.base + path)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if got := res.Header.Get("Strict-Transport-Security"); (got != "") != https || https && !strings.Contains(got, "max-age=31536000") {
				t.Errorf("https=%v %s: Strict-Transport-Security %q", https, path, got)
			}
		}
	}
}
