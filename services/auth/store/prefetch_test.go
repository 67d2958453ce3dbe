package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/ory/fosite"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/store"
	"github.com/formsservice/formsservice/services/auth/throttle"
)

// newStoreAndRedis is newStore with its Redis client, for the prefetch's pipeline.
func newStoreAndRedis(t *testing.T) (*store.Store, *redis.Client) { return newStoreOn(t, nil) }

// prefetched is a token request's context after its prefetch of sig ("rt" or "code").
func prefetched(t *testing.T, s *store.Store, rdb *redis.Client, kind, sig string) context.Context {
	t.Helper()
	ctx := store.WithRequestMemo(context.Background())
	var pf *store.Prefetch
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if kind == "rt" {
			pf = s.QueueRefresh(ctx, p, sig)
		} else {
			pf = s.QueueCode(ctx, p, sig)
		}
		return nil
	})
	pf.Keep(ctx)
	return ctx
}

// codeFamily writes a family's code and PKCE challenge, as the authorize step does, and loads the
// prefetch's scripts (a first EVALSHA answers NOSCRIPT: that request reads as without a prefetch).
func codeFamily(t *testing.T, s *store.Store, rdb *redis.Client) (family, sig string) {
	t.Helper()
	ctx := context.Background()
	family = uuid.NewString()
	sig = family + "~codesig"
	pk := request(family)
	pk.Form.Set("code_challenge", "challenge")
	if err := s.CreateAuthorizeCodeSession(ctx, sig, request(family)); err != nil {
		t.Fatal(err)
	}
	if err := s.CreatePKCERequestSession(ctx, sig, pk); err != nil {
		t.Fatal(err)
	}
	prefetched(t, s, rdb, "code", sig)
	prefetched(t, s, rdb, "rt", sig)
	return family, sig
}

// exchangeUnit is what fosite does after its reads in a code exchange: the PKCE challenge is deleted
// (checked), then the code is claimed with the tokens written, in one unit.
func exchangeUnit(ctx context.Context, s *store.Store, family, sig string) error {
	if _, err := s.GetAuthorizeCodeSession(ctx, sig, &session{}); err != nil {
		return err
	}
	if _, err := s.GetPKCERequestSession(ctx, sig, nil); err != nil {
		return err
	}
	if err := s.DeletePKCERequestSession(ctx, sig); err != nil {
		return err
	}
	tx, _ := s.BeginTX(ctx)
	if err := s.InvalidateAuthorizeCodeSession(tx, sig); err != nil {
		return err
	}
	if err := s.CreateAccessTokenSession(tx, family+"~at-"+uuid.NewString(), request(family)); err != nil {
		return err
	}
	return s.Commit(tx)
}

// A refresh token rotated by a concurrent refresh after this request's prefetch read it: the read
// answers from the prefetch, and the rotation's claim, which reads the record again with its writes,
// finds it rotated: reuse, and the family is revoked.
func TestPrefetch_RefreshRotatedMeanwhile_IsReuseAndRevokes(t *testing.T) {
	s, rdb := newStoreAndRedis(t)
	family, _ := codeFamily(t, s, rdb)
	ctx := context.Background()
	if err := s.CreateRefreshTokenSession(ctx, family+"~rt1", "", request(family)); err != nil {
		t.Fatal(err)
	}
	mine := prefetched(t, s, rdb, "rt", family+"~rt1")

	other, _ := s.BeginTX(ctx)
	if err := s.RotateRefreshToken(other, "", family+"~rt1"); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRefreshTokenSession(other, family+"~rt2", "", request(family)); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(other); err != nil {
		t.Fatalf("the concurrent refresh: %v", err)
	}

	if _, err := s.GetRefreshTokenSession(mine, family+"~rt1", nil); err != nil {
		t.Fatalf("the prefetched read: %v (want it answered from the prefetch)", err)
	}
	tx, _ := s.BeginTX(mine)
	_ = s.RotateRefreshToken(tx, "", family+"~rt1")
	_ = s.CreateRefreshTokenSession(tx, family+"~rt3", "", request(family))
	if err := s.Commit(tx); !errors.Is(err, store.ErrReplay) {
		t.Fatalf("rotation of a token rotated meanwhile: %v, want ErrReplay", err)
	}
	if revoked, _ := s.FamilyRevoked(ctx, family); !revoked {
		t.Fatal("reuse did not revoke the family")
	}
}

// A code used by a concurrent exchange after this request's prefetch: this exchange's claim is the
// replay, and revokes the family; so is one whose PKCE challenge another request checked meanwhile (a
// wrong verifier), as the read that marks it checked made it before.
func TestPrefetch_CodeUsedOrChallengeCheckedMeanwhile_IsReplayAndRevokes(t *testing.T) {
	for _, meanwhile := range []string{"code used", "challenge checked"} {
		t.Run(meanwhile, func(t *testing.T) {
			s, rdb := newStoreAndRedis(t)
			family, sig := codeFamily(t, s, rdb)
			mine := prefetched(t, s, rdb, "code", sig)
			other := prefetched(t, s, rdb, "code", sig)
			if meanwhile == "code used" {
				if err := exchangeUnit(other, s, family, sig); err != nil {
					t.Fatalf("the concurrent exchange: %v", err)
				}
			} else {
				// Its verifier is wrong: fosite stops after the delete, and the request settles.
				if _, err := s.GetPKCERequestSession(other, sig, nil); err != nil {
					t.Fatal(err)
				}
				if err := s.DeletePKCERequestSession(other, sig); err != nil {
					t.Fatal(err)
				}
				if err := s.SettleChecks(other); err != nil {
					t.Fatal(err)
				}
			}
			if err := exchangeUnit(mine, s, family, sig); !errors.Is(err, store.ErrReplay) {
				t.Fatalf("exchange after the %s: %v, want ErrReplay", meanwhile, err)
			}
			if revoked, _ := s.FamilyRevoked(context.Background(), family); !revoked {
				t.Fatal("the replay did not revoke the family")
			}
		})
	}
}

// The prefetch writes nothing: reading a used code, a rotated refresh token or a code whose challenge
// is then checked revokes no family and marks nothing; only the read fosite then asks for (not answered
// from the prefetch) detects the replay and revokes, as without a prefetch.
func TestPrefetch_IsAPureRead(t *testing.T) {
	s, rdb := newStoreAndRedis(t)
	ctx := context.Background()

	family, sig := codeFamily(t, s, rdb)
	for range 3 {
		prefetched(t, s, rdb, "code", sig)
	}
	// Unused, unchecked: an exchange without a prefetch succeeds (its challenge was not marked).
	if err := exchangeUnit(store.WithRequestMemo(ctx), s, family, sig); err != nil {
		t.Fatalf("exchange after three prefetches: %v", err)
	}
	replay := prefetched(t, s, rdb, "code", sig)
	if revoked, _ := s.FamilyRevoked(ctx, family); revoked {
		t.Fatal("the prefetch of a used code revoked the family")
	}
	if _, err := s.GetAuthorizeCodeSession(replay, sig, &session{}); !errors.Is(err, fosite.ErrInvalidatedAuthorizeCode) {
		t.Fatalf("replayed code: %v", err)
	}
	if revoked, _ := s.FamilyRevoked(ctx, family); !revoked {
		t.Fatal("the replay's read did not revoke the family")
	}

	family2, _ := codeFamily(t, s, rdb)
	if err := s.CreateRefreshTokenSession(ctx, family2+"~rt1", "", request(family2)); err != nil {
		t.Fatal(err)
	}
	tx, _ := s.BeginTX(ctx)
	_ = s.RotateRefreshToken(tx, "", family2+"~rt1")
	_ = s.CreateRefreshTokenSession(tx, family2+"~rt2", "", request(family2))
	if err := s.Commit(tx); err != nil {
		t.Fatal(err)
	}
	reuse := prefetched(t, s, rdb, "rt", family2+"~rt1")
	if revoked, _ := s.FamilyRevoked(ctx, family2); revoked {
		t.Fatal("the prefetch of a rotated refresh token revoked the family")
	}
	if _, err := s.GetRefreshTokenSession(reuse, family2+"~rt1", nil); !errors.Is(err, fosite.ErrInactiveToken) {
		t.Fatalf("reused refresh token: %v", err)
	}
	if revoked, _ := s.FamilyRevoked(ctx, family2); !revoked {
		t.Fatal("the reuse's read did not revoke the family")
	}
}

// On a single server a code exchange's unit counts the user's rate limit first; at the limit it writes
// nothing: the code stays unused and its challenge unchecked, and the next try after the window works.
func TestUnitRate_AtTheLimit_WritesNothing(t *testing.T) {
	s, rdb := newStoreAndRedis(t)
	if !s.CountsRatesInUnit() {
		t.Fatal("a single server counts rates in the unit")
	}
	family, sig := codeFamily(t, s, rdb)
	rate := throttle.Rate{Kind: "token-user", Who: "user-1", Limit: 2, Window: time.Minute}
	for i := range 2 { // two other requests of the user's
		if wait, err := throttle.New(rdb, nil).Allow(context.Background(), rate.Kind, rate.Who, rate.Limit, rate.Window); err != nil || wait != 0 {
			t.Fatal(i, wait, err)
		}
	}
	ctx := prefetched(t, s, rdb, "code", sig)
	store.WithUnitRate(ctx, rate)
	var refused *store.RateRefusal
	if err := exchangeUnit(ctx, s, family, sig); !errors.As(err, &refused) || refused.Wait <= 0 || refused.Wait > time.Minute {
		t.Fatalf("at the limit: %v", err)
	}
	if n, _ := rdb.Get(context.Background(), rate.Key()).Int(); n != 2 {
		t.Fatalf("a refused unit counted: %d", n)
	}
	testredis.EndLifetimes(t, rdb, rate.Key(), time.Minute)
	again := prefetched(t, s, rdb, "code", sig)
	store.WithUnitRate(again, rate)
	if err := exchangeUnit(again, s, family, sig); err != nil {
		t.Fatalf("after the window: %v", err)
	}
	if n, _ := rdb.Get(context.Background(), rate.Key()).Int(); n != 1 {
		t.Fatalf("the unit counted %d, want 1", n)
	}
}

// prefetchedWithUser is a refresh's context after its prefetch of sig with the user its record names
// (users' keys: "user:" + id), on a server that knows the script (a first EVALSHA answers NOSCRIPT and
// loads it, as in production).
func prefetchedWithUser(t *testing.T, s *store.Store, rdb *redis.Client, sig string) context.Context {
	t.Helper()
	var ctx context.Context
	for range 2 {
		ctx = store.WithRequestMemo(context.Background())
		var pf *store.Prefetch
		_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			pf = s.QueueRefreshAndUser(ctx, p, sig, "user:", "")
			return nil
		})
		pf.Keep(ctx)
	}
	return ctx
}

// On a single server a refresh's prefetch reads the user its record names with the record (D45): the
// user's hash as it is (empty for a user who is gone), answered once and only for that subject; a
// rotated token or a revoked family answers none, and a record written before its subject led the
// record is read as before, without its user.
func TestPrefetch_RefreshReadsItsUser(t *testing.T) {
	s, rdb := newStoreAndRedis(t)
	ctx := context.Background()
	family, _ := codeFamily(t, s, rdb)
	if err := s.CreateRefreshTokenSession(ctx, family+"~rt1", "", request(family)); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, "user:user-1", "id", "user-1", "email", "a@example.com").Err(); err != nil {
		t.Fatal(err)
	}
	mine := prefetchedWithUser(t, s, rdb, family+"~rt1")
	if _, ok := s.PrefetchedUser(mine, "user-2"); ok {
		t.Fatal("answered a user for another subject")
	}
	mine = prefetchedWithUser(t, s, rdb, family+"~rt1")
	fields, ok := s.PrefetchedUser(mine, "user-1")
	if !ok || fields["id"] != "user-1" || fields["email"] != "a@example.com" {
		t.Fatalf("the user: %v %v", fields, ok)
	}
	if _, ok := s.PrefetchedUser(mine, "user-1"); ok {
		t.Fatal("answered twice")
	}
	if _, err := s.GetRefreshTokenSession(mine, family+"~rt1", nil); err != nil {
		t.Fatalf("the record from the same prefetch: %v", err)
	}

	if err := rdb.Del(ctx, "user:user-1").Err(); err != nil {
		t.Fatal(err)
	}
	if fields, ok := s.PrefetchedUser(prefetchedWithUser(t, s, rdb, family+"~rt1"), "user-1"); !ok || len(fields) != 0 {
		t.Fatalf("a user who is gone: %v %v, want an empty answer", fields, ok)
	}

	tx, _ := s.BeginTX(ctx)
	_ = s.RotateRefreshToken(tx, "", family+"~rt1")
	_ = s.CreateRefreshTokenSession(tx, family+"~rt2", "", request(family))
	if err := s.Commit(tx); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.PrefetchedUser(prefetchedWithUser(t, s, rdb, family+"~rt1"), "user-1"); ok {
		t.Fatal("a rotated token answered its user")
	}
	if err := s.RevokeFamily(ctx, family); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.PrefetchedUser(prefetchedWithUser(t, s, rdb, family+"~rt2"), "user-1"); ok {
		t.Fatal("a revoked family answered its user")
	}

	// A record as written before D45 (no subject in front): no user, the record still read.
	family3, _ := codeFamily(t, s, rdb)
	if err := s.CreateRefreshTokenSession(ctx, family3+"~rt1", "", request(family3)); err != nil {
		t.Fatal(err)
	}
	key := "auth:{" + family3 + "}:rt"
	v, err := rdb.Get(ctx, key).Result()
	if err != nil || !strings.Contains(v, `A{"sub":"user-1",`) {
		t.Fatalf("the record %q (%v): want its subject first", v, err)
	}
	if err := rdb.Set(ctx, key, strings.Replace(v, `{"sub":"user-1",`, `{`, 1), redis.KeepTTL).Err(); err != nil {
		t.Fatal(err)
	}
	old := prefetchedWithUser(t, s, rdb, family3+"~rt1")
	if _, ok := s.PrefetchedUser(old, "user-1"); ok {
		t.Fatal("answered a user for a record without its subject in front")
	}
	if r, err := s.GetRefreshTokenSession(old, family3+"~rt1", &session{}); err != nil || r.GetSession().GetSubject() != "user-1" {
		t.Fatalf("the old record: %v", err)
	}

	// A subject JSON escapes (not one we make, but a record must not be misread): no user, and the
	// hash of the subject cut at its escape is not read.
	family4, _ := codeFamily(t, s, rdb)
	odd := request(family4)
	odd.Session = &session{Sub: `we"ird`}
	if err := s.CreateRefreshTokenSession(ctx, family4+"~rt1", "", odd); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, `user:we\`, "id", `we\`).Err(); err != nil {
		t.Fatal(err)
	}
	escaped := prefetchedWithUser(t, s, rdb, family4+"~rt1")
	if _, ok := s.PrefetchedUser(escaped, `we\`); ok {
		t.Fatal("read the user named by the subject cut at its escape")
	}
	if _, ok := s.PrefetchedUser(escaped, `we"ird`); ok {
		t.Fatal("answered a user for a subject with an escape")
	}
}

// A refresh's unit counts the user's rate limit like an exchange's: at the limit it writes nothing,
// and the same refresh token works after the window.
func TestUnitRate_RefreshAtTheLimit_KeepsTheToken(t *testing.T) {
	s, rdb := newStoreAndRedis(t)
	ctx := context.Background()
	family, _ := codeFamily(t, s, rdb)
	if err := s.CreateRefreshTokenSession(ctx, family+"~rt1", "", request(family)); err != nil {
		t.Fatal(err)
	}
	rate := throttle.Rate{Kind: "token-user", Who: "user-1", Limit: 1, Window: time.Minute}
	if wait, err := throttle.New(rdb, nil).Allow(ctx, rate.Kind, rate.Who, rate.Limit, rate.Window); err != nil || wait != 0 {
		t.Fatal(wait, err)
	}
	refresh := func() error {
		rctx := prefetchedWithUser(t, s, rdb, family+"~rt1")
		store.WithUnitRate(rctx, rate)
		if _, err := s.GetRefreshTokenSession(rctx, family+"~rt1", &session{}); err != nil {
			return err
		}
		tx, _ := s.BeginTX(rctx)
		_ = s.RotateRefreshToken(tx, "", family+"~rt1")
		_ = s.CreateRefreshTokenSession(tx, family+"~rt2", "", request(family))
		return s.Commit(tx)
	}
	var refused *store.RateRefusal
	if err := refresh(); !errors.As(err, &refused) || refused.Wait <= 0 || refused.Wait > time.Minute {
		t.Fatalf("at the limit: %v", err)
	}
	testredis.EndLifetimes(t, rdb, rate.Key(), time.Minute)
	if err := refresh(); err != nil {
		t.Fatalf("the same token after the window: %v", err)
	}
	if n, _ := rdb.Get(ctx, rate.Key()).Int(); n != 1 {
		t.Fatalf("the unit counted %d, want 1", n)
	}
}
