package testredis

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of real redis-server processes on loopback.
type Cluster struct {
	tb    testing.TB
	Nodes []*Server
}

// StartCluster starts masters*(1+replicas) nodes, joins them with redis-cli --cluster create and waits
// until every node reports cluster_state:ok. An Options (persistence; not Unix, TLS or Password) applies
// to every node. Under `go test -short` (make test-fast) it skips the test: a cluster is no unit test.
func StartCluster(tb testing.TB, masters, replicas int, opts ...Options) *Cluster {
	tb.Helper()
	if testing.Short() {
		tb.Skip("needs a Redis Cluster: not run under -short (make test-fast); make test runs it")
	}
	cli := find(tb, "REDIS_CLI", "redis-cli")
	c := &Cluster{tb: tb}
	var node Options
	if len(opts) > 0 {
		node = opts[0]
	}
	node.Args = append([]string{"--cluster-enabled", "yes", "--cluster-node-timeout", "1500",
		"--cluster-config-file", "nodes.conf",
		// Replicas sync at once instead of after Redis' default 5 s delay, so that a test can kill a
		// master right after start-up and see a failover.
		"--repl-diskless-sync-delay", "0"}, node.Args...)
	var addrs []string
	for range masters * (1 + replicas) {
		n := Start(tb, node)
		c.Nodes = append(c.Nodes, n)
		addrs = append(addrs, n.Addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		tb.Fatalf("redis-cli --cluster create: %v\n%s", err, tail(string(out), 2000))
	}
	c.WaitOK(30 * time.Second)
	if replicas > 0 {
		c.waitReplicasOnline(masters*replicas, 30*time.Second)
	}
	return c
}

// waitReplicasOnline waits until want replicas report their link to the master up and synced.
func (c *Cluster) waitReplicasOnline(want int, within time.Duration) {
	c.tb.Helper()
	testwait.Until(c.tb, within, fmt.Sprintf("%d cluster replicas synced", want), func() error {
		online := 0
		for _, n := range c.Nodes {
			cl := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			info, err := cl.Info(ctx, "replication").Result()
			cancel()
			cl.Close()
			if err == nil && strings.Contains(info, "role:slave") && strings.Contains(info, "master_link_status:up") &&
				strings.Contains(info, "master_sync_in_progress:0") {
				online++
			}
		}
		if online < want {
			return fmt.Errorf("%d synced", online)
		}
		return nil
	})
}

// Addrs lists every node's host:port (seed addresses for a ClusterClient).
func (c *Cluster) Addrs() []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.Addr())
	}
	return out
}

// Client returns a cluster client for assertions, closed when the test ends.
func (c *Cluster) Client() *redis.ClusterClient {
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	c.tb.Cleanup(func() { cl.Close() })
	return cl
}

// WaitOK waits until every running node reports cluster_state:ok and agrees on the slot map.
func (c *Cluster) WaitOK(within time.Duration) {
	c.tb.Helper()
	testwait.Until(c.tb, within, "every running node of the redis cluster ok", func() error {
		for _, n := range c.Nodes {
			select {
			case <-n.done:
				continue // a killed node
			default:
			}
			cl := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			info, err := cl.ClusterInfo(ctx).Result()
			cancel()
			cl.Close()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return fmt.Errorf("%s: %v %.80q", n.Addr(), err, info)
			}
		}
		return nil
	})
}
