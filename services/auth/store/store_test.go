package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/ory/fosite"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/store"
)

// session is a minimal fosite session that round-trips through JSON.
type session struct {
	Sub string                         `json:"sub"`
	Exp map[fosite.TokenType]time.Time `json:"exp"`
}

func (s *session) SetExpiresAt(t fosite.TokenType, e time.Time) {
	if s.Exp == nil {
		s.Exp = map[fosite.TokenType]time.Time{}
	}
	s.Exp[t] = e
}
func (s *session) GetExpiresAt(t fosite.TokenType) time.Time { return s.Exp[t] }
func (s *session) GetUsername() string                       { return "" }
func (s *session) GetSubject() string                        { return s.Sub }
func (s *session) Clone() fosite.Session                     { c := *s; return &c }

func newStore(t *testing.T) *store.Store { return newStoreWith(t, nil) }

func newStoreWith(t *testing.T, onReplay func(ctx context.Context, kind, family string)) *store.Store {
	s, _ := newStoreOn(t, onReplay)
	return s
}

// newStoreOn is newStoreWith with its Redis client (the prefetch tests queue on it).
func newStoreOn(t *testing.T, onReplay func(ctx context.Context, kind, family string)) (*store.Store, *redis.Client) {
	srv := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	cl := &fosite.DefaultClient{ID: "app"}
	return store.New(store.Options{
		Redis: rdb,
		Client: func(_ context.Context, id string) (fosite.Client, error) {
			if id == cl.ID {
				return cl, nil
			}
			return nil, fosite.ErrNotFound
		},
		NewSession: func() fosite.Session { return &session{} },
		Lifetimes: func() store.Lifetimes {
			return store.Lifetimes{Code: time.Minute, Access: time.Minute, Refresh: time.Hour}
		},
		OnReplay: onReplay,
	}), rdb
}

func request(family string) *fosite.Request {
	r := fosite.NewRequest()
	r.ID = family
	r.Client = &fosite.DefaultClient{ID: "app"}
	r.Session = &session{Sub: "user-1"}
	r.GrantedScope = fosite.Arguments{"openid"}
	return r
}

func TestInvalidateCode_Concurrent_ExactlyOneWinsAndReplayRevokes(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	family := uuid.NewString()
	sig := family + "~codesig"
	if err := s.CreateAuthorizeCodeSession(ctx, sig, request(family)); err != nil {
		t.Fatal(err)
	}
	const n = 16
	var wg sync.WaitGroup
	results := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = s.InvalidateAuthorizeCodeSession(ctx, sig) }()
	}
	wg.Wait()
	ok := 0
	for _, err := range results {
		if err == nil {
			ok++
		} else if !errors.Is(err, store.ErrReplay) {
			t.Fatalf("invalidate: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d callers used the code, want 1", ok)
	}
	if revoked, _ := s.FamilyRevoked(ctx, family); !revoked {
		t.Fatal("a second use must revoke the family")
	}
	r, err := s.GetAuthorizeCodeSession(ctx, sig, nil)
	if !errors.Is(err, fosite.ErrInvalidatedAuthorizeCode) || r == nil || r.GetID() != family {
		t.Fatalf("used code: %v %v", r, err)
	}
}

func TestRotateRefresh_Concurrent_OneWinsOthersRevokeFamily(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	family := uuid.NewString()
	rt, at := family+"~rt1", family+"~at1"
	if err := s.CreateAccessTokenSession(ctx, at, request(family)); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRefreshTokenSession(ctx, rt, at, request(family)); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetRefreshTokenSession(ctx, rt, nil); err != nil || got.GetSession().GetSubject() != "user-1" || got.GetClient().GetID() != "app" {
		t.Fatalf("stored refresh token: %v %v", got, err)
	}
	var wg sync.WaitGroup
	results := make([]error, 10)
	for i := range results {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = s.RotateRefreshToken(ctx, family, rt) }()
	}
	wg.Wait()
	ok := 0
	for _, err := range results {
		if err == nil {
			ok++
		}
	}
	if ok != 1 {
		t.Fatalf("%d rotations succeeded, want 1", ok)
	}
	if _, err := s.GetAccessTokenSession(ctx, at, nil); !errors.Is(err, fosite.ErrNotFound) {
		t.Fatalf("access token of a revoked family: %v", err)
	}
	// A token written after the revocation (a request that was in flight) is dead too.
	if err := s.CreateRefreshTokenSession(ctx, family+"~rt2", at, request(family)); err != nil {
		t.Fatal(err)
	}
	if r, err := s.GetRefreshTokenSession(ctx, family+"~rt2", nil); !errors.Is(err, fosite.ErrInactiveToken) || r.GetID() != family {
		t.Fatalf("late refresh token: %v", err)
	}
}

func TestFamily_MalformedSignatures_NotFound(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for _, sig := range []string{"", "~", "nofamily", "~sig", "fam~", "{x}~sig", "abc*~sig", "ab\ncd~sig", "zz~sig"} {
		if _, err := s.GetRefreshTokenSession(ctx, sig, nil); !errors.Is(err, fosite.ErrNotFound) {
			t.Errorf("%q: %v", sig, err)
		}
		if _, err := s.GetAccessTokenSession(ctx, sig, nil); !errors.Is(err, fosite.ErrNotFound) {
			t.Errorf("%q: %v", sig, err)
		}
		if err := s.CreateAccessTokenSession(ctx, sig, request(uuid.NewString())); err == nil {
			t.Errorf("%q: stored a token without a family", sig)
		}
	}
}

func TestStore_RedisDown_ErrUnavailable(t *testing.T) {
	srv := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer rdb.Close()
	s := store.New(store.Options{Redis: rdb, Lifetimes: func() store.Lifetimes { return store.Lifetimes{Refresh: time.Hour} },
		NewSession: func() fosite.Session { return &session{} }})
	srv.Kill()
	family := uuid.NewString()
	if _, err := s.GetRefreshTokenSession(context.Background(), family+"~x", nil); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("get with Redis down: %v", err)
	}
	if err := s.RotateRefreshToken(context.Background(), family, family+"~x"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("rotate with Redis down: %v", err)
	}
}

// TestUnit_FailedClaimWritesNothing: a refresh whose token was already rotated writes none of its new
// tokens, and revokes the family.
func TestUnit_FailedClaimWritesNothing(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	family := uuid.NewString()
	if err := s.CreateRefreshTokenSession(ctx, family+"~old", "", request(family)); err != nil {
		t.Fatal(err)
	}
	if err := s.RotateRefreshToken(ctx, family, family+"~old"); err != nil {
		t.Fatal(err)
	}
	tx, _ := s.BeginTX(ctx)
	_ = s.RotateRefreshToken(tx, family, family+"~old")
	_ = s.CreateAccessTokenSession(tx, family+"~newat", request(family))
	_ = s.CreateRefreshTokenSession(tx, family+"~newrt", family+"~newat", request(family))
	if _, err := s.GetRefreshTokenSession(ctx, family+"~newrt", nil); !errors.Is(err, fosite.ErrNotFound) {
		t.Fatalf("a buffered write is visible before the commit: %v", err)
	}
	if err := s.Commit(tx); !errors.Is(err, store.ErrReplay) {
		t.Fatalf("commit of a reused token: %v", err)
	}
	if _, err := s.GetRefreshTokenSession(ctx, family+"~newrt", nil); !errors.Is(err, fosite.ErrNotFound) {
		t.Fatalf("the failed unit wrote a refresh token: %v", err)
	}
	if revoked, _ := s.FamilyRevoked(ctx, family); !revoked {
		t.Fatal("reuse must revoke the family")
	}
	// A unit may not mix families.
	tx, _ = s.BeginTX(ctx)
	_ = s.CreateAccessTokenSession(tx, uuid.NewString()+"~a", request(family))
	_ = s.CreateAccessTokenSession(tx, uuid.NewString()+"~b", request(family))
	if err := s.Commit(tx); err == nil {
		t.Fatal("a unit spanning two families committed")
	}
}

// TestReplayRead_RevokesFamilyItself proves that the read which detects a replayed code or refresh token
// has revoked the family by the time it answers: fosite answers invalid_grant for a replayed code even
// when its own follow-up revocation fails, so the store must not depend on that call.
func TestReplayRead_RevokesFamilyItself(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		create  func(s *store.Store, family, sig string) error
		retire  func(s *store.Store, family, sig string) error
		read    func(s *store.Store, sig string) (fosite.Requester, error)
		errUsed error
	}{
		{
			name: "code",
			create: func(s *store.Store, family, sig string) error {
				return s.CreateAuthorizeCodeSession(ctx, sig, request(family))
			},
			retire: func(s *store.Store, _, sig string) error { return s.InvalidateAuthorizeCodeSession(ctx, sig) },
			read: func(s *store.Store, sig string) (fosite.Requester, error) {
				return s.GetAuthorizeCodeSession(ctx, sig, nil)
			},
			errUsed: fosite.ErrInvalidatedAuthorizeCode,
		},
		{
			name: "refresh token",
			create: func(s *store.Store, family, sig string) error {
				return s.CreateRefreshTokenSession(ctx, sig, "", request(family))
			},
			retire: func(s *store.Store, family, sig string) error { return s.RotateRefreshToken(ctx, family, sig) },
			read: func(s *store.Store, sig string) (fosite.Requester, error) {
				return s.GetRefreshTokenSession(ctx, sig, nil)
			},
			errUsed: fosite.ErrInactiveToken,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var replays []string
			s := newStoreWith(t, func(_ context.Context, kind, family string) { replays = append(replays, kind+" "+family) })
			family := uuid.NewString()
			sig := family + "~sig"
			if err := tc.create(s, family, sig); err != nil {
				t.Fatal(err)
			}
			if _, err := tc.read(s, sig); err != nil {
				t.Fatalf("first read: %v", err)
			}
			// The family's records name its user and client (what the audit trail's replay event reads).
			if sub, cl, err := s.FamilyOwner(ctx, family); err != nil || sub != "user-1" || cl != "app" {
				t.Errorf("owner of the family: %q %q %v, want user-1 app", sub, cl, err)
			}
			if err := tc.retire(s, family, sig); err != nil {
				t.Fatal(err)
			}
			if revoked, err := s.FamilyRevoked(ctx, family); err != nil || revoked {
				t.Fatalf("revoked after a normal use: %v %v", revoked, err)
			}
			for range 2 {
				r, err := tc.read(s, sig)
				if !errors.Is(err, tc.errUsed) || r == nil || r.GetID() != family {
					t.Fatalf("replayed read: %v %v, want %v with the family", r, err, tc.errUsed)
				}
			}
			if revoked, err := s.FamilyRevoked(ctx, family); err != nil || !revoked {
				t.Fatalf("family revoked after the replayed read (no other call): %v %v, want true", revoked, err)
			}
			if len(replays) != 1 || !strings.HasSuffix(replays[0], " "+family) {
				t.Errorf("replays reported %v, want one of family %s (the second read meets a revoked family)", replays, family)
			}

		})
	}
}
