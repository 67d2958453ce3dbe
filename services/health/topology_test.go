package health

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/redisclient"
)

// For a Redis Cluster the body reports what the client sees: every shard's PING and cluster_state.
func TestHealth_RedisCluster_ReportsClusterStateAndFailsWhenAShardIsLost(t *testing.T) {
	cl := testredis.StartCluster(t, 3, 0)
	rdb, err := redisclient.New(config.Redis{Addrs: cl.Addrs(), Cluster: true, Timeout: ms(time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	srv := startHealth(t, &config.Config{Health: config.Health{CacheFor: ms(time.Millisecond)}},
		Options{Redis: rdb, RedisMode: RedisCluster})

	r := getHealth(t, srv.URL)
	if r.Code != 200 || r.status(t, "redis:responseTime") != Pass || r.check(t, "redis:clusterState")["observedValue"] != "ok" {
		t.Fatalf("healthy cluster: %d %s", r.Code, r.Raw)
	}

	cl.Nodes[1].Kill() // a master without a replica: its slots are lost
	r = getHealth(t, srv.URL)
	if r.Code != 503 || r.status(t, "redis:responseTime") != Fail {
		t.Fatalf("a shard is down, its PING must fail at once: %d %s", r.Code, r.Raw)
	}
	waitFor(t, srv.URL, 15*time.Second, "cluster_state:fail", func(r reply) bool {
		c := r.checkMap["redis:clusterState"]
		return r.Code == 503 && len(c) == 1 && c[0]["observedValue"] == "fail" && c[0]["output"] == "cluster_state is fail"
	})
}

// For Sentinel the body reports the role of the node Sentinel handed out.
func TestHealth_RedisSentinel_ReportsTheMastersRole(t *testing.T) {
	master := testredis.Start(t)
	sentinel := startSentinel(t, master.Addr())
	rdb, err := redisclient.New(config.Redis{Addrs: []string{sentinel}, MasterName: "mymaster", Timeout: ms(time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	srv := startHealth(t, &config.Config{Health: config.Health{CacheFor: ms(time.Millisecond)}},
		Options{Redis: rdb, RedisMode: RedisSentinel})

	r := waitFor(t, srv.URL, 10*time.Second, "sentinel healthy", func(r reply) bool { return r.Code == 200 })
	if c := r.check(t, "redis:role"); c["status"] != "pass" || c["observedValue"] != "master" {
		t.Fatalf("role: %s", r.Raw)
	}

	master.Stop()
	r = getHealth(t, srv.URL)
	if r.Code != 503 || r.status(t, "redis:responseTime") != Fail || r.status(t, "redis:role") != Fail {
		t.Fatalf("master down: %d %s", r.Code, r.Raw)
	}
}

// startSentinel runs redis-server in Sentinel mode watching master (quorum 1) and returns its address.
func startSentinel(t *testing.T, master string) string {
	t.Helper()
	host, port := "127.0.0.1", master[len("127.0.0.1:"):]
	sport := testredis.FreePort(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	body := "port " + strconv.Itoa(sport) + "\nbind 127.0.0.1\ndir " + dir + "\n" +
		"sentinel monitor mymaster " + host + " " + port + " 1\n" +
		"sentinel down-after-milliseconds mymaster 60000\n"
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testredis.Binary(t), conf, "--sentinel")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sentinel: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(sport)
	c := redis.NewSentinelClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := contextWithTimeout(200 * time.Millisecond)
		_, err := c.GetMasterAddrByName(ctx, "mymaster").Result()
		cancel()
		if err == nil {
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("sentinel did not answer for mymaster: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
