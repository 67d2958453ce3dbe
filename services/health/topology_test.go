package health

import (
	"testing"
	"time"

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
	srv := startHealth(t, &config.Config{}, Options{Redis: rdb, RedisMode: RedisCluster})

	r := getHealth(t, srv.URL)
	if r.Code != 200 || r.status(t, "redis:responseTime") != Pass || r.check(t, "redis:clusterState")["observedValue"] != "ok" {
		t.Fatalf("healthy cluster: %d %s", r.Code, r.Raw)
	}

	cl.Nodes[1].Kill() // a master without a replica: its slots are lost
	r = srv.fresh(t)
	if r.Code != 503 || r.status(t, "redis:responseTime") != Fail {
		t.Fatalf("a shard is down, its PING must fail at once: %d %s", r.Code, r.Raw)
	}
	srv.waitFor(t, 15*time.Second, "cluster_state:fail", func(r reply) bool {
		c := r.checkMap["redis:clusterState"]
		return r.Code == 503 && len(c) == 1 && c[0]["observedValue"] == "fail" && c[0]["output"] == "cluster_state is fail"
	})
}

// For Sentinel the body reports the role of the node Sentinel handed out.
func TestHealth_RedisSentinel_ReportsTheMastersRole(t *testing.T) {
	master := testredis.Start(t)
	sentinel := testredis.StartSentinel(t, "mymaster", master)
	rdb, err := redisclient.New(config.Redis{Addrs: []string{sentinel.Addr()}, MasterName: "mymaster", Timeout: ms(time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	srv := startHealth(t, &config.Config{}, Options{Redis: rdb, RedisMode: RedisSentinel})

	r := srv.waitFor(t, 10*time.Second, "sentinel healthy", func(r reply) bool { return r.Code == 200 })
	if c := r.check(t, "redis:role"); c["status"] != "pass" || c["observedValue"] != "master" {
		t.Fatalf("role: %s", r.Raw)
	}
	// The INFO metrics are the master's, under node="primary" (its address changes with a failover).
	if v, found := value(scrape(t, srv.URL), "formsservice_redis_master", "primary"); !found || v != 1 {
		t.Errorf("formsservice_redis_master{node=\"primary\"} = %v (found %v)", v, found)
	}

	master.Stop()
	r = srv.fresh(t)
	if r.Code != 503 || r.status(t, "redis:responseTime") != Fail || r.status(t, "redis:role") != Fail {
		t.Fatalf("master down: %d %s", r.Code, r.Raw)
	}
}
