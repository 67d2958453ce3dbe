package auth_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/store"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/platform/config"
)

// D43: a code exchange refused by its user's rate limit writes nothing (on a single server the unit
// counts the limit before anything else; on a Cluster a call of its own does, before the unit), so the
// same code and verifier work once the window has passed. Before, the PKCE challenge was marked checked
// by the read that checked it, before the rate limit refused: the retry was taken for a replay, answered
// invalid_grant and revoked the grant.
func TestToken_CodeExchangeOverTheUserRate_CanBeRetriedAfterTheWait(t *testing.T) {
	const window = time.Minute
	for _, where := range []string{"single server", "cluster"} {
		t.Run(where, func(t *testing.T) {
			p, rdb := rateLimitedProvider(t, where, window)
			sub := p.user(testEmail, testPassword)
			first, b := p.fullSignIn(testEmail, testPassword)
			verifier := oauth2.GenerateVerifier()
			code, _ := codeFrom(t, p.codeWithSession(b, "state-rate-retry", verifier), p.redirect)
			userRate := throttle.Rate{Kind: "token-user", Who: sub}.Key()
			if err := rdb.Set(context.Background(), userRate, 1000, window).Err(); err != nil { // the user is at the limit
				t.Fatal(err)
			}
			refused := p.exchange(code, verifier)
			if refused.status != http.StatusTooManyRequests || refused.Error != "temporarily_unavailable" {
				t.Fatalf("over the user's rate: %d %s", refused.status, refused.Error)
			}
			endRate(t, rdb, userRate, window)
			again := p.exchange(code, verifier)
			if again.status != http.StatusOK {
				t.Fatalf("the same code after the wait: %d %s (the refused request used it up)", again.status, again.Error)
			}
			if st := p.userinfoStatus(again.AccessToken); st != http.StatusOK {
				t.Fatalf("its access token: %d", st)
			}
			if st := p.userinfoStatus(first.AccessToken); st != http.StatusOK {
				t.Fatalf("the first grant: %d", st)
			}
			// It was used now: presenting it again is a replay, which revokes what it issued.
			if r := p.exchange(code, verifier); r.status != http.StatusBadRequest {
				t.Fatalf("replay: %d %s", r.status, r.Error)
			}
			if st := p.userinfoStatus(again.AccessToken); st != http.StatusUnauthorized {
				t.Fatalf("replay did not revoke: %d", st)
			}
		})
	}
}

// A refresh over its user's rate limit gets 429 and keeps its refresh token: on a single server the
// refresh's unit counts the limit before it writes anything (D45), on a Cluster a call of its own before
// the unit; after the wait the same token refreshes, once.
func TestToken_RefreshOverTheUserRate_CanBeRetriedAfterTheWait(t *testing.T) {
	const window = time.Minute
	for _, where := range []string{"single server", "cluster"} {
		t.Run(where, func(t *testing.T) {
			p, rdb := rateLimitedProvider(t, where, window)
			sub := p.user(testEmail, testPassword)
			tk, _ := p.fullSignIn(testEmail, testPassword)
			userRate := throttle.Rate{Kind: "token-user", Who: sub}.Key()
			if err := rdb.Set(context.Background(), userRate, 1000, window).Err(); err != nil { // the user is at the limit
				t.Fatal(err)
			}
			refused := p.refresh(tk.RefreshToken)
			if refused.status != http.StatusTooManyRequests || refused.Error != "temporarily_unavailable" {
				t.Fatalf("over the user's rate: %d %s", refused.status, refused.Error)
			}
			endRate(t, rdb, userRate, window)
			again := p.refresh(tk.RefreshToken)
			if again.status != http.StatusOK {
				t.Fatalf("the same token after the wait: %d %s (the refused request spent it)", again.status, again.Error)
			}
			if st := p.userinfoStatus(again.AccessToken); st != http.StatusOK {
				t.Fatalf("its access token: %d", st)
			}
			// Spent now: presenting it again is reuse, which revokes what it issued.
			if r := p.refresh(tk.RefreshToken); r.status != http.StatusBadRequest {
				t.Fatalf("reuse: %d %s", r.status, r.Error)
			}
			if r := p.refresh(again.RefreshToken); r.status != http.StatusBadRequest {
				t.Fatalf("reuse did not revoke the grant: %d %s", r.status, r.Error)
			}
		})
	}
}

// rateLimitedProvider is a provider on a single server or a 3-master Cluster (where) whose rate limits
// allow 1000 requests per window.
func rateLimitedProvider(t *testing.T, where string, window time.Duration) (*provider, redis.UniversalClient) {
	t.Helper()
	var rdb redis.UniversalClient
	if where == "cluster" {
		cluster := testredis.StartCluster(t, 3, 0)
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
	} else {
		rdb = redis.NewClient(&redis.Options{Addr: testredis.Start(t).Addr()})
	}
	t.Cleanup(func() { rdb.Close() })
	return startProvider(t, setup{rdb: rdb, mutate: func(c *config.Config) {
		c.Auth.RateLimit = config.AuthRateLimit{PerIP: 1000, PerUser: 1000, Window: config.Duration(window)}
	}}), rdb
}

// endRate ends a rate limit's counter (its window) after checking it lives at most window
// (testredis.EndLifetimes for one key, which on a Cluster names its node).
func endRate(t *testing.T, rdb redis.UniversalClient, key string, window time.Duration) {
	t.Helper()
	ctx := context.Background()
	ttl, err := rdb.PTTL(ctx, key).Result()
	if err != nil || ttl <= 0 || ttl > window {
		t.Fatalf("%s lives %v (%v), want at most %v", key, ttl, err, window)
	}
	if err := rdb.PExpireAt(ctx, key, time.UnixMilli(1)).Err(); err != nil {
		t.Fatal(err)
	}
}

// D43: the token endpoint reads the grant's records in the round trip that counts the per-address rate
// limit, before it knows the answer. The read is pure: a request the limit refuses, with a used code or
// a rotated refresh token, revokes nothing and uses nothing up; the same request within the limit is the
// replay it is, and revokes the family.
func TestToken_RefusedByThePerAddressRate_PrefetchRevokesNothing(t *testing.T) {
	srv := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	const window = time.Minute
	p := startProvider(t, setup{rdb: rdb, mutate: func(c *config.Config) {
		c.Auth.RateLimit = config.AuthRateLimit{PerIP: 5, PerUser: 1000, Window: config.Duration(window)}
	}})
	p.user(testEmail, testPassword)
	ctx := context.Background()
	ipKey := func() string {
		keys, err := rdb.Keys(ctx, "auth:throttle:rate:token-ip:*").Result()
		if err != nil || len(keys) != 1 {
			t.Fatalf("token-ip counters: %v %v", keys, err)
		}
		return keys[0]
	}
	fill := func() { // the address is at its limit
		if err := rdb.Set(ctx, ipKey(), 5, window).Err(); err != nil {
			t.Fatal(err)
		}
	}

	tk, b := p.fullSignIn(testEmail, testPassword)
	next := p.refresh(tk.RefreshToken)
	if next.status != http.StatusOK {
		t.Fatalf("refresh: %d %s", next.status, next.Error)
	}
	verifier := oauth2.GenerateVerifier()
	code, _ := codeFrom(t, p.codeWithSession(b, "state-prefetch-pure", verifier), p.redirect)
	exchanged := p.exchange(code, verifier)
	if exchanged.status != http.StatusOK {
		t.Fatalf("exchange: %d %s", exchanged.status, exchanged.Error)
	}
	// Over the limit: the rotated refresh token and the used code are refused with 429, nothing else.
	fill()
	if r := p.refresh(tk.RefreshToken); r.status != http.StatusTooManyRequests {
		t.Fatalf("rotated refresh token over the limit: %d %s", r.status, r.Error)
	}
	if r := p.exchange(code, verifier); r.status != http.StatusTooManyRequests {
		t.Fatalf("used code over the limit: %d %s", r.status, r.Error)
	}
	if st := p.userinfoStatus(next.AccessToken); st != http.StatusOK {
		t.Fatalf("a refused reuse revoked the refresh family: %d", st)
	}
	if st := p.userinfoStatus(exchanged.AccessToken); st != http.StatusOK {
		t.Fatalf("a refused replay revoked the code's family: %d", st)
	}
	// Within the limit again, each is the replay it is.
	endRate(t, rdb, ipKey(), window)
	if r := p.refresh(tk.RefreshToken); r.status != http.StatusBadRequest {
		t.Fatalf("reuse: %d %s", r.status, r.Error)
	}
	if st := p.userinfoStatus(next.AccessToken); st != http.StatusUnauthorized {
		t.Fatalf("reuse did not revoke: %d", st)
	}
	if r := p.exchange(code, verifier); r.status != http.StatusBadRequest {
		t.Fatalf("replay: %d %s", r.status, r.Error)
	}
	if st := p.userinfoStatus(exchanged.AccessToken); st != http.StatusUnauthorized {
		t.Fatalf("replay did not revoke: %d", st)
	}
}

// A wrong verifier checks the challenge read from the prefetch (D43): the request fails before its unit,
// and marks the challenge checked on its way out, as the read did before. The right verifier after it is
// then a replay: refused, and the grant revoked.
func TestToken_WrongVerifierFromThePrefetch_SpendsTheCode(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	_, b := p.fullSignIn(testEmail, testPassword) // Redis has the prefetch's scripts from here on
	verifier := oauth2.GenerateVerifier()
	code, _ := codeFrom(t, p.codeWithSession(b, "state-wrong-verifier", verifier), p.redirect)
	if tk := p.exchange(code, oauth2.GenerateVerifier()); tk.status != http.StatusBadRequest || tk.Error != "invalid_grant" {
		t.Fatalf("wrong verifier: %d %s", tk.status, tk.Error)
	}
	family, _, _ := store.Family(code)
	if revoked, _ := p.svc.Store().FamilyRevoked(context.Background(), family); revoked {
		t.Fatal("a wrong verifier revoked the grant")
	}
	if tk := p.exchange(code, verifier); tk.status != http.StatusBadRequest || tk.Error != "invalid_grant" {
		t.Fatalf("right verifier after a wrong one: %d %s", tk.status, tk.Error)
	}
	if revoked, _ := p.svc.Store().FamilyRevoked(context.Background(), family); !revoked {
		t.Fatal("the code presented again did not revoke the grant")
	}
}
