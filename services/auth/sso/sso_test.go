package sso_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/sso"
)

// start returns a Store on a new redis-server, and a session created on it for user-1.
func start(t *testing.T, ttl time.Duration) (*sso.Store, string, *redis.Client, *testredis.Server) {
	t.Helper()
	// On a Unix socket: once stopped, its address cannot be taken by another test's redis-server, which
	// happened to a TCP port under a loaded CI run (Create then succeeded against the stranger).
	srv := testredis.Start(t, testredis.Options{Unix: true})
	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Addr(), MaxRetries: -1, DialTimeout: 300 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	s := sso.New(rdb)
	token, err := s.Create(context.Background(), "user-1", time.Unix(1_700_000_000, 0), ttl)
	if err != nil {
		t.Fatal(err)
	}
	return s, token, rdb, srv
}

// A dump of Redis yields no usable cookie: neither the keys nor the values hold the cookie's value, and
// what they do hold does not work as a cookie.
func TestCreate_RedisHoldsOnlyTheCookiesHash(t *testing.T) {
	s, token, rdb, _ := start(t, time.Hour)
	ctx := context.Background()
	if len(token) != 43 { // 256 random bits, base64url
		t.Fatalf("cookie value %q: want 43 characters", token)
	}
	keys, err := rdb.Keys(ctx, "auth:sso:{*").Result() // the session (the user's index holds its ID too)
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys %v, %v: want one", keys, err)
	}
	v, _ := rdb.Get(ctx, keys[0]).Result()
	if strings.Contains(keys[0], token) || strings.Contains(v, token) {
		t.Fatalf("Redis holds the cookie value: %s = %s", keys[0], v)
	}
	stored := strings.TrimSuffix(strings.TrimPrefix(keys[0], "auth:sso:{"), "}")
	if got, err := s.Get(ctx, stored); err != nil || got != nil {
		t.Fatalf("what Redis holds worked as a cookie: %+v, %v", got, err)
	}
	got, err := s.Get(ctx, token)
	if err != nil || got == nil || got.UserID != "user-1" || !got.AuthTime.Equal(time.Unix(1_700_000_000, 0)) {
		t.Fatalf("Get: %+v, %v", got, err)
	}
}

// A session ends with its lifetime in Redis too, not only in the browser's cookie: a copied cookie stops
// working.
func TestSession_EndsWithItsLifetime(t *testing.T) {
	s, token, rdb, _ := start(t, 500*time.Millisecond)
	ctx := context.Background()
	if got, _ := s.Get(ctx, token); got == nil {
		t.Fatal("a fresh session is missing")
	}
	testredis.EndLifetimes(t, rdb, "auth:sso:{*}", 500*time.Millisecond) // the lifetime passes
	if got, err := s.Get(ctx, token); err != nil || got != nil {
		t.Fatalf("after its lifetime: %+v, %v", got, err)
	}
}

func TestDelete_EndsTheSession(t *testing.T) {
	s, token, _, _ := start(t, time.Hour)
	ctx := context.Background()
	if err := s.Delete(ctx, token); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, token); err != nil || got != nil {
		t.Fatalf("after Delete: %+v, %v", got, err)
	}
}

// A cookie that names no session (empty, oversized, unknown, or a garbled record) is simply no session.
func TestGet_NoSession(t *testing.T) {
	s, token, rdb, _ := start(t, time.Hour)
	ctx := context.Background()
	keys, _ := rdb.Keys(ctx, "auth:sso:*").Result()
	if len(keys) != 1 {
		t.Fatalf("keys %v", keys)
	}
	rdb.Set(ctx, keys[0], "garbled", time.Hour)
	for _, cookie := range []string{"", strings.Repeat("a", 129), "unknown", token} {
		if got, err := s.Get(ctx, cookie); err != nil || got != nil {
			t.Errorf("cookie %.20q: %+v, %v", cookie, got, err)
		}
	}
}

// A store that cannot answer is ErrUnavailable (the page answers 503), never "no session" (which would
// ask a signed-in user to sign in again) and never a bare error.
func TestStoreDown_ErrUnavailable(t *testing.T) {
	s, token, _, srv := start(t, time.Hour)
	ctx := context.Background()
	srv.Stop()
	if _, err := s.Get(ctx, token); !errors.Is(err, sso.ErrUnavailable) {
		t.Errorf("Get: %v", err)
	}
	if _, err := s.Create(ctx, "user-1", time.Now(), time.Hour); !errors.Is(err, sso.ErrUnavailable) {
		t.Errorf("Create: %v", err)
	}
	if err := s.Delete(ctx, token); !errors.Is(err, sso.ErrUnavailable) {
		t.Errorf("Delete: %v", err)
	}
}

// A session keeps the sign-in's authentication methods (amr); a session stored before they were kept
// ("user|auth time") still reads, with none.
func TestStart_KeepsTheAuthenticationMethods(t *testing.T) {
	s, old, _, _ := start(t, time.Hour)
	ctx := context.Background()
	at := time.Unix(1_700_000_100, 0).UTC()
	token, err := s.Start(ctx, sso.Start{UserID: "user-2", AuthTime: at, AMR: []string{"hwk", "mfa"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, token)
	if err != nil || got == nil || got.UserID != "user-2" || !got.AuthTime.Equal(at) || strings.Join(got.AMR, " ") != "hwk mfa" {
		t.Fatalf("got %+v, %v", got, err)
	}
	got, err = s.Get(ctx, old)
	if err != nil || got == nil || got.UserID != "user-1" || len(got.AMR) != 0 {
		t.Fatalf("a session without amr: %+v, %v", got, err)
	}
}

// ASVS 3.3.2: a session not used for the idle timeout ends; each use starts the timeout again, never
// past the absolute lifetime.
func TestSession_IdleTimeout_SlidesOnUseUntilTheAbsoluteEnd(t *testing.T) {
	srv := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	const idle, lifetime = 10 * time.Minute, 24 * time.Hour
	s := sso.New(rdb).WithIdle(func() time.Duration { return idle })
	ctx := context.Background()
	start := func() (string, string) {
		token, err := s.Create(ctx, "user-1", time.Now(), lifetime)
		if err != nil {
			t.Fatal(err)
		}
		return token, "auth:sso:{" + sso.ID(token) + "}"
	}

	// Unused for the idle timeout: its records live no longer than that, and then it is gone.
	unused, _ := start()
	testredis.EndLifetimes(t, rdb, "auth:sso*{"+sso.ID(unused)+"}*", idle)
	if got, err := s.Get(ctx, unused); err != nil || got != nil {
		t.Fatalf("after the idle timeout: %+v, %v", got, err)
	}

	// Used: the timeout starts again (here from 1 s left back to the idle timeout).
	used, key := start()
	rdb.PExpire(ctx, key, time.Second)
	if got, err := s.Get(ctx, used); err != nil || got == nil {
		t.Fatalf("a session in use: %+v, %v", got, err)
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= time.Second || ttl > idle {
		t.Fatalf("after a use the session lives %v, want the idle timeout %v", ttl, idle)
	}

	// Near its absolute end, a use does not extend it past that end.
	rdb.HSet(ctx, "auth:sso-meta:{"+sso.ID(used)+"}", "ends", time.Now().Add(2*time.Minute).UnixMilli())
	if got, _ := s.Get(ctx, used); got == nil {
		t.Fatal("a session before its absolute end is gone")
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl > 2*time.Minute {
		t.Fatalf("a use extended the session to %v, past its absolute end (2m)", ttl)
	}
	// Past its absolute end, a use finds nothing, whatever the idle timeout.
	rdb.HSet(ctx, "auth:sso-meta:{"+sso.ID(used)+"}", "ends", time.Now().Add(-time.Second).UnixMilli())
	if got, err := s.Get(ctx, used); err != nil || got != nil {
		t.Fatalf("after the absolute end: %+v, %v", got, err)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Fatal("the session record outlived its absolute end")
	}
}
