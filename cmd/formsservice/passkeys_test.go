package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
)

// Deleting an account deletes its passkeys: their public keys are the person's data, and nothing may
// be left under an ID that no longer names anyone.
func TestUsersDelete_RemovesThePasskeys(t *testing.T) {
	srv := testredis.Start(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("auth:\n  passwordHash: {memoryKiB: 64, iterations: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := usersCmd(t, srv.URL(), cfg, "a password\n", "create", "--email", "ada@example.com")
	id := regexp.MustCompile(`\(id ([0-9a-f]+)\)`).FindStringSubmatch(out)
	if err != nil || id == nil {
		t.Fatalf("create: %v %s", err, out)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	keys := []string{"auth:passkey:{" + id[1] + "}", "auth:passkey:{" + id[1] + "}:use"}
	for _, k := range keys {
		if err := rdb.HSet(ctx, k, "credential-id", "x").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "", "delete", "--email", "ada@example.com"); err != nil {
		t.Fatalf("delete: %v %s", err, out)
	}
	if n, err := rdb.Exists(ctx, keys...).Result(); err != nil || n != 0 {
		t.Errorf("%d passkey keys left after the account was deleted (%v)", n, err)
	}
}
