//go:build !formsonly

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/mfa"
	"github.com/formsservice/formsservice/services/auth/users"
)

// `users reset-mfa` is the way back for a person who lost the app and the recovery codes: the app and
// every code are gone, the trail says an operator did it, and --signout ends the account's sessions.
func TestUsersResetMFA_RemovesTheFactorAndTheCodes(t *testing.T) {
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
	factors := mfa.NewStore(rdb, mfa.Sealer{}, nil)
	key, err := factors.Pending(ctx, ada.ID, "formsservice", ada.Email, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	code, err := mfa.Code(key.Secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if codes, res, err := factors.Confirm(ctx, ada.ID, code); err != nil || res != mfa.Accepted || len(codes) != 10 {
		t.Fatalf("enrol: %v %v %d codes", err, res, len(codes))
	}

	out, err := usersCmd(t, srv.URL(), cfg, "", "reset-mfa", "--email", "ada@example.com", "--signout")
	if err != nil || !strings.Contains(out, "removed the second factor of ada@example.com and its 10 unused recovery code(s)") ||
		!strings.Contains(out, "signed ada@example.com out") {
		t.Fatalf("reset-mfa: %v %s", err, out)
	}
	if st, err := factors.Status(ctx, ada.ID); err != nil || st.TOTP || st.RecoveryLeft != 0 {
		t.Fatalf("after the reset: %+v %v", st, err)
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "", "reset-mfa", "--email", "ada@example.com"); err != nil || !strings.Contains(out, "has no second factor; nothing removed") {
		t.Fatalf("a second reset: %v %s", err, out)
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "", "reset-mfa", "--email", "nobody@example.com"); err == nil {
		t.Fatalf("an unknown account: %s", out)
	}
	out, err = auditCmd(t, srv.URL(), "--user", ada.ID, "--kind", "user.mfa_reset,user.signout_everywhere")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 2 || !strings.Contains(lines[0], "user.mfa_reset  success  user="+ada.ID+"  actor=cli") ||
		!strings.Contains(lines[0], "recoveryLeft=10") || !strings.Contains(lines[1], "user.signout_everywhere") {
		t.Fatalf("the trail: %v\n%s", err, out)
	}
}
