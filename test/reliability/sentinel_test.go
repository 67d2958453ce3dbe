package reliability

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"

	"github.com/formsservice/formsservice/internal/testredis"
)

// redisSentinelSection is the bring-your-own HA recipe's redis section (docs/operator.md, "When to bring
// your own Redis"): the sentinels' addresses and the name they monitor the master under.
func redisSentinelSection(sentinels []string) string {
	return "  masterName: " + testredis.MasterName + "\n  addrs: [" + strings.Join(sentinels, ", ") + "]\n"
}

// TestSentinel_MasterKilledUnderLoad_FormsAndAuthKeepWorking_NoAcknowledgedLossAtPrimary runs the forms
// service (durability primary) and the auth service on a master with one replica, watched by three
// real redis-sentinel processes (quorum 2), all on loopback, and SIGKILLs the master under a load of
// submissions. Forms answer 201, or 502 only between the kill and the moment the new master has a
// replica again (the old master, restarted, turned into its replica by the sentinels); auth answers
// 503 only until the promotion; both are back without a restart. No 201 is missing afterwards.
func TestSentinel_MasterKilledUnderLoad_FormsAndAuthKeepWorking_NoAcknowledgedLossAtPrimary(t *testing.T) {
	sentinelFailover(t, 1)
}

// TestSentinel_TwoReplicas_PrimaryDurability_502OnlyUntilTheOtherReplicaFollows is the recommended
// set-up for durability primary: with two replicas the new master still has one after the failover,
// so forms answer 502 only until the sentinels have pointed the remaining replica at it (no restart of
// the old master needed), and no 201 is missing.
func TestSentinel_TwoReplicas_PrimaryDurability_502OnlyUntilTheOtherReplicaFollows(t *testing.T) {
	sentinelFailover(t, 2)
}

// sentinelFailover is the failover under load on a master with the given number of replicas.
func sentinelFailover(t *testing.T, replicas int) {
	const workers = 4
	// down-after 3 s: with 1 s a sentinel on a loaded machine missed its pings and failed over again, to
	// the restarted old master before it had synced. The nodes keep an append-only file: durability
	// primary needs it of the primary (one that restarts empty would empty its replicas too).
	st := testredis.StartReplicatedWith(t, testredis.Replication{Replicas: replicas, Sentinels: 3, DownAfter: 3 * time.Second,
		Node: testredis.Options{AppendFsync: "no"}})
	section := redisSentinelSection(st.Addrs())
	cfg := formsConfig(section, "  durability: primary\n")
	forms := startProc(t, "forms", cfg, nil)
	fc := newFormsClient(forms.Base, workers)
	defer fc.close()
	auth := startAuth(t, section)
	grant := auth.signedIn(t)
	old := st.Master()
	// The auth service does not wait for replicas (its writes are Redis's asynchronous replication,
	// docs/security.md): have this grant on the replica before the kill, so the test is about the
	// failover and not about that documented window.
	if err := old.Client().Do(context.Background(), "WAIT", 1, 5000).Err(); err != nil {
		t.Fatal(err)
	}

	load := startFormsLoad(t, fc, workers, "sentinel")
	waitCreated := func(n int64, what string) {
		t.Helper()
		testwait.For(t, 30*time.Second, fmt.Sprintf("%s (%d submissions created)", what, n), func() bool { return load.Created() >= n })
	}
	waitCreated(100, "load before the kill")

	killedAt := time.Now()
	old.Kill()
	promoted, promotedAt := st.WaitFailover(old, 30*time.Second)

	// Auth: the grant issued before the kill still refreshes once the client follows the sentinels to
	// the new master; until then it answers 503, never anything else.
	var refreshed tokenAnswer
	testwait.Until(t, time.Until(promotedAt.Add(reconnectSlack+storeBound)), "the refresh to answer 200 after the promotion", func() error {
		refreshed = auth.refresh(grant.RefreshToken)
		switch refreshed.status {
		case 200:
			return nil
		case 503:
			return fmt.Errorf("503 %s %v", refreshed.Error, refreshed.err)
		}
		t.Fatalf("refresh after the failover: %d %s %v (want 200, or 503 until %s after the promotion)",
			refreshed.status, refreshed.Error, refreshed.err, reconnectSlack+storeBound)
		return nil
	})
	refreshedAt := time.Now()

	// At durability primary a 201 needs a replica of the new master: the sentinels point the other
	// replica at it, or, when there is none, the old master comes back and the sentinels make it one.
	// (Which node is master by then is the sentinels' choice: on a busy machine they may fail over
	// again; what counts is a master with a replica, and below, that no 201 is lost.)
	if replicas == 1 {
		old.Restart()
	}
	st.WaitReplicated(1, 30*time.Second)
	writableAt := time.Now()
	waitCreated(load.Created()+100, "load after the old master rejoined")
	answers := load.Stop()

	v := judgeFailover(t, answers, failoverWindow{killedAt: killedAt, promotedAt: promotedAt, writableAt: writableAt,
		allowedOutside: notDurable502s(t, forms.Base)}) // this test runs at durability primary
	counts, lastFailure := v.counts, v.lastFailure
	if counts["waitlist 502"]+counts["contact 502"] == 0 {
		t.Error("no submission failed while there was no master: the kill did not hit the load")
	}

	// Both services work without a restart: a new sign-in, the refreshed token, a new submission.
	if tk := auth.signedIn(t); tk.AccessToken == "" {
		t.Error("no access token from a sign-in after the failover")
	}
	if s := auth.userinfo(refreshed.AccessToken); s != 200 {
		t.Errorf("userinfo with the token refreshed after the failover: %d", s)
	}
	if a := fc.post("/waitlist", waitlistBody("after-sentinel-failover@example.com")); a.status != 201 {
		t.Errorf("after the failover: %d %s", a.status, a.body)
	}

	lost := lostAcknowledged(t, answers, cfg)
	t.Logf("%d submissions by %d workers; master %s SIGKILLed, %s promoted after %s, auth refreshed after %s, "+
		"a replica of the new master after %s; last 502 at %s",
		len(answers), workers, old.Addr(), promoted.Addr(), promotedAt.Sub(killedAt).Round(time.Millisecond),
		refreshedAt.Sub(killedAt).Round(time.Millisecond), writableAt.Sub(killedAt).Round(time.Millisecond),
		lastFailure.Sub(killedAt).Round(time.Millisecond))
	t.Logf("answers: %s", sortedCounts(counts))
	if lost != 0 {
		t.Fatalf("%d acknowledged submissions missing after the Sentinel failover at durability primary, want 0", lost)
	}
}
