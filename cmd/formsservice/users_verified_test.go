package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/internal/testredis"
)

// `users create --verified` makes an account whose address is verified (email_verified true); without
// the flag it is not. `users list --format jsonl` says which.
func TestUsersCreate_Verified(t *testing.T) {
	srv := testredis.Start(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("auth:\n  passwordHash: {memoryKiB: 64, iterations: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := usersCmd(t, srv.URL(), cfg, "first password\n", "create", "--email", "ada@example.com", "--verified")
	if err != nil || !strings.Contains(out, "created ada@example.com (id ") || !strings.Contains(out, "its address is verified") {
		t.Fatalf("create --verified: %v %s", err, out)
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "other password\n", "create", "--email", "grace@example.com"); err != nil || strings.Contains(out, "verified") {
		t.Fatalf("create: %v %s", err, out)
	}
	out, err = usersCmd(t, srv.URL(), cfg, "", "list", "--format", "jsonl")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var u struct {
			Email    string `json:"email"`
			Verified bool   `json:"verified"`
		}
		if err := json.Unmarshal([]byte(line), &u); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got[u.Email] = u.Verified
	}
	if !got["ada@example.com"] || got["grace@example.com"] || len(got) != 2 {
		t.Fatalf("verified by address: %v", got)
	}
}
