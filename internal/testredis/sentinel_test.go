package testredis

import (
	"testing"
	"time"
)

// The starter's sentinels are real: a SIGKILLed master is replaced by its replica, and a restarted old
// master is turned into the new master's replica by the sentinels.
func TestStartReplicated_MasterKilled_ReplicaPromoted_OldMasterRejoins(t *testing.T) {
	// down-after 3 s: at 1 s a sentinel on a loaded machine (CI) missed its pings and failed over again.
	st := StartReplicated(t, 1, 3, 3*time.Second)
	old := st.Master()
	if old != st.Nodes[0] {
		t.Fatalf("master %s, want %s", old.Addr(), st.Nodes[0].Addr())
	}
	old.Kill()
	promoted, _ := st.WaitFailover(old, 30*time.Second)
	if promoted != st.Nodes[1] {
		t.Fatalf("promoted %s, want the replica %s", promoted.Addr(), st.Nodes[1].Addr())
	}
	old.Restart()
	// The sentinels turn the restarted node into a replica; should they fail over once more, the other
	// way round is as good: with two nodes, a master with a synced replica means both are in the pair.
	st.WaitReplicated(1, 30*time.Second)
}
