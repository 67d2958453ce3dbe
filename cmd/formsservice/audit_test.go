package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/audit"
)

// auditCmd runs `formsservice audit ...` against a store.
func auditCmd(t *testing.T, redisURL string, args ...string) (string, error) {
	t.Helper()
	env := map[string]string{"REDIS_URL": redisURL}
	var out, errOut bytes.Buffer
	err := run(context.Background(), append([]string{"audit"}, args...), func(k string) string { return env[k] }, strings.NewReader(""), &out, &errOut)
	if err != nil {
		return out.String() + errOut.String(), err
	}
	return out.String(), nil
}

// Every `users` command leaves an event in the trail (actor cli, the operating-system user), and
// `formsservice audit` lists it, filtered by user (ID or e-mail), kind and time, as text or JSON lines.
func TestUsersCommands_LeaveAuditEvents_AuditListsAndFilters(t *testing.T) {
	srv := testredis.Start(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("auth:\n  passwordHash: {memoryKiB: 64, iterations: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	users := func(stdin string, args ...string) {
		t.Helper()
		if out, err := usersCmd(t, srv.URL(), cfg, stdin, args...); err != nil {
			t.Fatalf("users %v: %v %s", args, err, out)
		}
	}
	users("first password\n", "create", "--email", "ada@example.com")
	users("first password\n", "create", "--email", "grace@example.com")
	users("second password\n", "set-password", "--email", "ada@example.com")
	users("", "disable", "--email", "ada@example.com")
	users("", "enable", "--email", "ada@example.com")
	users("", "signout", "--email", "grace@example.com")

	out, err := auditCmd(t, srv.URL(), "--format", "jsonl", "--user", "ada@example.com")
	if err != nil {
		t.Fatal(err, out)
	}
	var kinds []string
	var adaID string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e audit.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		if e.Actor != audit.ActorCLI || e.Outcome != audit.Success || e.User == "" || (adaID != "" && e.User != adaID) {
			t.Fatalf("event %+v", e)
		}
		adaID = e.User
		kinds = append(kinds, string(e.Kind))
	}
	if got := strings.Join(kinds, " "); got != "user.created user.password_set user.signout_everywhere user.disabled user.signout_everywhere user.enabled" {
		t.Fatalf("Ada's events: %s", got)
	}

	// The same by ID, as text, and only one kind; the deleted account's events stay findable by its ID.
	if _, err := usersCmd(t, srv.URL(), cfg, "", "delete", "--email", "ada@example.com"); err != nil {
		t.Fatal(err)
	}
	out, err = auditCmd(t, srv.URL(), "--user", adaID, "--kind", "user.signout_everywhere,user.deleted")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "  user.signout_everywhere  success  user="+adaID+"  actor=cli  grants=0  sessions=0") ||
		!strings.Contains(lines[2], "  user.deleted  success  user="+adaID) {
		t.Fatalf("text listing:\n%s", out)
	}
	if out, _ := auditCmd(t, srv.URL(), "--limit", "2", "--format", "jsonl"); strings.Count(out, "\n") != 2 || !strings.Contains(out, `"kind":"user.deleted"`) {
		t.Fatalf("-limit 2 keeps the newest two:\n%s", out)
	}
	if out, _ := auditCmd(t, srv.URL(), "--since", "2999-01-01"); out != "" {
		t.Fatalf("-since in the future: %q", out)
	}
	if out, _ := auditCmd(t, srv.URL(), "--until", "2000-01-01"); out != "" {
		t.Fatalf("-until in the past: %q", out)
	}
	for _, bad := range [][]string{{"--kind", "nope"}, {"--since", "yesterday"}, {"--format", "xml"}, {"extra"}} {
		if _, err := auditCmd(t, srv.URL(), bad...); err == nil {
			t.Errorf("audit %v: accepted", bad)
		} else if !errors.Is(err, errUsage) && !strings.Contains(err.Error(), bad[len(bad)-1]) {
			t.Errorf("audit %v: %v does not say what is wrong", bad, err)
		}
	}
}
