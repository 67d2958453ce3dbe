//go:build !formsonly

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/audit"
)

// `formsservice audit verify` checks the security events' chain with the key derived from the signing
// key: the events the users commands wrote (created, disabled, signed out: nine, chained as the service
// chains them) hold; a deleted one
// breaks the chain, and the command says where and exits non-zero; without a signing key it refuses.
func TestAuditVerify_HoldsThenNamesTheBreak(t *testing.T) {
	srv := testredis.Start(t)
	dir := t.TempDir()
	keyFile := writeSigningKey(t, dir)
	cfg := filepath.Join(dir, "config.yaml")
	noKey := filepath.Join(dir, "nokey.yaml")
	base := "auth:\n  passwordHash: {memoryKiB: 64, iterations: 1}\n"
	for name, body := range map[string]string{cfg: base + "  signingKeyFile: " + keyFile + "\n", noKey: base} {
		if err := os.WriteFile(name, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, email := range []string{"ada@example.com", "grace@example.com", "linus@example.com"} {
		if out, err := usersCmd(t, srv.URL(), cfg, "a long enough password\n", "create", "-email", email); err != nil {
			t.Fatalf("create %s: %v %s", email, err, out)
		}
		if out, err := usersCmd(t, srv.URL(), cfg, "", "disable", "-email", email); err != nil {
			t.Fatalf("disable %s: %v %s", email, err, out)
		}
	}
	verify := func(config string) (string, error) {
		env := map[string]string{"REDIS_URL": srv.URL(), "FORMSSERVICE_CONFIG": config}
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"audit", "verify"}, func(k string) string { return env[k] }, strings.NewReader(""), &out, &errOut)
		return out.String() + errOut.String(), err
	}
	if out, err := verify(cfg); err != nil || !strings.Contains(out, "the chain holds: 9 security events, 9 chained") {
		t.Fatalf("verify: %v %s", err, out)
	}
	if out, err := verify(noKey); err == nil || !strings.Contains(err.Error(), "auth.signingKeyFile") {
		t.Fatalf("verify without a signing key: %v %s", err, out)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	msgs := rdb.XRange(context.Background(), audit.StreamKey, "-", "+").Val()
	rdb.XDel(context.Background(), audit.StreamKey, msgs[2].ID)
	if out, err := verify(cfg); err == nil || !strings.Contains(err.Error(), "breaks at "+msgs[3].ID) {
		t.Fatalf("verify after a deletion: %v %s", err, out)
	}
}
