package redisha_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/formsservice/formsservice/controllers/haroll"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/platform/redisha"
)

// rollObserved is what the operator's roll sees of the set: every pod present and Ready (each restart
// here is done when it returns), updated once restarted, and the roles as Observe reads them.
func (h *haSet) rollObserved(updated map[int]bool) haroll.Observed {
	var pods []haroll.Pod
	for i := range h.nodes {
		ready := h.client(h.nodes[i]).Ping(context.Background()).Err() == nil && h.sentinelClient(i).Ping(context.Background()).Err() == nil
		pods = append(pods, haroll.Pod{Name: fmt.Sprintf("pod-%d", i), Addr: h.nodes[i], Present: true, Ready: ready, Updated: updated[i]})
	}
	return haroll.WithRoles(pods, redisha.Observe(context.Background(), h.node(0)))
}

// TestHA_Roll_PrimaryHandedOverBeforeItsPodRestarts_NoAcknowledgedLoss is the operator's roll of the
// highly available Redis (controllers/haroll, D85) on real redis-server and Sentinel processes, under
// forms writers at durability primary through the sentinels: each step is haroll.Decide's on what
// Observe reads, a pod's deletion is its Redis and sentinel killed and started again through the init
// step, and the switchover is Switchover. The replicas restart first, then the primary is handed over
// (the sentinels name a replica, the old primary follows it before its pod restarts), then the old
// primary restarts as a replica. Every acknowledged submission is on the final primary.
func TestHA_Roll_PrimaryHandedOverBeforeItsPodRestarts_NoAcknowledgedLoss(t *testing.T) {
	h := newHASet(t)
	h.startTogether(0, 1, 2)
	h.waitSyncedReplicaOf(1, h.nodes[0])
	h.waitSyncedReplicaOf(2, h.nodes[0])
	h.waitSentinelsKnow([]int{0, 1, 2}, 2, 2)

	load := startFormsLoad(t, h.sentinelStore(), "roll", 4)
	load.waitAcked(100, 30*time.Second, "before the roll")

	updated := map[int]bool{}
	var steps []string
	var switchedAt time.Time
	var handover time.Duration
	for len(steps) < 8 {
		var d haroll.Decision
		testwait.Until(t, 60*time.Second, "the roll's next step", func() error {
			d = haroll.Decide(h.rollObserved(updated))
			if d.Step == haroll.Wait {
				return errors.New(d.Message)
			}
			return nil
		})
		if d.Step == haroll.Done {
			break
		}
		steps = append(steps, d.Step.String()+" "+d.Pod)
		i := slices.IndexFunc([]string{"pod-0", "pod-1", "pod-2"}, func(n string) bool { return n == d.Pod })
		switch d.Step {
		case haroll.DeletePod:
			if st := redisha.Observe(context.Background(), h.node(0)); st.Primary == h.nodes[i] {
				t.Fatalf("the roll deletes %s, the primary the sentinels name", d.Pod)
			}
			h.kill(i)
			h.start(i)
			updated[i] = true
			load.waitAcked(50, 30*time.Second, "after "+d.Pod+" restarted")
		case haroll.Switchover:
			_, before := load.counts()
			start := time.Now()
			promoted, err := redisha.Switchover(context.Background(), h.node(0), h.nodes[i])
			handover = time.Since(start)
			if err != nil {
				t.Fatalf("switchover of %s: %v", d.Pod, err)
			}
			switchedAt = time.Now()
			if promoted == h.nodes[i] || h.replication(promoted)["role"] != "master" {
				t.Fatalf("promoted %s: %v", promoted, h.replication(promoted))
			}
			// Before its pod restarts, the old primary is already a replica of the new one.
			if f := h.replication(h.nodes[i]); f["role"] != "slave" || f["master_host"]+":"+f["master_port"] != promoted {
				t.Fatalf("the old primary after the switchover: %v, want a replica of %s", f, promoted)
			}
			_, after := load.counts()
			t.Logf("handed %s over to %s in %s; %d submissions refused meanwhile", d.Pod, promoted, handover.Round(time.Millisecond), after-before)
		}
	}
	want := []string{"DeletePod pod-2", "DeletePod pod-1", "Switchover pod-0", "DeletePod pod-0"}
	if !slices.Equal(steps, want) {
		t.Fatalf("steps %v, want %v", steps, want)
	}
	load.waitAcked(50, 30*time.Second, "after the roll")
	load.end()

	st := redisha.Observe(context.Background(), h.node(0))
	acked := load.acknowledged()
	_, failures := load.counts()
	t.Logf("%d acknowledged, %d refused or failed over the whole roll; the switchover took %s, ended %s before the end",
		len(acked), failures, handover.Round(time.Millisecond), time.Since(switchedAt).Round(time.Millisecond))
	if lost := h.missing(st.Primary, acked); len(lost) != 0 {
		t.Fatalf("%d of %d acknowledged submissions missing on the final primary %s: %v", len(lost), len(acked), st.Primary, lost)
	}
}

// A switchover that cannot hand over changes nothing: with no replica connected the primary stays the
// primary and takes writes again at once (the pause is lifted), and the error says why.
func TestSwitchover_NoReplica_NothingChangesAndWritesResume(t *testing.T) {
	h := newHASet(t)
	h.startTogether(0, 1, 2)
	h.waitSyncedReplicaOf(1, h.nodes[0])
	h.waitSyncedReplicaOf(2, h.nodes[0])
	h.kill(1)
	h.kill(2)
	testwait.Until(t, 30*time.Second, "the primary to see no replica", func() error {
		if f := h.replication(h.nodes[0]); f["connected_slaves"] != "0" {
			return fmt.Errorf("%v", f["connected_slaves"])
		}
		return nil
	})
	_, err := redisha.Switchover(context.Background(), h.node(0), h.nodes[0])
	if err == nil || err.Error() != h.nodes[0]+" has no connected replica" {
		t.Fatalf("err %v, want: no connected replica", err)
	}
	if f := h.replication(h.nodes[0]); f["role"] != "master" {
		t.Fatalf("pod 0 after a refused switchover: %v", f)
	}
	// Not paused: PUBLISH, which CLIENT PAUSE WRITE holds and which needs no replica, answers at once.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	if err := h.client(h.nodes[0]).Publish(ctx, "probe", "x").Err(); err != nil {
		t.Fatalf("PUBLISH after the refused switchover: %v", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("PUBLISH waited %s: the switchover's pause was not lifted", d)
	}
}
