package auth_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// userinfoWith calls userinfo with req prepared by set and returns the status and WWW-Authenticate.
func (p *provider) userinfoWith(set func(*http.Request)) (int, string) {
	p.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.base+"/oauth2/userinfo", nil)
	set(req)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode, res.Header.Get("WWW-Authenticate")
}

// Only an access token is a bearer credential (RFC 6750, RFC 9700 4.14): a refresh token or an ID token
// at userinfo is invalid_token.
func TestUserinfo_OnlyAccessTokensAreBearerCredentials(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	tk, _ := p.fullSignIn(testEmail, testPassword)
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	if st, _ := p.userinfoWith(bearer(tk.AccessToken)); st != http.StatusOK {
		t.Fatalf("access token: %d", st)
	}
	for name, tok := range map[string]string{"refresh token": tk.RefreshToken, "ID token": tk.IDToken} {
		st, wa := p.userinfoWith(bearer(tok))
		if st != http.StatusUnauthorized || !strings.Contains(wa, `error="invalid_token"`) {
			t.Errorf("%s as a bearer token: %d, WWW-Authenticate %q; want 401 invalid_token", name, st, wa)
		}
	}
}

// A token in the URL leaks into logs and history (RFC 9700 4.3.2): refused even when it is valid.
func TestUserinfo_AccessTokenInQueryRefused(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	tk, _ := p.fullSignIn(testEmail, testPassword)
	st, wa := p.userinfoWith(func(r *http.Request) { r.URL.RawQuery = url.Values{"access_token": {tk.AccessToken}}.Encode() })
	if st != http.StatusBadRequest || !strings.Contains(wa, `error="invalid_request"`) {
		t.Fatalf("access_token in the query: %d, WWW-Authenticate %q; want 400 invalid_request", st, wa)
	}
}

// An access token is not an ID token: as id_token_hint it must not sign the browser out unasked.
func TestLogout_AccessTokenAsIDTokenHint_Refused(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	tk, b := p.fullSignIn(testEmail, testPassword)
	res := b.get(p.base + "/oauth2/logout?" + url.Values{"id_token_hint": {tk.AccessToken}, "post_logout_redirect_uri": {p.base + "/bye"}}.Encode())
	if res.StatusCode != http.StatusBadRequest || res.Header.Get("Location") != "" {
		t.Fatalf("access token as id_token_hint: %d %q; want 400 and no redirect", res.StatusCode, res.Header.Get("Location"))
	}
	res = b.get(p.base + "/oauth2/logout?" + url.Values{"id_token_hint": {tk.IDToken}, "post_logout_redirect_uri": {p.base + "/bye"}}.Encode())
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("ID token as id_token_hint: %d", res.StatusCode)
	}
}
