package auth_test

import (
	"fmt"
	"net/http"
	"testing"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/services/platform/config"
)

// In-process benchmarks (client and server in one process, real redis-server); `make bench` runs them
// before the load run of TestLoad_TokenEndpoint, which measures the server alone. Each sets its own rate
// limits: one user refreshing thousands of times a minute is what the defaults (300 per user per
// minute) are there to refuse, and a benchmark that gets 429 stops make bench.
var unlimited = setup{mutate: func(c *config.Config) {
	c.Auth.RateLimit.PerIP, c.Auth.RateLimit.PerUser = 1<<30, 1<<30
}}

func BenchmarkRefreshGrant(b *testing.B) {
	p := startProvider(b, unlimited)
	p.user(testEmail, testPassword)
	tk, _ := p.fullSignIn(testEmail, testPassword)
	rt := tk.RefreshToken
	b.ResetTimer()
	for range b.N {
		next := p.refresh(rt)
		if next.status != http.StatusOK {
			b.Fatalf("refresh: %d %s", next.status, next.Error)
		}
		rt = next.RefreshToken
	}
}

// BenchmarkWholeFlow: authorize page, sign-in (argon2id at the tests' CHEAP setting), code, token.
func BenchmarkWholeFlow(b *testing.B) {
	p := startProvider(b, unlimited)
	for i := range 4 {
		p.user(fmt.Sprintf("bench%d@example.com", i), testPassword)
	}
	b.ResetTimer()
	for i := range b.N {
		br := newBrowser(b)
		verifier := oauth2.GenerateVerifier()
		code := p.signInAndGetCode(br, fmt.Sprintf("bench%d@example.com", i%4), testPassword, verifier)
		if tk := p.exchange(code, verifier); tk.status != http.StatusOK {
			b.Fatalf("exchange: %d", tk.status)
		}
	}
}
