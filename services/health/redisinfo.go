package health

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// redisStats is what the metrics need from one node's INFO: enough to see a store filling up, refusing
// writes, losing its AOF or its replicas, without running a separate Redis exporter.
type redisStats struct {
	node            string // the shard's address in a cluster; "primary" (Sentinel) or the address otherwise
	usedMemory      float64
	maxmemory       float64
	evictedKeys     float64
	oomErrors       float64 // errorstat_OOM: writes refused at maxmemory under noeviction
	aofEnabled      float64
	aofLastWriteOK  float64
	connectedSlaves float64
	master          float64
}

// readRedisStats reads INFO from the store the checks ping: every master of a cluster, or the one node
// a single or Sentinel client talks to. A node that does not answer is left out (its up gauge says 0).
func readRedisStats(ctx context.Context, rdb redis.UniversalClient, mode RedisMode) (stats []redisStats, up bool) {
	if cluster, ok := rdb.(*redis.ClusterClient); ok && mode == RedisCluster {
		var mu sync.Mutex
		err := cluster.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			info, err := c.Info(ctx, "memory", "stats", "persistence", "replication", "errorstats").Result()
			if err != nil {
				return err
			}
			mu.Lock()
			stats = append(stats, parseRedisStats(c.Options().Addr, info))
			mu.Unlock()
			return nil
		})
		return stats, err == nil
	}
	info, err := rdb.Info(ctx, "memory", "stats", "persistence", "replication", "errorstats").Result()
	if err != nil {
		return nil, false
	}
	node := "primary"
	if c, ok := rdb.(*redis.Client); ok && mode == RedisSingle {
		node = c.Options().Addr
	}
	return []redisStats{parseRedisStats(node, info)}, true
}

func parseRedisStats(node, info string) redisStats {
	num := func(key string) float64 {
		v, _ := strconv.ParseFloat(infoField(info, key), 64)
		return v
	}
	st := redisStats{
		node:            node,
		usedMemory:      num("used_memory"),
		maxmemory:       num("maxmemory"),
		evictedKeys:     num("evicted_keys"),
		aofEnabled:      num("aof_enabled"),
		connectedSlaves: num("connected_slaves"),
	}
	if infoField(info, "aof_last_write_status") == "ok" {
		st.aofLastWriteOK = 1
	}
	if infoField(info, "role") == "master" {
		st.master = 1
	}
	// errorstat_OOM:count=N
	if v, ok := strings.CutPrefix(infoField(info, "errorstat_OOM"), "count="); ok {
		st.oomErrors, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
	}
	return st
}

// redisDescs are the store's gauges and counters, one series per node.
type redisDescs struct {
	up, usedMemory, maxmemory, evicted, oom, aofEnabled, aofOK, replicas, master *prometheus.Desc
}

func newRedisDescs() redisDescs {
	node := []string{"node"}
	return redisDescs{
		up: prometheus.NewDesc("formsservice_redis_info_up",
			"1 when the latest health round read INFO from every node of the store, else 0.", nil, nil),
		usedMemory: prometheus.NewDesc("formsservice_redis_used_memory_bytes",
			"Memory Redis has allocated for data (INFO used_memory).", node, nil),
		maxmemory: prometheus.NewDesc("formsservice_redis_maxmemory_bytes",
			"Redis's maxmemory (0: no limit). At used_memory >= maxmemory with noeviction, writes are refused.", node, nil),
		evicted: prometheus.NewDesc("formsservice_redis_evicted_keys_total",
			"Keys Redis evicted to make room (INFO evicted_keys); always 0 under noeviction.", node, nil),
		oom: prometheus.NewDesc("formsservice_redis_rejected_writes_total",
			"Commands Redis refused because it was at maxmemory (INFO errorstats, errorstat_OOM).", node, nil),
		aofEnabled: prometheus.NewDesc("formsservice_redis_aof_enabled",
			"1 when the append-only file is on (INFO aof_enabled).", node, nil),
		aofOK: prometheus.NewDesc("formsservice_redis_aof_last_write_ok",
			"1 when the last write to the append-only file succeeded (INFO aof_last_write_status), 0 when it failed or AOF is off.", node, nil),
		replicas: prometheus.NewDesc("formsservice_redis_connected_replicas",
			"Replicas connected to this node (INFO connected_slaves).", node, nil),
		master: prometheus.NewDesc("formsservice_redis_master",
			"1 when the node is a master (INFO role), 0 for a replica.", node, nil),
	}
}

func (d redisDescs) describe(ch chan<- *prometheus.Desc) {
	for _, x := range []*prometheus.Desc{d.up, d.usedMemory, d.maxmemory, d.evicted, d.oom, d.aofEnabled, d.aofOK, d.replicas, d.master} {
		ch <- x
	}
}

func (d redisDescs) collect(ch chan<- prometheus.Metric, stats []redisStats, up bool) {
	ch <- prometheus.MustNewConstMetric(d.up, prometheus.GaugeValue, b2f(up))
	for _, s := range stats {
		ch <- prometheus.MustNewConstMetric(d.usedMemory, prometheus.GaugeValue, s.usedMemory, s.node)
		ch <- prometheus.MustNewConstMetric(d.maxmemory, prometheus.GaugeValue, s.maxmemory, s.node)
		ch <- prometheus.MustNewConstMetric(d.evicted, prometheus.CounterValue, s.evictedKeys, s.node)
		ch <- prometheus.MustNewConstMetric(d.oom, prometheus.CounterValue, s.oomErrors, s.node)
		ch <- prometheus.MustNewConstMetric(d.aofEnabled, prometheus.GaugeValue, s.aofEnabled, s.node)
		ch <- prometheus.MustNewConstMetric(d.aofOK, prometheus.GaugeValue, s.aofLastWriteOK*s.aofEnabled, s.node)
		ch <- prometheus.MustNewConstMetric(d.replicas, prometheus.GaugeValue, s.connectedSlaves, s.node)
		ch <- prometheus.MustNewConstMetric(d.master, prometheus.GaugeValue, s.master, s.node)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
