package auth_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/services/platform/config"
)

// /oauth2/authorize and /oauth2/token have per-address and per-user budgets: beyond them 429 with
// Retry-After (the page at authorize, an OAuth JSON error at token), nothing else done.
func TestRateLimit_AuthorizeAndToken_PerIPAndPerUser(t *testing.T) {
	t.Run("authorize per IP", func(t *testing.T) {
		p := startProvider(t, setup{mutate: func(c *config.Config) {
			c.Auth.RateLimit = config.AuthRateLimit{PerIP: 3, PerUser: 1000, Window: config.Duration(time.Minute)}
		}})
		b := newBrowser(t)
		for i := 0; i < 3; i++ {
			if res := b.get(p.authorizeURL("state-rate-0123", oauth2.GenerateVerifier())); res.StatusCode != http.StatusOK {
				t.Fatalf("request %d: %d", i, res.StatusCode)
			}
		}
		res := b.get(p.authorizeURL("state-rate-0123", oauth2.GenerateVerifier()))
		if res.StatusCode != http.StatusTooManyRequests || retryAfter(res.Response) <= 0 {
			t.Fatalf("over the limit: %d Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
		}
	})
	t.Run("token per user", func(t *testing.T) {
		p := startProvider(t, setup{mutate: func(c *config.Config) {
			c.Auth.RateLimit = config.AuthRateLimit{PerIP: 1000, PerUser: 3, Window: config.Duration(time.Minute)}
		}})
		p.user(testEmail, testPassword)
		tk, _ := p.fullSignIn(testEmail, testPassword) // the exchange is the user's first token request
		rt := tk.RefreshToken
		for i := 0; i < 2; i++ {
			r := p.refresh(rt)
			if r.status != http.StatusOK {
				t.Fatalf("refresh %d: %d %s", i, r.status, r.Error)
			}
			rt = r.RefreshToken
		}
		res, err := http.PostForm(p.base+"/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {clientID}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusTooManyRequests || retryAfter(res) <= 0 || res.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Fatalf("over the user's limit: %d Retry-After %q %s", res.StatusCode, res.Header.Get("Retry-After"), res.Header.Get("Content-Type"))
		}
	})
}

func retryAfter(res *http.Response) int {
	n, _ := strconv.Atoi(res.Header.Get("Retry-After"))
	return n
}
