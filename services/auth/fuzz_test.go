package auth_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/formsservice/formsservice/services/platform/config"
)

// FuzzAuthorizeParams sends arbitrary authorization requests, GET and POST: the answer is always the
// page (200), an error page (400, 403), a throttle or outage page (429, 503), or a redirect (303) that
// goes only to the registered redirect URI. Never a 500, never a redirect elsewhere.
// `go test -fuzz FuzzAuthorizeParams ./services/auth/` explores beyond the seeds.
func FuzzAuthorizeParams(f *testing.F) {
	// The fuzzer sends thousands of requests a minute from one address; the rate limit on authorize and
	// token has its own test (TestRateLimit_…) and would only answer 429 here.
	p := startProvider(f, setup{mutate: func(c *config.Config) {
		c.Auth.RateLimit = config.AuthRateLimit{PerIP: 1 << 30, PerUser: 1 << 30}
	}})
	p.user(testEmail, testPassword)
	challenge := "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
	seeds := []struct{ client, redirect, responseType, scope, state, challenge, method, prompt, extra string }{
		{clientID, p.redirect, "code", "openid profile email offline_access", "state-0123456789", challenge, "S256", "", ""},
		{clientID, p.redirect, "code", "openid", "state-0123456789", challenge, "plain", "", ""},
		{clientID, p.redirect, "code", "openid", "state-0123456789", "", "", "", ""},
		{clientID, p.redirect, "code", "openid", "s", challenge, "S256", "none", ""},
		{clientID, p.redirect, "token", "openid", "state-0123456789", challenge, "S256", "", ""},
		{clientID, p.redirect, "code id_token", "openid", "state-0123456789", challenge, "S256", "", "nonce=n"},
		{clientID, p.redirect, "code", "admin", "state-0123456789", challenge, "S256", "login", ""},
		{clientID, p.redirect, "code", "openid", "state-0123456789", challenge, "S256", "none login", "max_age=-1"},
		{clientID, p.redirect, "code", "openid", "state-0123456789", challenge, "S256", "", "response_mode=form_post"},
		{clientID, p.redirect, "code", "openid", "state-0123456789", challenge, "S256", "", "request=eyJhbGciOiJub25lIn0.e30."},
		{clientID, p.redirect, "code", "openid", "state-0123456789", challenge, "S256", "", "client_id=other&redirect_uri=https://evil.example/"},
		{clientID, "https://evil.example/cb", "code", "openid", "state-0123456789", challenge, "S256", "", ""},
		{"", "", "", "", "", "", "", "", ""},
		{"nobody", p.redirect, "code", "openid", "x", challenge, "S256", "", ""},
		{clientID, p.redirect + "%00", "code", "openid", "state\x00\xff", challenge + "\n", "S256", "", "%zz=1;a=b"},
		{clientID, p.redirect, "code", strings.Repeat("openid ", 500), strings.Repeat("s", 3000), challenge, "S256", "", "id_token_hint=abc.def.ghi"},
	}
	for _, s := range seeds {
		f.Add(s.client, s.redirect, s.responseType, s.scope, s.state, s.challenge, s.method, s.prompt, s.extra, false)
		f.Add(s.client, s.redirect, s.responseType, s.scope, s.state, s.challenge, s.method, s.prompt, s.extra, true)
	}
	f.Fuzz(func(t *testing.T, client, redirect, responseType, scope, state, challenge, method, prompt, extra string, post bool) {
		q := url.Values{}
		for k, v := range map[string]string{"client_id": client, "redirect_uri": redirect, "response_type": responseType, "scope": scope,
			"state": state, "code_challenge": challenge, "code_challenge_method": method, "prompt": prompt} {
			if v != "" {
				q.Set(k, v)
			}
		}
		raw := q.Encode()
		if extra != "" {
			raw += "&" + extra
		}
		if len(raw) > 6000 {
			return // beyond what the server reads in a request line; not what this target explores
		}
		u := p.base + "/oauth2/authorize?" + raw
		if strings.ContainsAny(u, " \x7f") || !utf8.ValidString(u) {
			u = p.base + "/oauth2/authorize?" + url.PathEscape(raw)
		}
		var req *http.Request
		var err error
		if post {
			form := url.Values{"email": {testEmail}, "password": {testPassword}, "csrf_token": {state}, "action": {scope}}
			req, err = http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
			if err == nil {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
		} else {
			req, err = http.NewRequest(http.MethodGet, u, nil)
		}
		if err != nil {
			return // not a request a client could send
		}
		res := newBrowser(t).do(req)
		switch res.StatusCode {
		case http.StatusOK, http.StatusBadRequest, http.StatusForbidden, http.StatusUnauthorized, http.StatusTooManyRequests:
		case http.StatusSeeOther:
			if loc := res.Header.Get("Location"); !strings.HasPrefix(loc, p.redirect+"?") {
				t.Fatalf("redirect to %q, want only %s?...", loc, p.redirect)
			}
		default:
			t.Fatalf("status %d for %s\n%.300s", res.StatusCode, u, res.body)
		}
	})
}
