package users_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/users"
)

// Groups are added and removed on the account in Redis, kept sorted without duplicates, read back with
// the user (by ID and by address), bounded, and validated before anything is written.
func TestGroups_AddRemoveReadBack(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	if _, err := s.Create(ctx, "ada@example.com", "Ada", "a long password"); err != nil {
		t.Fatal(err)
	}
	u, n, err := s.AddGroups(ctx, "ADA@example.com", []string{"ops", "system:masters", "org/team", "ops"})
	if err != nil || !slices.Equal(n, []string{"ops", "system:masters", "org/team"}) || !slices.Equal(u.Groups, []string{"ops", "org/team", "system:masters"}) {
		t.Fatalf("add: %v %v %v", u, n, err)
	}
	if _, n, err = s.AddGroups(ctx, "ada@example.com", []string{"ops", "a.b-c_d+e@f"}); err != nil || !slices.Equal(n, []string{"a.b-c_d+e@f"}) {
		t.Fatalf("add again: %v %v", n, err)
	}
	got, err := s.ByEmail(ctx, "ada@example.com")
	if err != nil || !slices.Equal(got.Groups, []string{"a.b-c_d+e@f", "ops", "org/team", "system:masters"}) {
		t.Fatalf("read back: %v %v", got, err)
	}
	if byID, _ := s.ByID(ctx, got.ID); !slices.Equal(byID.Groups, got.Groups) {
		t.Fatalf("by ID: %v", byID.Groups)
	}
	if u, n, err = s.RemoveGroups(ctx, "ada@example.com", []string{"ops", "not-a-member"}); err != nil || !slices.Equal(n, []string{"ops"}) ||
		!slices.Equal(u.Groups, []string{"a.b-c_d+e@f", "org/team", "system:masters"}) {
		t.Fatalf("remove: %v %v %v", u, n, err)
	}
	if u, n, err = s.RemoveGroups(ctx, "ada@example.com", []string{"a.b-c_d+e@f", "org/team", "system:masters"}); err != nil || len(n) != 3 || len(u.Groups) != 0 {
		t.Fatalf("remove all: %v %v %v", u, n, err)
	}
	if got, _ := s.ByEmail(ctx, "ada@example.com"); len(got.Groups) != 0 {
		t.Fatalf("after removing all: %v", got.Groups)
	}

	// Invalid names are refused, each with its reason, and nothing is written.
	for _, bad := range []string{"", "has space", "-lead", ".lead", "ümlaut", "tab\t", "comma,", strings.Repeat("a", users.MaxGroupLen+1), "new\nline"} {
		if _, _, err := s.AddGroups(ctx, "ada@example.com", []string{"fine", bad}); !errors.Is(err, users.ErrInvalidGroup) {
			t.Errorf("group %q: %v, want ErrInvalidGroup", bad, err)
		}
	}
	if _, _, err := s.AddGroups(ctx, "ada@example.com", nil); !errors.Is(err, users.ErrInvalidGroup) {
		t.Errorf("no group: %v", err)
	}
	if got, _ := s.ByEmail(ctx, "ada@example.com"); len(got.Groups) != 0 {
		t.Fatalf("a refused change wrote %v", got.Groups)
	}
	if err := users.CheckGroup(strings.Repeat("a", users.MaxGroupLen)); err != nil {
		t.Errorf("a name of the maximum length: %v", err)
	}

	// The bound: at most MaxGroups, also across several additions; a refused one writes nothing.
	var many []string
	for i := range users.MaxGroups {
		many = append(many, fmt.Sprintf("g%02d", i))
	}
	if _, n, err := s.AddGroups(ctx, "ada@example.com", many); err != nil || len(n) != users.MaxGroups {
		t.Fatalf("add %d: %v %v", users.MaxGroups, n, err)
	}
	if _, _, err := s.AddGroups(ctx, "ada@example.com", []string{"one-more"}); !errors.Is(err, users.ErrTooManyGroups) {
		t.Fatalf("past the bound: %v", err)
	}
	if _, n, err := s.AddGroups(ctx, "ada@example.com", []string{"g00"}); err != nil || len(n) != 0 {
		t.Fatalf("adding a group it is in, at the bound: %v %v", n, err)
	}
	if got, _ := s.ByEmail(ctx, "ada@example.com"); len(got.Groups) != users.MaxGroups || slices.Contains(got.Groups, "one-more") {
		t.Fatalf("after the refusal: %d groups", len(got.Groups))
	}

	// An unknown or deleted account.
	if _, _, err := s.AddGroups(ctx, "nobody@example.com", []string{"ops"}); !errors.Is(err, users.ErrNotFound) {
		t.Fatalf("unknown account: %v", err)
	}
	if _, err := s.Delete(ctx, "ada@example.com"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.RemoveGroups(ctx, "ada@example.com", []string{"g00"}); !errors.Is(err, users.ErrNotFound) {
		t.Fatalf("deleted account: %v", err)
	}
}

// Two operators adding groups to one user at the same moment lose nothing: each change is one script.
func TestGroups_ConcurrentAdditionsAllKept(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	if _, err := s.Create(ctx, "ada@example.com", "Ada", "a long password"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := s.AddGroups(ctx, "ada@example.com", []string{fmt.Sprintf("team-%02d", i)}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if u, _ := s.ByEmail(ctx, "ada@example.com"); len(u.Groups) != 20 {
		t.Fatalf("%d groups after 20 concurrent additions: %v", len(u.Groups), u.Groups)
	}
}

// On a Redis Cluster the user's groups live in its own hash, so the script runs on one slot.
func TestGroups_OnCluster(t *testing.T) {
	cl := testredis.StartCluster(t, 3, 0)
	s := users.NewStore(cl.Client(), users.NewHasher(cheap, 2))
	ctx := context.Background()
	if _, err := s.Create(ctx, "ada@example.com", "Ada", "a long password"); err != nil {
		t.Fatal(err)
	}
	if u, _, err := s.AddGroups(ctx, "ada@example.com", []string{"ops", "dev"}); err != nil || !slices.Equal(u.Groups, []string{"dev", "ops"}) {
		t.Fatalf("add on a cluster: %v %v", u, err)
	}
	if u, err := s.ByEmail(ctx, "ada@example.com"); err != nil || !slices.Equal(u.Groups, []string{"dev", "ops"}) {
		t.Fatalf("read back on a cluster: %v %v", u, err)
	}
}

// PurgeUnverified's parts: only self-made accounts (the sign-up form's) whose address was never
// verified and that were created before the cutoff are listed; deleting one frees its address for a new
// account; an account verified between the listing and the deletion is kept.
func TestUnverified_OnlySelfMadeNeverVerifiedOlderThanTheCutoff(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	squat, err := s.CreateSignup(ctx, "squatted@example.com", "", "a long password")
	if err != nil {
		t.Fatal(err)
	}
	verified, _ := s.CreateSignup(ctx, "verified@example.com", "", "a long password")
	if err := s.SetVerified(ctx, verified.ID, verified.Email); err != nil {
		t.Fatal(err)
	}
	late, _ := s.CreateSignup(ctx, "late@example.com", "", "a long password")
	if _, err := s.Create(ctx, "operator-made@example.com", "", "a long password"); err != nil {
		t.Fatal(err)
	}
	list := func(cutoff time.Time) []string {
		var out []string
		if err := s.Unverified(ctx, cutoff, func(u *users.User) error { out = append(out, u.Email); return nil }); err != nil {
			t.Fatal(err)
		}
		slices.Sort(out)
		return out
	}
	// The cutoff is the caller's clock: at the creation time nothing is older; a second later both
	// unverified self-made accounts are (CreatedAt has whole seconds).
	if got := list(squat.CreatedAt); len(got) != 0 {
		t.Fatalf("at the creation time: %v", got)
	}
	later := squat.CreatedAt.Add(time.Hour)
	if got := list(later); !slices.Equal(got, []string{"late@example.com", "squatted@example.com"}) {
		t.Fatalf("an hour later: %v", got)
	}

	// Verified between the listing and the deletion: kept.
	if err := s.SetVerified(ctx, late.ID, late.Email); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.DeleteUnverified(ctx, late); err != nil || ok {
		t.Fatalf("deleting an account verified meanwhile: %v %v", ok, err)
	}
	if _, err := s.ByEmail(ctx, "late@example.com"); err != nil {
		t.Fatalf("the verified account is gone: %v", err)
	}

	// The squatted address is free again.
	if ok, err := s.DeleteUnverified(ctx, squat); err != nil || !ok {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if _, err := s.ByEmail(ctx, "squatted@example.com"); !errors.Is(err, users.ErrNotFound) {
		t.Fatalf("after the purge: %v", err)
	}
	if _, err := s.CreateSignup(ctx, "squatted@example.com", "", "the owner's password"); err != nil {
		t.Fatalf("the owner signs up: %v", err)
	}
	if got := list(later); !slices.Equal(got, []string{"squatted@example.com"}) { // the owner's, until they verify it
		t.Fatalf("after: %v", got)
	}
}
