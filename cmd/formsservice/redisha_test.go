//go:build !formsonly

package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/internal/testredis"
)

// A new set's pod 0 (no sentinel and no other node answers) is the primary: the command writes both
// files, the password in them, and says so.
func TestRedisHAConfig_NewSetPodZeroIsThePrimary(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "password")
	if err := os.WriteFile(pw, []byte("pw0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Ports nobody listens on (FreePort: bindable a moment ago), so every question is refused at once.
	addr := func() string { return "127.0.0.1:" + strconv.Itoa(testredis.FreePort(t)) }
	nodes := strings.Join([]string{addr(), addr(), addr()}, ",")
	sentinels := strings.Join([]string{addr(), addr(), addr()}, ",")
	out, errOut, err := cli(t, "redis-ha-config", "--nodes", nodes, "--sentinels", sentinels, "--self", "acme-redis-0",
		"--password-file", pw, "--out", dir)
	if err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	if !strings.Contains(out, "is the primary (from default)") {
		t.Errorf("stdout %q", out)
	}
	rc, _ := os.ReadFile(filepath.Join(dir, "redis.conf"))
	sc, _ := os.ReadFile(filepath.Join(dir, "sentinel.conf"))
	if !strings.Contains(string(rc), "masterauth pw0\n") || strings.Contains(string(rc), "replicaof") {
		t.Errorf("redis.conf:\n%s", rc)
	}
	if !strings.Contains(string(sc), "sentinel monitor formsservice 127.0.0.1 ") || !strings.Contains(string(sc), "requirepass pw0\n") {
		t.Errorf("sentinel.conf:\n%s", sc)
	}
	for _, f := range []string{"redis.conf", "sentinel.conf"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600 (it holds the password)", f, fi.Mode(), err)
		}
	}
}

func TestRedisHAConfig_BadSelfOrAddressesAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--nodes", "a:1,b:1", "--sentinels", "a:2,b:2", "--self", "acme-redis", "--out", t.TempDir()},
		{"--nodes", "a:1,b:1", "--sentinels", "a:2,b:2", "--self", "acme-redis-2", "--out", t.TempDir()},
		{"--nodes", "a:1,b", "--sentinels", "a:2,b:2", "--self", "0", "--out", t.TempDir()},
		{"--nodes", "a:1", "--sentinels", "a:2,b:2", "--self", "0", "--out", t.TempDir()},
	} {
		_, _, err := cli(t, append([]string{"redis-ha-config"}, args...)...)
		if !errors.Is(err, errUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// The sentinel.conf the sentinel left in --out (the pod's claim) says who was the primary: after a
// whole-set restart (nobody answers) pod 2, the primary of the last epoch, starts as the primary again,
// with its epochs.
func TestRedisHAConfig_WholeSetRestart_TheLastPrimaryFromTheSentinelsFile(t *testing.T) {
	dir := t.TempDir()
	addr := func() string { return "127.0.0.1:" + strconv.Itoa(testredis.FreePort(t)) }
	nodes := []string{addr(), addr(), addr()}
	state := filepath.Join(dir, "sentinel.conf")
	host, port, _ := strings.Cut(nodes[2], ":")
	prev := "sentinel monitor formsservice " + host + " " + port + " 2\nsentinel config-epoch formsservice 5\nsentinel current-epoch 6\n"
	if err := os.WriteFile(state, []byte(prev), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := cli(t, "redis-ha-config", "--nodes", strings.Join(nodes, ","),
		"--sentinels", strings.Join([]string{addr(), addr(), addr()}, ","), "--self", "acme-redis-2", "--out", dir)
	if err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	if !strings.Contains(out, "is the primary (from state (the primary at epoch 5") {
		t.Errorf("stdout %q", out)
	}
	sc, _ := os.ReadFile(state)
	if !strings.Contains(string(sc), "sentinel monitor formsservice "+host+" "+port+" 2\nsentinel config-epoch formsservice 5\nsentinel current-epoch 6\n") {
		t.Errorf("sentinel.conf:\n%s", sc)
	}
}
