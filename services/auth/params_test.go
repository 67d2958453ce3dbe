package auth_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/services/platform/config"
)

// RFC 6749 3.2: token request parameters MUST NOT be included more than once. fosite reads the first
// copy; refusing the request keeps a proxy or WAF that reads another copy from disagreeing with us.
func TestToken_RepeatedParameter_InvalidRequestAndNoToken(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	verifier := oauth2.GenerateVerifier()
	code := p.signInAndGetCode(newBrowser(t), testEmail, testPassword, verifier)
	body := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {p.redirect},
		"client_id": {clientID}, "code_verifier": {verifier, oauth2.GenerateVerifier()}}
	tk := p.tokenRequest(body)
	if tk.status != http.StatusBadRequest || tk.Error != "invalid_request" || tk.AccessToken != "" {
		t.Fatalf("code_verifier twice: %d %q, want 400 invalid_request and no token", tk.status, tk.Error)
	}
	// The code was not spent by the refused request: the well-formed exchange still works.
	if tk := p.exchange(code, verifier); tk.status != http.StatusOK {
		t.Fatalf("exchange after the refused request: %d %s", tk.status, tk.Error)
	}
	for _, raw := range []string{
		"grant_type=refresh_token&grant_type=authorization_code&refresh_token=x&client_id=" + clientID,
		"grant_type=refresh_token&refresh_token=x&client_id=" + clientID + "&client_id=other",
	} {
		res, err := http.Post(p.base+"/oauth2/token", "application/x-www-form-urlencoded", strings.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"error":"invalid_request"`) {
			t.Errorf("%s: %d %s, want 400 invalid_request", raw, res.StatusCode, b)
		}
	}
}

// RFC 6749 3.1: authorization request parameters MUST NOT be included more than once. With the client
// and its redirect URI valid and single, the answer goes back to the client as invalid_request (never
// with a code); a repeated client_id or redirect_uri gets the error page without any redirect.
func TestAuthorize_RepeatedParameter_InvalidRequestWithoutCode(t *testing.T) {
	p := startProvider(t, setup{})
	b := newBrowser(t)
	res := b.get(p.authorizeURL("state-0123456789", oauth2.GenerateVerifier()) + "&state=another-state-123")
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("state twice: %d, want 303 to the client with an error\n%.300s", res.StatusCode, res.body)
	}
	loc, _ := url.Parse(res.Header.Get("Location"))
	if !strings.HasPrefix(loc.String(), p.redirect+"?") || loc.Query().Get("error") != "invalid_request" || loc.Query().Get("code") != "" {
		t.Errorf("state twice: redirected to %s, want %s?error=invalid_request without a code", loc, p.redirect)
	}
	res = b.get(p.authorizeURL("state-0123456789", oauth2.GenerateVerifier()) + "&redirect_uri=" + url.QueryEscape("https://evil.example/cb"))
	if res.StatusCode != http.StatusBadRequest || res.Header.Get("Location") != "" {
		t.Errorf("redirect_uri twice: %d to %q, want the 400 error page and no redirect", res.StatusCode, res.Header.Get("Location"))
	}
}

// OAuth 2.0 Security BCP (RFC 9700) 2.1.2: no implicit grant. Authorization requests for tokens in the
// front channel are refused, and nothing that grants access travels in the redirect.
func TestAuthorize_ImplicitAndHybrid_RefusedWithoutTokens(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	for _, rt := range []string{"token", "id_token", "id_token token", "code token", "code id_token", "code id_token token", "none"} {
		b := newBrowser(t)
		u := p.authorizeURL("state-0123456789", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("response_type", rt))
		res := b.get(u)
		if res.StatusCode == http.StatusOK { // the page: signing in must still not hand out tokens
			res = b.signIn(p.base, res.body, testEmail, testPassword)
		}
		loc := res.Header.Get("Location")
		for _, leak := range []string{"access_token", "id_token=", "code="} {
			if strings.Contains(loc, leak) {
				t.Errorf("response_type=%s: redirected to %s (carries %s)", rt, loc, leak)
			}
		}
		if res.StatusCode == http.StatusSeeOther {
			u, _ := url.Parse(loc)
			q := u.Query()
			if e := q.Get("error"); e != "unsupported_response_type" && e != "invalid_request" {
				t.Errorf("response_type=%s: redirect with error %q, want unsupported_response_type", rt, e)
			}
		} else if res.StatusCode != http.StatusBadRequest {
			t.Errorf("response_type=%s: %d, want a refusal", rt, res.StatusCode)
		}
	}
}

// RFC 9700 2.1.1 and 4.8.2 (PKCE downgrade): every client must use PKCE, confidential ones too, so an
// attacker who strips the challenge from the authorization request gets no code at all, and a code
// issued with a challenge is not redeemed without its verifier, even with the client's secret.
func TestToken_PKCEDowngrade_VerifierForCodeWithoutChallengeRefused(t *testing.T) {
	secretFile := t.TempDir() + "/secret"
	const secret = "a confidential client secret"
	if err := os.WriteFile(secretFile, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProvider(t, setup{mutate: func(c *config.Config) {
		c.Auth.Clients = append(c.Auth.Clients, config.OAuthClient{ClientID: "server-app", SecretFile: secretFile,
			RedirectURIs: []string{c.PublicURL + "/server-cb"}})
	}})
	p.user(testEmail, testPassword)
	q := url.Values{"client_id": {"server-app"}, "response_type": {"code"}, "scope": {"openid"},
		"state": {"state-0123456789"}, "redirect_uri": {p.base + "/server-cb"}}
	authorizeError(t, newBrowser(t).get(p.base+"/oauth2/authorize?"+q.Encode()), p.base+"/server-cb", "invalid_request", "state-0123456789")

	verifier := oauth2.GenerateVerifier()
	q.Set("code_challenge", oauth2.S256ChallengeFromVerifier(verifier))
	q.Set("code_challenge_method", "S256")
	b := newBrowser(t)
	page := b.get(p.base + "/oauth2/authorize?" + q.Encode())
	code, _ := codeFrom(t, b.signIn(p.base, page.body, testEmail, testPassword), p.base+"/server-cb")
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {p.base + "/server-cb"}}
	req, _ := http.NewRequest(http.MethodPost, p.base+"/oauth2/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("server-app", secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var tk tokens
	_ = json.NewDecoder(res.Body).Decode(&tk)
	if res.StatusCode != http.StatusBadRequest || tk.AccessToken != "" {
		t.Errorf("a code issued with a challenge, redeemed without its verifier: %d %q, want 400 and no token", res.StatusCode, tk.Error)
	}
}
