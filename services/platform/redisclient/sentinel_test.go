package redisclient

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Sentinels with a password of their own (requirepass in sentinel.conf) in front of data nodes with
// another: sentinelPasswordFile reaches the sentinels, passwordFile the master they name. Without the
// sentinels' password the client cannot learn the master at all.
func TestNew_SentinelWithItsOwnPassword(t *testing.T) {
	st := testredis.StartReplicatedWith(t, testredis.Replication{Replicas: 1, Sentinels: 1, DownAfter: 30 * time.Second,
		Node: testredis.Options{Password: "node-secret"}, SentinelPassword: "sentinel-secret"})
	dir := t.TempDir()
	nodePW, sentinelPW := filepath.Join(dir, "node"), filepath.Join(dir, "sentinel")
	write(t, nodePW, []byte("node-secret\n"))
	write(t, sentinelPW, []byte("sentinel-secret\n"))
	ctx := context.Background()

	c := config.Redis{Addrs: st.Addrs(), MasterName: testredis.MasterName, PasswordFile: nodePW,
		SentinelPasswordFile: sentinelPW, Timeout: config.Duration(15 * time.Second)} // a bound, not a wait
	rdb, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through authenticated sentinels: %v", err)
	}
	if v := st.Master().Client().Get(ctx, "k").Val(); v != "v" {
		t.Fatalf("the master has %q, want v", v)
	}

	c.SentinelPasswordFile = ""
	bare, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	if err := bare.Ping(ctx).Err(); err == nil || !strings.Contains(strings.ToLower(err.Error()), "auth") {
		t.Fatalf("without the sentinels' password: %v, want an authentication error", err)
	}

	// REDIS_SENTINEL_PASSWORD stands in for the file.
	env, err := New(c, func(k string) string {
		if k == "REDIS_SENTINEL_PASSWORD" {
			return "sentinel-secret"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if err := env.Ping(ctx).Err(); err != nil {
		t.Fatalf("with REDIS_SENTINEL_PASSWORD: %v", err)
	}
}
