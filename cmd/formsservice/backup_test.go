//go:build !formsonly

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/tests3"
)

// runCmd runs `formsservice ARGS…` with env, and returns what it printed.
func runCmd(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, func(k string) string { return env[k] }, strings.NewReader(""), &out, &errOut)
	return out.String() + errOut.String(), err
}

// runCmdStderr is runCmd with stdout and stderr apart.
func runCmdStderr(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(context.Background(), args, func(k string) string { return env[k] }, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), err
}

// `formsservice backup --to DIR/ --recipient age1…` then `restore --check` and `restore` into a new store
// with the identity: every key back; a store that holds keys is refused; the file is the owner's only.
func TestBackupRestore_FileRoundTrip(t *testing.T) {
	ctx := context.Background()
	src, dst := testredis.Start(t), testredis.Start(t)
	for i, k := range []string{"fs:{waitlist}:entries", "auth:u:{a}", "auth:grant:{a}"} {
		src.Client().Set(ctx, k, i, time.Hour)
	}
	key, recipient := ageKeyFile(t)
	dir := t.TempDir() + "/backups/" // made by the command
	out, err := runCmd(t, map[string]string{"REDIS_URL": src.URL()}, "backup", "--to", dir, "--recipient", recipient)
	if err != nil || !strings.Contains(out, "wrote 3 keys (auth 2, fs 1) to "+dir+"formsservice-") {
		t.Fatalf("backup: %v %s", err, out)
	}
	files, _ := filepath.Glob(dir + "*")
	if len(files) != 1 || !regexp.MustCompile(`/formsservice-\d{8}T\d{6}Z\.backup\.gz$`).MatchString(files[0]) {
		t.Fatalf("files %v", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the backup's mode: %v %v", fi.Mode(), err)
	}
	if out, err := runCmd(t, nil, "restore", "--check", "--identity-file", key, "--from", files[0]); err != nil || !strings.Contains(out, "is whole: 3 keys (auth 2, fs 1)") {
		t.Fatalf("restore --check: %v %s", err, out)
	}
	// A backup encrypted with --identity-file (its public key) reads back with the same file.
	byID := filepath.Join(t.TempDir(), "by-identity.backup.gz")
	if out, err := runCmd(t, map[string]string{"REDIS_URL": src.URL()}, "backup", "--to", byID, "--identity-file", key); err != nil || strings.Contains(out, "not encrypted") {
		t.Fatalf("backup --identity-file: %v %s", err, out)
	}
	if out, err := runCmd(t, nil, "restore", "--check", "--identity-file", key, "--from", byID); err != nil || !strings.Contains(out, "is whole: 3 keys") {
		t.Fatalf("restore --check of the --identity-file backup: %v %s", err, out)
	}
	// Without the identity, or with another one, nothing is read, --insecure or not.
	other, _ := ageKeyFile(t)
	for _, args := range [][]string{{}, {"--insecure"}, {"--identity-file", other}} {
		a := append([]string{"restore", "--check", "--from", files[0]}, args...)
		if out, err := runCmd(t, nil, a...); err == nil || !strings.Contains(err.Error(), "encrypted for another key") {
			t.Fatalf("restore --check %v: %v %s", args, err, out)
		}
	}
	dstEnv := map[string]string{"REDIS_URL": dst.URL()}
	if out, err := runCmd(t, dstEnv, "restore", "--identity-file", key, "--from", files[0]); err != nil || !strings.Contains(out, "restored 3 keys") {
		t.Fatalf("restore: %v %s", err, out)
	}
	if v := dst.Client().Get(ctx, "auth:grant:{a}").Val(); v != "2" {
		t.Fatalf("restored value %q", v)
	}
	if out, err := runCmd(t, dstEnv, "restore", "--identity-file", key, "--from", files[0]); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("a second restore into the same store: %v %s", err, out)
	}
	if out, err := runCmd(t, dstEnv, "restore", "--replace", "--identity-file", key, "--from", files[0]); err != nil || !strings.Contains(out, "restored 3 keys") {
		t.Fatalf("restore --replace: %v %s", err, out)
	}
	// A cut file is refused by --check and by a restore, which then writes nothing.
	whole, _ := os.ReadFile(files[0])
	cut := filepath.Join(t.TempDir(), "cut.backup.gz")
	os.WriteFile(cut, whole[:len(whole)-9], 0o600)
	empty := testredis.Start(t)
	if out, err := runCmd(t, map[string]string{"REDIS_URL": empty.URL()}, "restore", "--identity-file", key, "--from", cut); err == nil || !strings.Contains(err.Error(), "not a whole formsservice backup") {
		t.Fatalf("a cut file: %v %s", err, out)
	}
	if n := empty.Client().DBSize(ctx).Val(); n != 0 {
		t.Fatalf("a cut file wrote %d keys", n)
	}
}

// A backup without --recipient is clear: the command warns, and a restore reads it only with
// --insecure.
func TestBackupRestore_ClearFileNeedsInsecure(t *testing.T) {
	ctx := context.Background()
	src, dst := testredis.Start(t), testredis.Start(t)
	src.Client().Set(ctx, "auth:u:{a}", "x", 0)
	src.Client().Set(ctx, "other-app:session", "x", 0)
	file := filepath.Join(t.TempDir(), "clear.backup.gz")
	stdout, stderr, err := runCmdStderr(t, map[string]string{"REDIS_URL": src.URL()}, "backup", "--to", file)
	if err != nil || !strings.Contains(stdout, "wrote 2 keys") || !strings.Contains(stderr, "warning: the backup is not encrypted") {
		t.Fatalf("backup: %v %q %q", err, stdout, stderr)
	}
	dstEnv := map[string]string{"REDIS_URL": dst.URL()}
	if out, err := runCmd(t, dstEnv, "restore", "--from", file); err == nil || !strings.Contains(err.Error(), "not encrypted") || !strings.Contains(err.Error(), "--insecure") {
		t.Fatalf("restore of a clear file without --insecure: %v %s", err, out)
	}
	if n := dst.Client().DBSize(ctx).Val(); n != 0 {
		t.Fatalf("a refused restore wrote %d keys", n)
	}
	if out, err := runCmd(t, dstEnv, "restore", "--insecure", "--from", file); err != nil || !strings.Contains(out, "restored 1 keys") ||
		!strings.Contains(out, "1 keys were not formsservice's") || dst.Client().Exists(ctx, "other-app:session").Val() != 0 {
		t.Fatalf("restore --insecure: %v %s", err, out)
	}
	if out, err := runCmd(t, dstEnv, "restore", "--insecure", "--replace", "--all-keys", "--from", file); err != nil || !strings.Contains(out, "restored 2 keys") {
		t.Fatalf("restore --all-keys: %v %s", err, out)
	}
}

// ageKeyFile writes an identity file as age-keygen does and returns its path and public recipient.
func ageKeyFile(t *testing.T) (path, recipient string) {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "backup-key.txt")
	text := "# public key: " + id.Recipient().String() + "\n" + id.String() + "\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, id.Recipient().String()
}

// The same through a real S3-compatible bucket (versitygw): backup to s3://…/, restore from the object.
func TestBackupRestore_S3RoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("runs versitygw")
	}
	ctx := context.Background()
	bucket := tests3.Start(t, "backups")
	src, dst := testredis.Start(t), testredis.Start(t)
	src.Client().Set(ctx, "fs:{waitlist}:entries", "one", 0)
	src.Client().HSet(ctx, "auth:u:{a}", "email", "ada@example.com")
	env := bucket.Env()
	env["REDIS_URL"] = src.URL()
	out, err := runCmd(t, env, "backup", "--to", "s3://backups/site/")
	m := regexp.MustCompile(`to (s3://backups/site/formsservice-\d{8}T\d{6}Z\.backup\.gz)\n`).FindStringSubmatch(out)
	if err != nil || m == nil || !strings.Contains(out, "wrote 2 keys (auth 1, fs 1)") {
		t.Fatalf("backup: %v %s", err, out)
	}
	env["REDIS_URL"] = dst.URL()
	if out, err := runCmd(t, env, "restore", "--insecure", "--from", m[1]); err != nil || !strings.Contains(out, "restored 2 keys") {
		t.Fatalf("restore: %v %s", err, out)
	}
	if v := dst.Client().HGet(ctx, "auth:u:{a}", "email").Val(); v != "ada@example.com" {
		t.Fatalf("restored %q", v)
	}
	if out, err := runCmd(t, env, "restore", "--check", "--insecure", "--from", "s3://backups/site/none.backup.gz"); err == nil {
		t.Fatalf("a missing object: %s", out)
	}
}

// A restore signs every account out everywhere (a new sign-out generation each), unless
// --keep-sessions: the backup may hold sessions and grants ended since it was made (D68).
func TestRestore_SignsEveryAccountOutUnlessKeepSessions(t *testing.T) {
	ctx := context.Background()
	src := testredis.Start(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("auth:\n  passwordHash: {memoryKiB: 64, iterations: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, email := range []string{"ada@example.com", "grace@example.com"} {
		if out, err := usersCmd(t, src.URL(), cfg, "a long and unusual passphrase\n", "create", "-email", email); err != nil {
			t.Fatalf("create %s: %v %s", email, err, out)
		}
	}
	file := filepath.Join(t.TempDir(), "clear.backup.gz")
	if out, err := runCmd(t, map[string]string{"REDIS_URL": src.URL()}, "backup", "--to", file); err != nil {
		t.Fatalf("backup: %v %s", err, out)
	}
	generations := func(c *testredis.Server) []string {
		t.Helper()
		keys, err := c.Client().Keys(ctx, "auth:subject:{*}:gen").Result()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, k := range keys {
			out = append(out, c.Client().Get(ctx, k).Val())
		}
		return out
	}
	if g := generations(src); len(g) != 0 {
		t.Fatalf("the source already has sign-out generations: %v", g)
	}

	dst := testredis.Start(t)
	out, err := runCmd(t, map[string]string{"REDIS_URL": dst.URL(), "FORMSSERVICE_CONFIG": cfg}, "restore", "--insecure", "--from", file)
	if err != nil || !strings.Contains(out, "signed out 2 accounts everywhere") {
		t.Fatalf("restore: %v %s", err, out)
	}
	if g := generations(dst); len(g) != 2 || g[0] != "1" || g[1] != "1" {
		t.Fatalf("sign-out generations after the restore: %v; want 1 for each account", g)
	}

	kept := testredis.Start(t)
	out, err = runCmd(t, map[string]string{"REDIS_URL": kept.URL(), "FORMSSERVICE_CONFIG": cfg}, "restore", "--insecure", "--keep-sessions", "--from", file)
	if err != nil || !strings.Contains(out, "kept (--keep-sessions)") || strings.Contains(out, "signed out") {
		t.Fatalf("restore --keep-sessions: %v %s", err, out)
	}
	if g := generations(kept); len(g) != 0 {
		t.Fatalf("--keep-sessions moved sign-out generations: %v", g)
	}
}
