package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/users"
)

// `users identities` lists an account's linked upstream accounts, `users list --format jsonl` names
// their connectors, and `users unlink` removes one (audited; the upstream account then signs in to
// nothing), refusing one that is not linked (D58).
func TestUsersIdentities_ListAndUnlink_Audited(t *testing.T) {
	srv := testredis.Start(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("auth:\n  passwordHash: {memoryKiB: 64, iterations: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "first password\n", "create", "--email", "ada@example.com"); err != nil {
		t.Fatal(err, out)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	us := users.NewStore(rdb, nil)
	ctx := context.Background()
	u, err := us.ByEmail(ctx, "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if err := us.LinkIdentity(ctx, u.ID, "google", "1234567890", "ada@gmail.example", time.Unix(1700000000, 0)); err != nil {
		t.Fatal(err)
	}
	out, err := usersCmd(t, srv.URL(), cfg, "", "identities", "--email", "ada@example.com")
	if err != nil || out != "google\t1234567890\tada@gmail.example\t2023-11-14T22:13:20Z\n" {
		t.Fatalf("identities: %v %q", err, out)
	}
	out, err = usersCmd(t, srv.URL(), cfg, "", "list", "--format", "jsonl")
	var line struct {
		Identities []string `json:"identities"`
	}
	if err != nil || json.Unmarshal([]byte(out), &line) != nil || len(line.Identities) != 1 || line.Identities[0] != "google" {
		t.Fatalf("users list: %v %s", err, out)
	}
	if out, err = usersCmd(t, srv.URL(), cfg, "", "unlink", "--email", "ada@example.com", "--connector", "google"); err != nil || !strings.Contains(out, "unlinked google") {
		t.Fatalf("unlink: %v %s", err, out)
	}
	if _, err := us.ByIdentity(ctx, "google", "1234567890"); err == nil {
		t.Fatal("the identity still signs in")
	}
	if out, err = usersCmd(t, srv.URL(), cfg, "", "unlink", "--email", "ada@example.com", "--connector", "google"); err == nil || !strings.Contains(out+err.Error(), "has no linked account") {
		t.Fatalf("unlink again: %v %s", err, out)
	}
	if got := cliEvents(t, srv.URL(), "connector", "account.identity_unlinked"); len(got) != 1 || got[0] != "account.identity_unlinked google" {
		t.Fatalf("audit: %v", got)
	}
}
