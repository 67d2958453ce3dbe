package health

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"

	dto "github.com/prometheus/client_model/go"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/redisclient"
)

// value returns the family's single sample (gauge or counter) for node, and whether there is one.
func value(fams map[string]*dto.MetricFamily, name, node string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		labelled := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == "node" {
				labelled = l.GetValue()
			}
		}
		if labelled != node {
			continue
		}
		if f.GetType() == dto.MetricType_COUNTER {
			return m.GetCounter().GetValue(), true
		}
		return m.GetGauge().GetValue(), true
	}
	return 0, false
}

// The store's INFO shows on /metrics: memory against maxmemory, writes refused when full, the AOF, the
// role and the replicas, read from a real primary (AOF on, 4 MB maxmemory, noeviction) with one replica.
func TestMetrics_RedisInfo_MemoryRefusedWritesAOFAndReplicas(t *testing.T) {
	const maxmemory = 4 << 20
	primary := testredis.Start(t, testredis.Options{AppendOnly: true,
		Args: []string{"--maxmemory", strconv.Itoa(maxmemory), "--maxmemory-policy", "noeviction"}})
	host, port, _ := strings.Cut(primary.Addr(), ":")
	testredis.Start(t, testredis.Options{Args: []string{"--replicaof", host, port}})

	// Fill the primary until it refuses a write.
	rdb := primary.Client()
	big := strings.Repeat("x", 64<<10)
	refused := false
	for i := 0; i < 200 && !refused; i++ {
		if err := rdb.Set(t.Context(), "fill:"+strconv.Itoa(i), big, 0).Err(); err != nil {
			if !strings.HasPrefix(err.Error(), "OOM ") {
				t.Fatalf("write %d: %v", i, err)
			}
			refused = true
		}
	}
	if !refused {
		t.Fatal("the primary never refused a write")
	}

	srv := startHealth(t, &config.Config{Health: config.Health{CacheFor: ms(time.Millisecond)}},
		Options{Redis: redisClient(t, primary.URL())})
	node := primary.Addr()
	var fams map[string]*dto.MetricFamily
	testwait.For(t, 10*time.Second, "formsservice_redis_connected_replicas to reach 1 (the replica's link)", func() bool {
		fams = scrape(t, srv.URL)
		v, _ := value(fams, "formsservice_redis_connected_replicas", node)
		return v == 1
	})
	if v, _ := value(fams, "formsservice_redis_info_up", ""); v != 1 {
		t.Errorf("info_up = %v, want 1", v)
	}
	want := map[string]func(float64) bool{
		"formsservice_redis_used_memory_bytes":     func(v float64) bool { return v > maxmemory/2 },
		"formsservice_redis_maxmemory_bytes":       func(v float64) bool { return v == maxmemory },
		"formsservice_redis_rejected_writes_total": func(v float64) bool { return v >= 1 },
		"formsservice_redis_evicted_keys_total":    func(v float64) bool { return v == 0 },
		"formsservice_redis_aof_enabled":           func(v float64) bool { return v == 1 },
		"formsservice_redis_aof_last_write_ok":     func(v float64) bool { return v == 1 },
		"formsservice_redis_master":                func(v float64) bool { return v == 1 },
	}
	for name, ok := range want {
		v, found := value(fams, name, node)
		if !found || !ok(v) {
			t.Errorf("%s{node=%q} = %v (found %v)", name, node, v, found)
		}
	}
}

// A store that does not answer INFO says so (info_up 0) instead of repeating old figures.
func TestMetrics_RedisInfo_StoreDownIsInfoUpZero(t *testing.T) {
	rs := testredis.Start(t)
	srv := startHealth(t, &config.Config{Health: config.Health{CacheFor: ms(time.Millisecond)}},
		Options{Redis: redisClient(t, rs.URL())})
	if v, _ := value(scrape(t, srv.URL), "formsservice_redis_info_up", ""); v != 1 {
		t.Fatalf("info_up = %v with the store up", v)
	}
	rs.Kill()
	srv.expire() // the next scrape runs a new round of checks
	fams := scrape(t, srv.URL)
	if v, found := value(fams, "formsservice_redis_info_up", ""); !found || v != 0 {
		t.Errorf("info_up = %v (found %v) with the store down, want 0", v, found)
	}
	if _, found := value(fams, "formsservice_redis_used_memory_bytes", rs.Addr()); found {
		t.Error("used_memory is still reported for a store that is down")
	}
}

// On a Redis Cluster every master reports its own series, labelled with its address: one full shard
// is visible although the others have room.
func TestMetrics_RedisInfo_ClusterReportsEveryMaster(t *testing.T) {
	cl := testredis.StartCluster(t, 3, 0)
	rdb, err := redisclient.New(config.Redis{Addrs: cl.Addrs(), Cluster: true, Timeout: ms(time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	srv := startHealth(t, &config.Config{Health: config.Health{CacheFor: ms(time.Millisecond)}},
		Options{Redis: rdb, RedisMode: RedisCluster})
	fams := scrape(t, srv.URL)
	if v, _ := value(fams, "formsservice_redis_info_up", ""); v != 1 {
		t.Errorf("info_up = %v, want 1", v)
	}
	for _, n := range cl.Nodes {
		if v, found := value(fams, "formsservice_redis_master", n.Addr()); !found || v != 1 {
			t.Errorf("master %s: formsservice_redis_master = %v (found %v)", n.Addr(), v, found)
		}
		if v, found := value(fams, "formsservice_redis_used_memory_bytes", n.Addr()); !found || v <= 0 {
			t.Errorf("master %s: used_memory = %v (found %v)", n.Addr(), v, found)
		}
	}
	if n := len(fams["formsservice_redis_used_memory_bytes"].GetMetric()); n != 3 {
		t.Errorf("%d used_memory series, want one per master (3)", n)
	}
}
