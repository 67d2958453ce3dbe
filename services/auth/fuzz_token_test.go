package auth_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/services/platform/config"
)

// FuzzTokenParams sends arbitrary token requests (grant type, code, verifier, redirect URI, refresh
// token, client and any extra parameters) to a provider that has issued a real code and a real refresh
// token. The answer is always JSON with status 200, 400, 401 or 503 — never a 500 — and a 200 only ever
// comes for a credential the provider issued, and at most once per credential (codes are single use,
// refresh tokens rotate). A repeated parameter is always invalid_request.
// `go test -fuzz FuzzTokenParams ./services/auth/` explores beyond the seeds.
func FuzzTokenParams(f *testing.F) {
	// The fuzzer sends thousands of requests a minute from one address; the rate limit on authorize and
	// token has its own test (TestRateLimit_…) and would only answer 429 here.
	p := startProvider(f, setup{mutate: func(c *config.Config) {
		c.Auth.RateLimit = config.AuthRateLimit{PerIP: 1 << 30, PerUser: 1 << 30}
	}})
	p.user(testEmail, testPassword)
	verifier := oauth2.GenerateVerifier()
	code := p.signInAndGetCode(newBrowser(f), testEmail, testPassword, verifier)
	other := oauth2.GenerateVerifier()
	refreshCode := p.signInAndGetCode(newBrowser(f), testEmail, testPassword, other)
	tk := p.exchange(refreshCode, other)
	if tk.status != http.StatusOK {
		f.Fatalf("exchange: %d %s", tk.status, tk.Error)
	}
	issued := map[string]bool{code: true, tk.RefreshToken: true}
	var mu sync.Mutex
	granted := map[string]int{}

	seeds := []struct{ grant, code, verifier, redirect, refresh, client, extra string }{
		{"authorization_code", code, verifier, p.redirect, "", clientID, ""},
		{"refresh_token", "", "", "", tk.RefreshToken, clientID, ""},
		{"refresh_token", "", "", "", tk.RefreshToken, clientID, "scope=openid"},
		{"authorization_code", code, "plain-verifier", p.redirect, "", clientID, ""},
		{"authorization_code", code, verifier, "https://evil.example/cb", "", clientID, ""},
		{"authorization_code", code, verifier, p.redirect, "", "other", ""},
		{"authorization_code", code + ".forged", verifier, p.redirect, "", clientID, ""},
		{"authorization_code", code, verifier, p.redirect, "", clientID, "code_verifier=" + other},
		{"refresh_token", "", "", "", tk.RefreshToken, clientID, "grant_type=authorization_code"},
		{"password", "", "", "", "", clientID, "username=ada&password=x"},
		{"client_credentials", "", "", "", "", clientID, ""},
		{"urn:ietf:params:oauth:grant-type:jwt-bearer", "", "", "", "", clientID, "assertion=eyJhbGciOiJub25lIn0.e30."},
		{"", "", "", "", "", "", ""},
		{"refresh_token", "", "", "", "\x00\xff", clientID, "%zz"},
		{"authorization_code", strings.Repeat("c", 5000), strings.Repeat("v", 129), p.redirect, "", clientID, ""},
	}
	for _, s := range seeds {
		f.Add(s.grant, s.code, s.verifier, s.redirect, s.refresh, s.client, s.extra)
	}
	client := &http.Client{}
	f.Fuzz(func(t *testing.T, grant, code, verifier, redirect, refresh, clientParam, extra string) {
		form := url.Values{}
		for k, v := range map[string]string{"grant_type": grant, "code": code, "code_verifier": verifier,
			"redirect_uri": redirect, "refresh_token": refresh, "client_id": clientParam} {
			if v != "" {
				form.Set(k, v)
			}
		}
		body := form.Encode()
		if extra != "" {
			body += "&" + extra
		}
		if len(body) > 60<<10 {
			return // beyond the endpoint's body limit: a 413 is not what this target explores
		}
		res, err := client.Post(p.base+"/oauth2/token", "application/x-www-form-urlencoded", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var answer struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
			Error        string `json:"error"`
		}
		if err := json.Unmarshal(raw, &answer); err != nil {
			t.Fatalf("status %d, body is not JSON: %.300q", res.StatusCode, raw)
		}
		switch res.StatusCode {
		case http.StatusOK, http.StatusBadRequest, http.StatusUnauthorized, http.StatusServiceUnavailable:
		default:
			t.Fatalf("status %d for %q: %.300s", res.StatusCode, body, raw)
		}
		parsed, perr := url.ParseQuery(body)
		if perr == nil {
			for k, v := range parsed {
				if len(v) > 1 && (res.StatusCode != http.StatusBadRequest || answer.Error != "invalid_request") {
					t.Fatalf("%s repeated: %d %s, want 400 invalid_request", k, res.StatusCode, answer.Error)
				}
			}
		}
		if res.StatusCode != http.StatusOK {
			if answer.AccessToken != "" || answer.RefreshToken != "" {
				t.Fatalf("status %d with tokens", res.StatusCode)
			}
			return
		}
		cred := code
		if parsed.Get("grant_type") == "refresh_token" {
			cred = parsed.Get("refresh_token")
		}
		mu.Lock()
		defer mu.Unlock()
		if !issued[cred] {
			t.Fatalf("tokens for a credential the provider never issued: %q", body)
		}
		if granted[cred]++; granted[cred] > 1 {
			t.Fatalf("the same credential yielded tokens twice: %q", body)
		}
		if answer.RefreshToken != "" {
			issued[answer.RefreshToken] = true
		}
	})
}
