package reliability

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
)

// reconnectSlack is how long after a replica took over that the service may still answer 502: its
// Redis client learns the new slot map on the next error, not at the instant of the promotion (go-redis
// reloads it at most once a second, and a loaded CI machine adds its own delay).
const reconnectSlack = 3 * time.Second

// timedAnswer is an answer with when its request started.
type timedAnswer struct {
	kind    string
	key     string
	started time.Time
	ans     answer
}

// TestCluster_MasterKilledUnderLoad_502OnlyWithoutMaster_ThenRecovers runs `formsservice forms` on a
// Redis Cluster of 3 masters with 1 replica each, all on loopback, and SIGKILLs the master that holds
// the waitlist's slot during a load of waitlist and contact submissions. The service must keep answering
// (201, or 502 only between the kill and the replica's promotion), never 500, never hang, and be back
// to 201 without a restart.
func TestCluster_MasterKilledUnderLoad_502OnlyWithoutMaster_ThenRecovers(t *testing.T) {
	lost := clusterFailover(t, false)
	// Redis replicates asynchronously: at the default durability a write acknowledged by the old master
	// in its last moment may not have reached the replica. Such losses are counted (they are Redis's,
	// documented in docs/security.md); durability primary removes them (the next test).
	t.Logf("acknowledged writes missing after failover (asynchronous replication): %d", lost)
}

// TestCluster_MasterKilledUnderLoad_PrimaryDurability_NoAcknowledgedWriteLost is the same failover with
// forms.durability primary: every 201 waited for a replica's WAIT acknowledgement, so none of them is
// missing on the promoted replica. The killed master comes back as the new master's replica; until it
// has synced, the slot's writes cannot be acknowledged and answer 502.
func TestCluster_MasterKilledUnderLoad_PrimaryDurability_NoAcknowledgedWriteLost(t *testing.T) {
	if lost := clusterFailover(t, true); lost != 0 {
		t.Fatalf("%d acknowledged writes missing after failover at durability primary, want 0", lost)
	}
}

// clusterFailover runs the failover under load and returns how many acknowledged submissions are
// missing afterwards.
func clusterFailover(t *testing.T, primary bool) int {
	const workers = 6
	cl := testredis.StartCluster(t, 3, 1, testredis.Options{AppendFsync: "no"})
	waitReplicasInSync(t, cl, 30*time.Second)
	extra := ""
	if primary {
		extra = "  durability: primary\n"
	}
	cfg := formsConfig(redisClusterSection(cl.Addrs()), extra)
	forms := startProc(t, "forms", cfg, nil)
	fc := newFormsClient(forms.Base, workers)
	defer fc.close()

	victim, slot := masterOf(t, cl, "{waitlist}")
	contactMaster, _ := masterOf(t, cl, "{contact}")
	t.Logf("slot %d of {waitlist} is on master %s ({contact} is on %s)", slot, victim.Addr(), contactMaster.Addr())

	load := startFormsLoad(t, fc, workers, "cluster")
	stored := func(from time.Time) int { // waitlist answers 201 to requests started at from or later
		n := 0
		for _, a := range load.Answers() {
			if a.kind == "waitlist" && a.ans.status == 201 && !a.started.Before(from) {
				n++
			}
		}
		return n
	}
	testwait.For(t, 30*time.Second, "25 waitlist submissions stored before the kill", func() bool { return stored(time.Time{}) >= 25 })
	killedAt := time.Now()
	victim.Kill()
	promotedAt := waitPromotion(t, cl, victim, slot, 30*time.Second)
	writableAt := promotedAt
	if primary {
		// The new master has no replica: bring the old one back as its replica.
		victim.Restart()
		vc := victim.Client()
		testwait.For(t, 30*time.Second, "the old master back as a synced replica", func() bool {
			info, err := vc.Info(context.Background(), "replication").Result()
			return err == nil && strings.Contains(info, "role:slave") && strings.Contains(info, "master_link_status:up")
		})
		writableAt = time.Now()
	}
	// Load on the new master: requests started after the window may answer 201 only.
	windowEnd := writableAt.Add(reconnectSlack)
	testwait.For(t, 30*time.Second, "25 waitlist submissions stored after the window without a master", func() bool {
		return time.Now().After(windowEnd) && stored(windowEnd) >= 25
	})
	answers := load.Stop()

	allowed := 0
	if primary {
		allowed = notDurable502s(t, forms.Base)
	}
	v := judgeFailover(t, answers, failoverWindow{killedAt: killedAt, promotedAt: promotedAt, writableAt: writableAt, allowedOutside: allowed})
	counts, lastFailure, slowest := v.counts, v.lastFailure, v.slowest
	// Recovered without a restart: every submission after the window was stored.
	if a := fc.post("/waitlist", waitlistBody("after-failover@example.com")); a.status != 201 {
		t.Errorf("after the failover: %d %s", a.status, a.body)
	}

	lost := lostAcknowledged(t, answers, cfg) // acknowledged submissions missing after the failover
	t.Logf("%d submissions by %d workers; master %s SIGKILLed, replica promoted after %s; last 502 at %s after the kill",
		len(answers), workers, victim.Addr(), promotedAt.Sub(killedAt).Round(time.Millisecond), lastFailure.Sub(killedAt).Round(time.Millisecond))
	t.Logf("answers: %s; slowest %s", sortedCounts(counts), slowest.Round(time.Millisecond))
	if counts["waitlist 201"] < 50 {
		t.Errorf("too little load got through: %v", counts)
	}
	if counts["waitlist 502"] == 0 {
		t.Error("no waitlist submission failed while its slot had no master: the kill did not hit the load")
	}
	return lost
}

// masterOf finds the node serving key's slot.
func masterOf(t *testing.T, cl *testredis.Cluster, key string) (*testredis.Server, int) {
	t.Helper()
	ctx := context.Background()
	c := cl.Client()
	slot, err := c.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	shards, err := c.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	master := slotMaster(shards, int(slot))
	for _, n := range cl.Nodes {
		if n.Addr() == master {
			return n, int(slot)
		}
	}
	t.Fatalf("no master for slot %d", slot)
	return nil, 0
}

// slotMaster is host:port of the healthy master serving slot, or "".
func slotMaster(shards []redis.ClusterShard, slot int) string {
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if r.Start > int64(slot) || int64(slot) > r.End {
				continue
			}
			for _, n := range sh.Nodes {
				if n.Role == "master" && n.Health == "online" {
					return net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
				}
			}
		}
	}
	return ""
}

// waitPromotion polls a surviving node until the slot has a master other than the victim and the
// cluster state is ok again, and returns when that was first seen.
func waitPromotion(t *testing.T, cl *testredis.Cluster, victim *testredis.Server, slot int, within time.Duration) time.Time {
	t.Helper()
	var probe *testredis.Server
	for _, n := range cl.Nodes {
		if n != victim {
			probe = n
			break
		}
	}
	c := redis.NewClient(&redis.Options{Addr: probe.Addr(), MaxRetries: -1})
	defer c.Close()
	testwait.For(t, within, fmt.Sprintf("a replica to take over slot %d", slot), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		info, _ := c.ClusterInfo(ctx).Result()
		shards, _ := c.ClusterShards(ctx).Result()
		m := slotMaster(shards, slot)
		return strings.Contains(info, "cluster_state:ok") && m != "" && m != victim.Addr()
	})
	return time.Now()
}

// waitReplicasInSync waits until every replica has finished its first sync with its master. A replica
// joins with an empty data set and the master's diskless sync starts after a delay (5 s by default); a
// master killed before that leaves a replica that Redis will not promote, which is a set-up problem,
// not the failover this test is about.
func waitReplicasInSync(t *testing.T, cl *testredis.Cluster, within time.Duration) {
	t.Helper()
	testwait.Until(t, within, "every replica in sync with its master", func() error {
		for _, n := range cl.Nodes {
			c := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
			info, err := c.Info(context.Background(), "replication").Result()
			c.Close()
			if err != nil || !(strings.Contains(info, "role:master") || strings.Contains(info, "master_link_status:up")) {
				return fmt.Errorf("replica %s: %v\n%s", n.Addr(), err, info)
			}
		}
		return nil
	})
}
