package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/ory/fosite"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/store"
)

// boundedStore is a store whose users hold at most maxFamilies grants, with its Redis client.
func boundedStore(t *testing.T, maxFamilies int) (*store.Store, *redis.Client) {
	t.Helper()
	srv := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	cl := &fosite.DefaultClient{ID: "app"}
	return store.New(store.Options{
		Redis:      rdb,
		Client:     func(context.Context, string) (fosite.Client, error) { return cl, nil },
		NewSession: func() fosite.Session { return &session{} },
		Lifetimes: func() store.Lifetimes {
			return store.Lifetimes{Code: time.Minute, Access: time.Minute, Refresh: time.Hour, Family: 24 * time.Hour, MaxFamilies: maxFamilies}
		},
	}), rdb
}

// issueCode writes a code with its PKCE and OpenID Connect records in one unit, as the service does,
// started in session sess.
func issueCode(t *testing.T, ctx context.Context, s *store.Store, family, sess string) error {
	t.Helper()
	tx, _ := s.BeginTX(store.WithOrigin(ctx, store.Origin{Session: sess}))
	r := request(family)
	_ = s.CreateAuthorizeCodeSession(tx, family+"~code", r)
	_ = s.CreatePKCERequestSession(tx, family+"~code", r)
	_ = s.CreateOpenIDConnectSession(tx, family+"~code", r)
	return s.Commit(tx)
}

// exchange exchanges the family's code for an access token and a refresh token that expires in rtLife.
func exchange(t *testing.T, ctx context.Context, s *store.Store, family string, rtLife time.Duration) {
	t.Helper()
	tx, _ := s.BeginTX(ctx)
	r := request(family)
	r.Session.SetExpiresAt(fosite.RefreshToken, time.Now().Add(rtLife))
	_ = s.InvalidateAuthorizeCodeSession(tx, family+"~code")
	_ = s.CreateAccessTokenSession(tx, family+"~at", r)
	_ = s.CreateRefreshTokenSession(tx, family+"~rt", family+"~at", r)
	if err := s.Commit(tx); err != nil {
		t.Fatalf("exchange of %s: %v", family, err)
	}
}

// refresh rotates the family's refresh token rt into next, which expires in rtLife.
func refresh(t *testing.T, ctx context.Context, s *store.Store, family, rt, next string, rtLife time.Duration) {
	t.Helper()
	tx, _ := s.BeginTX(ctx)
	r := request(family)
	r.Session.SetExpiresAt(fosite.RefreshToken, time.Now().Add(rtLife))
	_ = s.RotateRefreshToken(tx, family, family+"~"+rt)
	_ = s.CreateAccessTokenSession(tx, family+"~at-"+next, r)
	_ = s.CreateRefreshTokenSession(tx, family+"~"+next, family+"~at-"+next, r)
	if err := s.Commit(tx); err != nil {
		t.Fatalf("refresh of %s: %v", family, err)
	}
}

func live(ctx context.Context, s *store.Store, family, rt string) bool {
	_, err := s.GetRefreshTokenSession(ctx, family+"~"+rt, nil)
	return err == nil
}

// Issue 22: reaching the bound deleted the user's oldest grants, started first, live or not, so that
// about a thousand page loads that each began a sign-in (a code never exchanged, or an access token
// that ended long ago) signed the user out of the apps they use. The bound now counts only what is
// live, and beyond it ends what ends first: codes and access-only grants before a refresh grant.
func TestGrantBound_UnusedCodesDoNotEndTheRefreshGrantInUse(t *testing.T) {
	s, _ := boundedStore(t, 3)
	ctx := context.Background()
	app := uuid.NewString()
	if err := issueCode(t, ctx, s, app, ""); err != nil {
		t.Fatal(err)
	}
	exchange(t, ctx, s, app, time.Hour)
	for range 10 { // page loads: a code each, never exchanged
		if err := issueCode(t, ctx, s, uuid.NewString(), ""); err != nil {
			t.Fatal(err)
		}
	}
	if !live(ctx, s, app, "rt") {
		t.Fatal("ten unused codes ended the grant in use: its refresh token is gone")
	}
	if n, err := s.SubjectFamilies(ctx, "user-1"); err != nil || n != 3 {
		t.Fatalf("index holds %d families (%v), want the bound 3", n, err)
	}
}

// Beyond the bound of live refresh grants, the one used longest ago goes (its end is the earliest), not
// the one started first and refreshed since.
func TestGrantBound_LeastRecentlyUsedGrantGoes(t *testing.T) {
	s, _ := boundedStore(t, 3)
	ctx := context.Background()
	a, b, c, d := uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
	for i, f := range []string{a, b, c} {
		if err := issueCode(t, ctx, s, f, ""); err != nil {
			t.Fatal(err)
		}
		exchange(t, ctx, s, f, time.Duration(i+1)*time.Hour) // a ends first, then b, then c
	}
	refresh(t, ctx, s, a, "rt", "rt2", 4*time.Hour) // a is used again: it now ends last
	if err := issueCode(t, ctx, s, d, ""); err != nil {
		t.Fatal(err)
	}
	exchange(t, ctx, s, d, 5*time.Hour)
	if !live(ctx, s, a, "rt2") {
		t.Error("the grant started first but refreshed last was ended")
	}
	if live(ctx, s, b, "rt") {
		t.Error("the grant used longest ago is still live beyond the bound")
	}
	if !live(ctx, s, c, "rt") || !live(ctx, s, d, "rt") {
		t.Error("a grant within the bound was ended")
	}
}

// Issue 22: evicting a grant deleted its code and tokens but not its PKCE record (keyed by the code's
// signature), so PKCE records grew with the rate of sign-ins, not with the bound. Every record of an
// evicted family goes now; only its revocation marker may stay.
func TestGrantBound_EvictedFamilyLeavesNoRecord(t *testing.T) {
	s, rdb := boundedStore(t, 2)
	ctx := context.Background()
	first := uuid.NewString()
	if err := issueCode(t, ctx, s, first, ""); err != nil {
		t.Fatal(err)
	}
	keys, _ := rdb.Keys(ctx, "auth:{"+first+"}:*").Result()
	if len(keys) != 3 { // code, pkce, oidc
		t.Fatalf("a code's records: %v, want 3", keys)
	}
	for range 2 {
		if err := issueCode(t, ctx, s, uuid.NewString(), ""); err != nil {
			t.Fatal(err)
		}
	}
	if keys, _ := rdb.Keys(ctx, "auth:{"+first+"}:*").Result(); len(keys) != 0 {
		t.Fatalf("the evicted family left %v", keys)
	}
	if _, err := s.GetPKCERequestSession(ctx, first+"~code", nil); !errors.Is(err, fosite.ErrNotFound) {
		t.Fatalf("PKCE record of an evicted family: %v", err)
	}
	// 200 sign-ins of one user: the records are the bound's, not the sign-ins'.
	for range 200 {
		if err := issueCode(t, ctx, s, uuid.NewString(), ""); err != nil {
			t.Fatal(err)
		}
	}
	if pkce, _ := rdb.Keys(ctx, "auth:{*}:pkce").Result(); len(pkce) != 2 {
		t.Fatalf("%d PKCE records after 203 sign-ins with a bound of 2", len(pkce))
	}
}

// Issue 22: a grant written while "sign out everywhere" ran (its sign-in checked before, its code
// stored after the user's grants were listed) escaped it and yielded tokens. The user's generation
// moves on in the step that lists the grants, and a code whose sign-in saw an older one is refused and
// revoked.
func TestRevokeSubject_CodeWrittenMeanwhile_RefusedAndRevoked(t *testing.T) {
	s, _ := boundedStore(t, 10)
	ctx := context.Background()
	before := uuid.NewString()
	if err := issueCode(t, ctx, s, before, "sess-1"); err != nil {
		t.Fatal(err)
	}
	// The sign-in of the racing request saw generation 0; its unit is written after the revocation.
	racing := uuid.NewString()
	tx, _ := s.BeginTX(store.WithOrigin(ctx, store.Origin{Session: "sess-1", Generation: 0}))
	_ = s.CreateAuthorizeCodeSession(tx, racing+"~code", request(racing))
	_ = s.CreatePKCERequestSession(tx, racing+"~code", request(racing))
	if n, err := s.RevokeSubject(ctx, "user-1"); err != nil || n != 1 {
		t.Fatalf("RevokeSubject: %d, %v; want the one grant listed", n, err)
	}
	if err := s.Commit(tx); !errors.Is(err, store.ErrSignedOut) {
		t.Fatalf("commit of a code after the sign-out everywhere: %v, want ErrSignedOut", err)
	}
	for _, f := range []string{before, racing} {
		if _, err := s.GetAuthorizeCodeSession(ctx, f+"~code", &session{}); err == nil {
			t.Errorf("code of %s still usable after the sign-out everywhere", f)
		}
	}
	// A sign-in after the sign-out sees the new generation and gets its code.
	gen, err := s.Generations.Of(ctx, "user-1")
	if err != nil || gen != 1 {
		t.Fatalf("generation %d, %v; want 1", gen, err)
	}
	after := uuid.NewString()
	tx, _ = s.BeginTX(store.WithOrigin(ctx, store.Origin{Session: "sess-2", Generation: gen}))
	_ = s.CreateAuthorizeCodeSession(tx, after+"~code", request(after))
	if err := s.Commit(tx); err != nil {
		t.Fatalf("a sign-in after the sign-out: %v", err)
	}
	if _, err := s.GetAuthorizeCodeSession(ctx, after+"~code", &session{}); err != nil {
		t.Fatalf("its code: %v", err)
	}
}

// Issue 22: a code written while logout ran (the authorize checked the session before, its code was
// stored after logout listed the session's grants) escaped the logout and yielded tokens. The session is
// marked ended in the step that lists its grants, and a code of it registered later is refused and
// revoked; the user's other sessions are not affected.
func TestEndSession_CodeWrittenMeanwhile_RefusedAndRevoked(t *testing.T) {
	s, rdb := boundedStore(t, 10)
	ctx := context.Background()
	before := uuid.NewString()
	if err := issueCode(t, ctx, s, before, "sess-1"); err != nil {
		t.Fatal(err)
	}
	racing := uuid.NewString()
	tx, _ := s.BeginTX(store.WithOrigin(ctx, store.Origin{Session: "sess-1"}))
	_ = s.CreateAuthorizeCodeSession(tx, racing+"~code", request(racing))
	_ = s.CreatePKCERequestSession(tx, racing+"~code", request(racing))
	families, err := s.EndSession(ctx, "user-1", "sess-1", time.Hour)
	if err != nil || !slices.Equal(families, []string{before}) {
		t.Fatalf("EndSession: %v, %v; want the one grant written before", families, err)
	}
	if err := s.RevokeFamilies(ctx, families); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(tx); !errors.Is(err, store.ErrSessionEnded) {
		t.Fatalf("commit of a code after the logout: %v, want ErrSessionEnded", err)
	}
	for _, f := range []string{before, racing} {
		if _, err := s.GetAuthorizeCodeSession(ctx, f+"~code", &session{}); err == nil {
			t.Errorf("code of %s still usable after the logout", f)
		}
	}
	// Another session of the user still gets its codes.
	other := uuid.NewString()
	if err := issueCode(t, ctx, s, other, "sess-2"); err != nil {
		t.Fatalf("a code of the user's other session: %v", err)
	}
	if _, err := s.GetAuthorizeCodeSession(ctx, other+"~code", &session{}); err != nil {
		t.Fatalf("its code: %v", err)
	}
	// The mark lasts as long as the session could have, and no longer.
	ttl, err := rdb.PTTL(ctx, "auth:subject:{user-1}:ended").Result()
	if err != nil || ttl <= 59*time.Minute || ttl > time.Hour {
		t.Fatalf("the ended sessions' TTL %v, %v; want the session lifetime (1h)", ttl, err)
	}
}

// Logout finds every grant a session started, whatever their number (the session's own list kept 256),
// and those of the user's other sessions are not among them.
func TestEndSession_EveryGrantOfTheSession(t *testing.T) {
	s, _ := boundedStore(t, 1000)
	ctx := context.Background()
	var mine []string
	for i := range 400 {
		f := uuid.NewString()
		sess := "sess-a"
		if i%4 == 3 {
			sess = "sess-b"
		} else {
			mine = append(mine, f)
		}
		if err := issueCode(t, ctx, s, f, sess); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.EndSession(ctx, "user-1", "sess-a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	slices.Sort(mine)
	if !slices.Equal(got, mine) {
		t.Fatalf("session's grants: %d listed, want its %d", len(got), len(mine))
	}
	// A second sign-in step replaces the session: its grants go with it.
	if err := s.MoveSession(ctx, "user-1", "sess-a", "sess-c"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.EndSession(ctx, "user-1", "sess-c", time.Hour); len(got) != len(mine) {
		t.Fatalf("after the move: %d, want %d", len(got), len(mine))
	}
}
