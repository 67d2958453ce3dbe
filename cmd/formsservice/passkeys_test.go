package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/mfa"
)

// Deleting an account deletes its passkeys and its second factor (the TOTP secret, the recovery codes):
// they are the person's data, and nothing may be left under an ID that no longer names anyone.
func TestUsersDelete_RemovesThePasskeysAndTheSecondFactor(t *testing.T) {
	srv := testredis.Start(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("auth:\n  passwordHash: {memoryKiB: 64, iterations: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := usersCmd(t, srv.URL(), cfg, "a passkey owner's password\n", "create", "--email", "ada@example.com")
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
	factor := mfa.NewStore(rdb, mfa.Sealer{}, nil)
	key, err := factor.Pending(ctx, id[1], "Acme", "ada@example.com", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	code, err := mfa.Code(key.Secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, res, err := factor.Confirm(ctx, id[1], code); err != nil || res != mfa.Accepted {
		t.Fatalf("enrolling the app: %v %v", res, err)
	}
	keys = append(keys, "auth:mfa:{"+id[1]+"}", "auth:mfa:{"+id[1]+"}:recovery")
	if n, err := rdb.Exists(ctx, keys...).Result(); err != nil || n != int64(len(keys)) {
		t.Fatalf("%d of the keys %v before the deletion (%v)", n, keys, err)
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "", "delete", "--email", "ada@example.com"); err != nil {
		t.Fatalf("delete: %v %s", err, out)
	}
	if n, err := rdb.Exists(ctx, keys...).Result(); err != nil || n != 0 {
		t.Errorf("%d passkey or second-factor keys left after the account was deleted (%v)", n, err)
	}
}
