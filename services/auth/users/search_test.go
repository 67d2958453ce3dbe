package users_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/formsservice/formsservice/services/auth/users"
)

// Search pages through the accounts whose address contains the query, in address order, each page after
// the last address of the one before, without losing or repeating one; glob characters in the query
// match only themselves.
func TestSearch_PagesInAddressOrder(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	var want []string
	for i := range 7 {
		e := fmt.Sprintf("p%d@example.com", i)
		want = append(want, e)
		if _, err := s.Create(ctx, e, "", "a long password"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Create(ctx, "other@example.org", "", "a long password"); err != nil {
		t.Fatal(err)
	}
	var got []string
	after := ""
	for page := 0; ; page++ {
		found, more, err := s.Search(ctx, "@EXAMPLE.com", after, 3)
		if err != nil || len(found) > 3 || page > 3 {
			t.Fatalf("page %d: %d found, %v", page, len(found), err)
		}
		for _, u := range found {
			got = append(got, u.Email)
		}
		if !more {
			break
		}
		after = found[len(found)-1].Email
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages: %v, want %v", got, want)
	}
	if found, _, err := s.Search(ctx, "p*", "", 10); err != nil || len(found) != 0 {
		t.Fatalf("a glob in the query matched %d accounts (%v)", len(found), err)
	}
	if found, more, err := s.Search(ctx, "", "", 100); err != nil || len(found) != 8 || more {
		t.Fatalf("all: %d, more %v, %v", len(found), more, err)
	}
}

// SetGroups replaces the groups in one step and says which it added and removed; it validates first.
func TestGroups_Set(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	if _, err := s.Create(ctx, "ada@example.com", "Ada", "a long password"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AddGroups(ctx, "ada@example.com", []string{"ops", "dev"}); err != nil {
		t.Fatal(err)
	}
	u, added, removed, err := s.SetGroups(ctx, "ada@example.com", []string{"qa", "ops", "qa"})
	if err != nil || !slices.Equal(u.Groups, []string{"ops", "qa"}) || !slices.Equal(added, []string{"qa"}) || !slices.Equal(removed, []string{"dev"}) {
		t.Fatalf("set: %v %v %v %v", u, added, removed, err)
	}
	if u, _, removed, err = s.SetGroups(ctx, "ada@example.com", nil); err != nil || len(u.Groups) != 0 || len(removed) != 2 {
		t.Fatalf("set none: %v %v %v", u, removed, err)
	}
	if _, _, _, err := s.SetGroups(ctx, "ada@example.com", []string{"has space"}); !errors.Is(err, users.ErrInvalidGroup) {
		t.Fatalf("invalid name: %v", err)
	}
	if _, _, _, err := s.SetGroups(ctx, "nobody@example.com", []string{"ops"}); !errors.Is(err, users.ErrNotFound) {
		t.Fatalf("unknown user: %v", err)
	}
}
