//go:build !formsonly

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/mfa"
	"github.com/formsservice/formsservice/services/auth/passkey"
	"github.com/formsservice/formsservice/services/auth/users"
)

// `users factors` shows what the admin API's GET …/factors shows, and `users remove-passkey` removes a
// passkey as DELETE …/passkeys/{id} does (package accounts behind both): audited with the OS user.
func TestUsersFactorsAndRemovePasskey(t *testing.T) {
	srv := testredis.Start(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("auth:\n  passwordHash: {memoryKiB: 64, iterations: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "first password\n", "create", "--email", "ada@example.com"); err != nil {
		t.Fatalf("create: %v %s", err, out)
	}
	ctx := context.Background()
	rdb := srv.Client()
	ada, err := users.NewStore(rdb, nil).ByEmail(ctx, "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "", "factors", "--email", "ada@example.com"); err != nil ||
		out != "second factor: none; 0 unused recovery code(s)\npasskeys: 0\n" {
		t.Fatalf("no factors: %v %q", err, out)
	}
	factors := mfa.NewStore(rdb, mfa.Sealer{}, nil)
	key, _ := factors.Pending(ctx, ada.ID, "formsservice", ada.Email, time.Minute)
	code, _ := mfa.Code(key.Secret, time.Now())
	if _, res, err := factors.Confirm(ctx, ada.ID, code); err != nil || res != mfa.Accepted {
		t.Fatalf("enrol: %v %v", res, err)
	}
	// A passkey as package passkey stores it (registering one takes a WebAuthn ceremony).
	created := time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC)
	rdb.HSet(ctx, "auth:passkey:{"+ada.ID+"}", "bGFwdG9w", fmt.Sprintf(`{"name":"Work laptop","created":%d,"cred":{}}`, created.Unix()))
	rdb.HSet(ctx, "auth:passkey:{"+ada.ID+"}:use", "bGFwdG9w", "0|0|0")

	out, err := usersCmd(t, srv.URL(), cfg, "", "factors", "--email", "ada@example.com")
	if err != nil || !strings.Contains(out, "second factor: an authenticator app, set up ") || !strings.Contains(out, "; 10 unused recovery code(s)\n") ||
		!strings.Contains(out, "passkeys: 1\n  bGFwdG9w  \"Work laptop\"  added 2026-10-01T09:00:00Z, never used\n") {
		t.Fatalf("factors: %v %q", err, out)
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "", "remove-passkey", "--email", "ada@example.com", "--passkey", "bm9uZQ"); err == nil || !strings.Contains(out+err.Error(), "has no passkey bm9uZQ") {
		t.Fatalf("an unknown passkey: %v %s", err, out)
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "", "remove-passkey", "--email", "ada@example.com"); err == nil {
		t.Fatalf("no --passkey: %s", out)
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "", "remove-passkey", "--email", "ada@example.com", "--passkey", "bGFwdG9w"); err != nil ||
		out != "removed the passkey \"Work laptop\" of ada@example.com\n" {
		t.Fatalf("remove: %v %q", err, out)
	}
	if left, err := passkey.NewStore(rdb, nil).List(ctx, ada.ID); err != nil || len(left) != 0 {
		t.Fatalf("after the removal: %v %v", left, err)
	}
	out, err = auditCmd(t, srv.URL(), "--user", ada.ID, "--kind", "passkey.removed")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); err != nil || len(lines) != 1 || !strings.Contains(lines[0], "passkey.removed  success  user="+ada.ID+"  actor=cli") ||
		!strings.Contains(lines[0], "passkey=bGFwdG9w") {
		t.Fatalf("the trail: %v\n%s", err, out)
	}
}
