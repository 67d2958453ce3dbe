package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/internal/testredis"
)

// `users create` and `users set-password` refuse what the hosted pages refuse (package passwords): a
// password of a breach list, one of 11 characters, one made of the account's own name; and take a
// strong one. A refused password leaves the account as it was.
func TestUsersPasswords_CommonShortAndPersonalRefused(t *testing.T) {
	srv := testredis.Start(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("auth:\n  passwordHash: {memoryKiB: 64, iterations: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for pw, want := range map[string]string{
		"password1234":  "password refused (breached): This password appears in lists of passwords leaked in data breaches",
		"kq8-vR2!mx9":   "password refused (too_short): Use 12 to 256 characters.",
		"lovelace1234":  "password refused (personal): This password is easy to guess from your e-mail address or name.",
		"Passwort12345": "password refused (guessable)",
	} {
		out, err := usersCmd(t, srv.URL(), cfg, pw+"\n", "create", "--email", "ada@example.com", "--name", "Ada Lovelace")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("create with %q: %v %s, want %q", pw, err, out, want)
		}
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "", "list"); err != nil || strings.Contains(out, "ada@example.com") {
		t.Fatalf("a refused create made an account: %v %s", err, out)
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "correct horse battery staple\n", "create", "--email", "ada@example.com", "--name", "Ada Lovelace"); err != nil {
		t.Fatalf("create with a strong password: %v %s", err, out)
	}
	for _, pw := range []string{"password1234", "kq8-vR2!mx9", "lovelace1234"} {
		if out, err := usersCmd(t, srv.URL(), cfg, pw+"\n", "set-password", "--email", "ada@example.com"); err == nil || !strings.Contains(err.Error(), "password refused") {
			t.Errorf("set-password %q: %v %s", pw, err, out)
		}
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "tx9!Kw2#qz4$\n", "set-password", "--email", "ada@example.com"); err != nil || !strings.Contains(out, "password set for ada@example.com") {
		t.Fatalf("set-password with a strong password: %v %s", err, out)
	}
}
