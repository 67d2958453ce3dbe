package testredis

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"

	"github.com/redis/go-redis/v9"
)

// Replicas are synced when StartCluster returns, so killing a master at once is followed by a failover.
func TestStartCluster_MasterKilledAtOnce_ReplicaTakesOver(t *testing.T) {
	c := StartCluster(t, 3, 1)
	var victim *Server
	for _, n := range c.Nodes {
		cl := redis.NewClient(&redis.Options{Addr: n.Addr()})
		info, err := cl.Info(context.Background(), "replication").Result()
		cl.Close()
		if err == nil && strings.Contains(info, "role:master") {
			victim = n
			break
		}
	}
	if victim == nil {
		t.Fatal("no master found")
	}
	victim.Kill()
	testwait.For(t, 20*time.Second, "a replica to take over", func() bool { return masters(c, victim) >= 3 })
	c.WaitOK(20 * time.Second)
	if err := c.Client().Set(context.Background(), "after-failover", "1", 0).Err(); err != nil {
		t.Fatalf("write after failover: %v", err)
	}
}

// masters counts the live nodes (all but skip) that say they are a master.
func masters(c *Cluster, skip *Server) int {
	n := 0
	for _, node := range c.Nodes {
		if node == skip {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: node.Addr(), MaxRetries: -1})
		info, err := cl.Info(context.Background(), "replication").Result()
		cl.Close()
		if err == nil && strings.Contains(info, "role:master") {
			n++
		}
	}
	return n
}
