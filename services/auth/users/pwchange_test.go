package users_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/users"
)

// The mark that a password must change stays through a hash upgrade at sign-in (the same password) and
// goes with a new password; marking an account that is gone changes nothing.
func TestMarkPasswordChange_KeptByARehash_ClearedByANewPassword(t *testing.T) {
	srv := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	old := users.NewStore(rdb, users.NewHasher(cheap, 1))
	u, err := old.Create(ctx, "ada@example.com", "", "password")
	if err != nil {
		t.Fatal(err)
	}
	if err := old.MarkPasswordChange(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	s := users.NewStore(rdb, users.NewHasher(users.Params{MemoryKiB: 128, Iterations: 2, Parallelism: 1}, 1))
	got, err := s.Authenticate(ctx, "ada@example.com", "password") // upgrades the hash
	if err != nil || !got.MustChangePassword {
		t.Fatalf("signed in: %v, marked %v", err, got != nil && got.MustChangePassword)
	}
	if got, _ = s.ByID(ctx, u.ID); !got.MustChangePassword {
		t.Fatal("the hash upgrade cleared the mark")
	}
	if set, err := s.SetPassword(ctx, "ada@example.com", "correct horse battery staple"); err != nil || set.MustChangePassword {
		t.Fatalf("set: %v %+v", err, set)
	}
	if got, _ = s.ByID(ctx, u.ID); got.MustChangePassword {
		t.Fatal("a new password kept the mark")
	}
	if err := s.MarkPasswordChange(ctx, "no-such-user"); !errors.Is(err, users.ErrNotFound) {
		t.Fatalf("marking nobody: %v", err)
	}
	if n, _ := rdb.Exists(ctx, "auth:user:{no-such-user}").Result(); n != 0 {
		t.Fatal("marking nobody made a record")
	}
}
