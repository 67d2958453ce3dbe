package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testmail"
	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/keys"
	"github.com/formsservice/formsservice/services/auth/users"
)

// cliEvents reads the trail's events of kinds as "kind detail-value" lines (the detail named key).
func cliEvents(t *testing.T, redisURL, key string, kinds ...string) []string {
	t.Helper()
	out, err := auditCmd(t, redisURL, "--format", "jsonl", "--kind", strings.Join(kinds, ","))
	if err != nil {
		t.Fatal(err, out)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var e audit.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		if e.Actor != audit.ActorCLI || e.User == "" || e.Outcome != audit.Success {
			t.Fatalf("event %+v", e)
		}
		got = append(got, string(e.Kind)+" "+e.Detail[key])
	}
	return got
}

// `users groups add|remove|list` change and show an account's groups, validate the names before the
// store is opened, refuse an unknown account, leave one audit event per group changed, and `users list
// --format jsonl` shows them.
func TestUsersGroups_AddRemoveList_Audited(t *testing.T) {
	srv := testredis.Start(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("auth:\n  passwordHash: {memoryKiB: 64, iterations: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "first password\n", "create", "--email", "ada@example.com"); err != nil {
		t.Fatal(err, out)
	}
	out, err := usersCmd(t, srv.URL(), cfg, "", "groups", "add", "--email", "Ada@Example.com", "ops", "system:masters", "ops")
	if err != nil || !strings.Contains(out, "added 2 group(s); ada@example.com is in: ops, system:masters") {
		t.Fatalf("add: %v %s", err, out)
	}
	out, err = usersCmd(t, srv.URL(), cfg, "", "groups", "remove", "--email", "ada@example.com", "system:masters", "never-in")
	if err != nil || !strings.Contains(out, "removed 1 group(s); ada@example.com is in: ops") {
		t.Fatalf("remove: %v %s", err, out)
	}
	if out, err = usersCmd(t, srv.URL(), cfg, "", "groups", "list", "--email", "ada@example.com"); err != nil || out != "ops\n" {
		t.Fatalf("list: %v %q", err, out)
	}
	out, err = usersCmd(t, srv.URL(), cfg, "", "list", "--format", "jsonl")
	var line struct {
		Groups []string `json:"groups"`
	}
	if err != nil || json.Unmarshal([]byte(out), &line) != nil || len(line.Groups) != 1 || line.Groups[0] != "ops" {
		t.Fatalf("users list: %v %s", err, out)
	}

	// Refusals, each clear; nothing changes.
	for _, c := range []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{"groups", "add", "--email", "ada@example.com", "has space"}, true, `invalid group name "has space": only letters, digits`},
		{[]string{"groups", "add", "--email", "ada@example.com", strings.Repeat("x", 65)}, true, "at most 64 characters"},
		{[]string{"groups", "add", "--email", "ada@example.com", "-dash"}, true, "unknown shorthand flag"},
		{[]string{"groups", "add", "--email", "ada@example.com"}, true, "requires at least 1 arg"},
		{[]string{"groups", "add", "ops"}, true, "--email is required"},
		{[]string{"groups", "add", "--email", "nobody@example.com", "ops"}, false, "no such user"},
		{[]string{"groups", "frobnicate"}, true, "unknown command"},
	} {
		out, err := usersCmd(t, srv.URL(), cfg, "", c.args...)
		if err == nil || errors.Is(err, errUsage) != c.usage || !strings.Contains(out+err.Error(), c.want) {
			t.Errorf("users %v: %v (usage %v)\n%s", c.args, err, errors.Is(err, errUsage), out)
		}
	}
	if out, _ := usersCmd(t, srv.URL(), cfg, "", "groups", "list", "--email", "ada@example.com"); out != "ops\n" {
		t.Fatalf("after the refusals: %q", out)
	}

	got := strings.Join(cliEvents(t, srv.URL(), "group", "user.group_added", "user.group_removed"), "; ")
	if got != "user.group_added ops; user.group_added system:masters; user.group_removed system:masters" {
		t.Fatalf("audit: %s", got)
	}
}

// `users send-verification` mails an unverified account the verification link through the configured
// relay (a real Mailpit), refuses a verified, disabled or unknown account and a configuration without a
// relay or a signing key, and is audited (email.verification_sent, trigger cli).
func TestUsersSendVerification_MailsTheLink_RefusesOthers(t *testing.T) {
	srv := testredis.Start(t)
	mp := testmail.Start(t, testmail.Options{})
	dir := t.TempDir()
	keyFile := writeSigningKey(t, dir)
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := "publicURL: https://id.example.com\nauth:\n  passwordHash: {memoryKiB: 64, iterations: 1}\n"
	cfg := write("config.yaml", base+"  signingKeyFile: "+keyFile+"\nmail:\n  from: Example <no-reply@example.com>\n  smtp: {addr: "+mp.SMTPAddr+", tls: none}\n")
	noRelay := write("norelay.yaml", base+"  signingKeyFile: "+keyFile+"\n")
	noKey := write("nokey.yaml", base+"mail:\n  from: Example <no-reply@example.com>\n  smtp: {addr: "+mp.SMTPAddr+", tls: none}\n")

	for _, a := range []string{"ada@example.com", "grace@example.com", "linus@example.com", "jan@example.de"} {
		args := []string{"create", "--email", a}
		if a == "grace@example.com" {
			args = append(args, "--verified")
		}
		if out, err := usersCmd(t, srv.URL(), cfg, "a long password\n", args...); err != nil {
			t.Fatal(err, out)
		}
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "", "disable", "--email", "linus@example.com"); err != nil {
		t.Fatal(err, out)
	}

	out, err := usersCmd(t, srv.URL(), cfg, "", "send-verification", "--email", "Ada@Example.com")
	if err != nil || !strings.Contains(out, "sent the verification link to ada@example.com") {
		t.Fatalf("send-verification: %v %s", err, out)
	}
	m := mp.Latest(t, "ada@example.com", 30*time.Second)
	if !strings.Contains(m.Subject, "Confirm your e-mail address") {
		t.Fatalf("subject %q", m.Subject)
	}
	var link *url.URL
	for _, l := range m.Links() {
		if u, err := url.Parse(l); err == nil && u.Path == "/account/verify" {
			link = u
		}
	}
	if link == nil || link.Host != "id.example.com" || link.Query().Get("token") == "" {
		t.Fatalf("no verification link of the issuer in the mail: %v\n%s", m.Links(), m.Text)
	}

	// --lang writes the mail in the person's language; one the pages do not speak is refused.
	if out, err := usersCmd(t, srv.URL(), cfg, "", "send-verification", "--email", "jan@example.de", "--lang", "de"); err != nil {
		t.Fatalf("send-verification --lang de: %v %s", err, out)
	}
	if m := mp.Latest(t, "jan@example.de", 30*time.Second); !strings.Contains(m.Subject, "Bestätigen Sie Ihre E-Mail-Adresse") {
		t.Fatalf("subject of the German mail %q", m.Subject)
	}
	if out, err := usersCmd(t, srv.URL(), cfg, "", "send-verification", "--email", "jan@example.de", "--lang", "fr"); err == nil || !strings.Contains(out+err.Error(), `--lang "fr": the mails are written in en, de`) {
		t.Errorf("send-verification --lang fr: %v\n%s", err, out)
	}

	for _, c := range []struct{ config, email, want string }{
		{cfg, "grace@example.com", "grace@example.com is verified already; nothing was sent"},
		{cfg, "linus@example.com", "linus@example.com is disabled"},
		{cfg, "nobody@example.com", "no such user"},
		{noRelay, "ada@example.com", "no mail relay is configured"},
		{noKey, "ada@example.com", "auth.signingKeyFile"},
	} {
		out, err := usersCmd(t, srv.URL(), c.config, "", "send-verification", "--email", c.email)
		if err == nil || !strings.Contains(out+err.Error(), c.want) {
			t.Errorf("send-verification %s (%s): %v\n%s", c.email, filepath.Base(c.config), err, out)
		}
	}
	if n := len(mp.Messages(t)); n != 2 {
		t.Fatalf("%d mails sent, want the two", n)
	}
	if got := strings.Join(cliEvents(t, srv.URL(), "trigger", "email.verification_sent"), "; "); got != "email.verification_sent cli; email.verification_sent cli" {
		t.Fatalf("audit: %s", got)
	}
}

// `users purge-unverified` deletes the sign-up form's accounts never verified and older than
// --older-than (their address is free again), never an operator's or a verified one or a younger one;
// --dry-run only lists; a duration shorter than the verification link's lifetime is refused; each
// deletion is audited. Accounts are aged by writing their creation time back, not by waiting.
func TestUsersPurgeUnverified_FreesSquattedAddresses(t *testing.T) {
	srv := testredis.Start(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("auth:\n  passwordHash: {memoryKiB: 64, iterations: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	us := users.NewStore(rdb, users.NewHasher(users.Params{MemoryKiB: 64, Iterations: 1, Parallelism: 1}, 1))
	ctx := context.Background()
	old := strconv.FormatInt(time.Now().Add(-200*time.Hour).Unix(), 10)
	made := map[string]string{}
	for _, c := range []struct {
		email          string
		signup, verify bool
		aged           bool
	}{
		{"squatted@example.com", true, false, true},
		{"owner-verified@example.com", true, true, true},
		{"fresh@example.com", true, false, false},
		{"operator-made@example.com", false, false, true},
	} {
		create := us.Create
		if c.signup {
			create = us.CreateSignup
		}
		u, err := create(ctx, c.email, "", "a long password")
		if err != nil {
			t.Fatal(err)
		}
		made[c.email] = u.ID
		if c.verify {
			if err := us.SetVerified(ctx, u.ID, u.Email); err != nil {
				t.Fatal(err)
			}
		}
		if c.aged {
			rdb.HSet(ctx, "auth:user:{"+u.ID+"}", "created", old)
		}
	}

	if out, err := usersCmd(t, srv.URL(), cfg, "", "purge-unverified", "--older-than", "1h"); !errors.Is(err, errUsage) || !strings.Contains(out+err.Error(), "shorter than auth.verificationLinkLifetime") {
		t.Fatalf("--older-than 1h: %v %s", err, out)
	}
	out, err := usersCmd(t, srv.URL(), cfg, "", "purge-unverified", "--older-than", "168h", "--dry-run")
	if err != nil || !strings.Contains(out, "would delete squatted@example.com") || strings.Count(out, "would delete") != 1 || !strings.Contains(out, "nothing deleted") {
		t.Fatalf("--dry-run: %v %s", err, out)
	}
	if _, err := us.ByEmail(ctx, "squatted@example.com"); err != nil {
		t.Fatalf("--dry-run deleted: %v", err)
	}
	out, err = usersCmd(t, srv.URL(), cfg, "", "purge-unverified", "--older-than", "168h")
	if err != nil || !strings.Contains(out, "deleted squatted@example.com") || !strings.Contains(out, "deleted 1 never-verified account(s)") {
		t.Fatalf("purge: %v %s", err, out)
	}
	if _, err := us.ByEmail(ctx, "squatted@example.com"); !errors.Is(err, users.ErrNotFound) {
		t.Fatalf("the squatted account: %v", err)
	}
	for _, kept := range []string{"owner-verified@example.com", "fresh@example.com", "operator-made@example.com"} {
		if _, err := us.ByEmail(ctx, kept); err != nil {
			t.Errorf("%s: %v", kept, err)
		}
	}
	if _, err := us.CreateSignup(ctx, "squatted@example.com", "", "the owner's password"); err != nil {
		t.Fatalf("the freed address: %v", err)
	}
	if got := strings.Join(cliEvents(t, srv.URL(), "reason", "user.deleted"), "; "); got != "user.deleted unverified" {
		t.Fatalf("audit: %s", got)
	}
	if out, _ := auditCmd(t, srv.URL(), "--user", made["squatted@example.com"], "--kind", "user.deleted"); !strings.Contains(out, "user.deleted") {
		t.Fatalf("the event names the deleted account: %s", out)
	}
}

// writeSigningKey writes a new EC P-256 signing key (PEM) into dir and returns its path.
func writeSigningKey(t *testing.T, dir string) string {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pemKey, err := keys.EncodePEM(priv)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "signing-key.pem")
	if err := os.WriteFile(keyFile, pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
	return keyFile
}
