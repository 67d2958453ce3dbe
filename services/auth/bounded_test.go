package auth_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/platform/config"
)

// lastingFor is the TTL from which a key counts as lasting: the bound under test is on keys that outlive
// the loop (grants, families, sessions, indexes). Records that live seconds (a used code, a rate-limit
// window) are bounded by their lifetime; counting them would make the figure depend on how fast this
// machine runs the loop.
const lastingFor = 5 * time.Minute

// redisFootprint is the number of lasting keys (no TTL, or one of at least lastingFor) and the memory
// Redis reports for them (MEMORY USAGE).
func redisFootprint(t *testing.T, p *provider) (keys, bytes int64) {
	t.Helper()
	ctx := context.Background()
	var all []string
	iter := p.rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		all = append(all, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	pipe := p.rdb.Pipeline()
	ttls := make([]*redis.DurationCmd, len(all))
	usage := make([]*redis.IntCmd, len(all))
	for i, k := range all {
		ttls[i] = pipe.TTL(ctx, k)
		usage[i] = pipe.MemoryUsage(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	for i := range all {
		ttl, err := ttls[i].Result()
		if err != nil || ttl == -2 { // gone between SCAN and TTL: a short-lived record
			continue
		}
		if ttl == -1 || ttl >= lastingFor {
			keys++
			bytes += usage[i].Val()
		}
	}
	return keys, bytes
}

// Every key the provider writes for an active user has a bound that does not depend on how often the
// user signs in or refreshes: a loop of sign-in + code exchange + refresh for one user, and a long
// refresh chain of one grant, leave Redis's key count and memory flat (one current-token record per
// family, bounded per-user indexes; short-lived records bounded by their lifetime).
func TestRedisState_SignInExchangeRefreshLoop_StaysFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("a loop of 1,300 flows")
	}
	p := startProvider(t, setup{mutate: func(c *config.Config) {
		c.Auth.CodeLifetime = config.Duration(time.Second) // the code's short-lived records are bounded by it
		c.Auth.RateLimit = config.AuthRateLimit{PerIP: 1 << 30, PerUser: 1 << 30}
		c.Auth.MaxGrantsPerUser = 256 // a smaller bound than the default 1000, so that the loop passes it soon
		c.Auth.Audit.MaxEntries = 200 // the audit trail's bound, passed by the first 300 sign-ins
	}})
	p.user(testEmail, testPassword)
	loop := func(n int) {
		for i := 0; i < n; i++ {
			tk, _ := p.fullSignIn(testEmail, testPassword)
			if r := p.refresh(tk.RefreshToken); r.status != http.StatusOK {
				t.Fatalf("refresh: %d %s", r.status, r.Error)
			}
		}
	}
	loop(300) // past the per-user bounds (256 grants, 64 sessions)
	keysA, memA := redisFootprint(t, p)
	loop(300)
	keysB, memB := redisFootprint(t, p)
	t.Logf("after 300 flows: %d keys, %d bytes; after 600: %d keys, %d bytes", keysA, memA, keysB, memB)
	// Before the bounds, every flow left at least three keys for 30 days (the used code, the rotated
	// refresh token, the new one): 900 here.
	if keysB > keysA+5 || memB > memA+memA/20 {
		t.Fatalf("Redis grew with sign-ins: %d → %d keys, %d → %d bytes", keysA, keysB, memA, memB)
	}

	// One grant refreshed 700 times: a fixed number of keys.
	tk, _ := p.fullSignIn(testEmail, testPassword)
	rt := tk.RefreshToken
	chain := func(n int) {
		for i := 0; i < n; i++ {
			r := p.refresh(rt)
			if r.status != http.StatusOK {
				t.Fatalf("refresh %d: %d %s", i, r.status, r.Error)
			}
			rt = r.RefreshToken
		}
	}
	chain(200)
	keysA, memA = redisFootprint(t, p)
	chain(500)
	keysB, memB = redisFootprint(t, p)
	t.Logf("refresh chain: after 200: %d keys, %d bytes; after 700: %d keys, %d bytes", keysA, memA, keysB, memB)
	if keysB > keysA+5 || memB > memA+memA/20 {
		t.Fatalf("Redis grew with refreshes: %d → %d keys, %d → %d bytes", keysA, keysB, memA, memB)
	}
}
