package forms

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// startReplicated starts a primary and one replica of it, and waits until the replica is in sync.
func startReplicated(t *testing.T) (primary, replica *testredis.Server) {
	t.Helper()
	// The replica syncs at once instead of after Redis' default 5 s delay.
	primary = testredis.Start(t, testredis.Options{Args: []string{"--repl-diskless-sync-delay", "0"}})
	_, port, _ := strings.Cut(primary.Addr(), ":")
	replica = testredis.Start(t, testredis.Options{Args: []string{"--replicaof", "127.0.0.1", port}})
	pc := primary.Client()
	testwait.For(t, 15*time.Second, "the replica to sync and acknowledge writes", func() bool {
		if !strings.Contains(replica.Client().Info(t.Context(), "replication").Val(), "master_link_status:up") {
			return false
		}
		pc.Set(t.Context(), "probe", "1", 0)
		n, err := pc.Do(t.Context(), "wait", 1, 100).Int()
		return err == nil && n == 1
	})
	pc.Del(t.Context(), "probe")
	return primary, replica
}

func primaryLevelConfig() *config.Config {
	cfg := formstest.Config()
	cfg.Forms.Durability = config.DurabilityPrimary
	return cfg
}

func TestContact_PrimaryLevel_201OnlyOnceAReplicaHasIt(t *testing.T) {
	primary, replica := startReplicated(t)
	h := newHarness(t, harnessOpts{cfg: primaryLevelConfig(), redis: primary})
	rc := replica.Client()

	h.post("/contact", validContact, "Idempotency-Key", "k-1").expect(t, 201, "created")
	if n := rc.XLen(t.Context(), store.ContactStream).Val(); n != 1 {
		t.Fatalf("the replica has %d messages right after the 201, want 1", n)
	}

	// A replica that does not answer: the primary has the write, but the promise cannot be kept in time.
	replica.Pause()
	start := time.Now()
	h.post("/contact", strings.Replace(validContact, "Ada", "Grace", 1), "Idempotency-Key", "k-2").expect(t, 502, "error")
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("502 after %s, want within the 2 s bound", d)
	}
	h.post("/waitlist", validWaitlist).expect(t, 502, "error")
	replica.Resume()

	// The client's retry with its key gets the first answer once it holds, and stores nothing new.
	testwait.For(t, 5*time.Second, "the retry to be acknowledged", func() bool {
		return h.post("/contact", strings.Replace(validContact, "Ada", "Grace", 1), "Idempotency-Key", "k-2").code == 201
	})
	if n := h.rdb.XLen(t.Context(), store.ContactStream).Val(); n != 2 {
		t.Fatalf("%d messages stored, want 2", n)
	}
	if n := rc.XLen(t.Context(), store.ContactStream).Val(); n != 2 {
		t.Fatalf("the replica has %d messages, want 2", n)
	}
	// The sign-up made while the replica was frozen was kept; its retry is told so, once it is safe.
	h.post("/waitlist", validWaitlist).expect(t, 200, "duplicate")
}

func TestContact_PrimaryLevel_SameKeyOnAnotherReplicaWhileTheFirstWaits_Returns409(t *testing.T) {
	primary, replica := startReplicated(t)
	// The first pod waits for durability as long as the test needs (a minute), not 1.5 s: the second
	// request must arrive while it waits, however slow the machine. Its timing out is the other test's.
	first := newHarness(t, harnessOpts{cfg: primaryLevelConfig(), redis: primary, storeTimeout: time.Minute})
	second := newHarness(t, harnessOpts{cfg: primaryLevelConfig(), redis: primary}) // another pod
	replica.Pause()
	defer replica.Resume()

	// A double click that the load balancer sends to two pods: the first request stored the message and
	// waits for the frozen replica; the second finds it in flight.
	var firstAnswer answer
	done := make(chan struct{})
	go func() {
		defer close(done)
		firstAnswer = first.post("/contact", validContact, "Idempotency-Key", "double-click")
	}()
	pc := primary.Client()
	testwait.For(t, 5*time.Second, "the first request to wait for the replica", func() bool {
		return strings.Contains(pc.Info(t.Context(), "clients").Val(), "blocked_clients:1")
	})
	a := second.post("/contact", validContact, "Idempotency-Key", "double-click")
	a.expect(t, 409, "error")
	if !strings.Contains(a.raw, "idempotency_key_in_flight") || a.header.Get("Retry-After") != "1" {
		t.Fatalf("409: %s %v", a.raw, a.header)
	}

	// The replica catches up: the first request is acknowledged, and the second's retry replays it.
	replica.Resume()
	<-done
	firstAnswer.expect(t, 201, "created")
	second.post("/contact", validContact, "Idempotency-Key", "double-click").expect(t, 201, "created")
	if n := first.rdb.XLen(t.Context(), store.ContactStream).Val(); n != 1 {
		t.Fatalf("%d messages stored, want 1", n)
	}
}

func TestForms_MachineLevelOnAStoreThatCannotFsyncOnDemand_IsNotReady(t *testing.T) {
	cfg := formstest.Config()
	cfg.Forms.Durability = config.DurabilityMachine
	h := newHarness(t, harnessOpts{cfg: cfg}) // appendonly no (and before Redis 7.2, no WAITAOF at all)
	err := h.svc.Ready(t.Context())
	if err == nil || !strings.Contains(err.Error(), "WAITAOF") {
		t.Fatalf("Ready: %v", err)
	}
	h.post("/waitlist", validWaitlist).expect(t, 502, "error") // never a 201 that breaks the promise
}

// TestContact_MachineLevel_ManagedRedisSettings_EveryAcknowledgedMessageSurvivesAKill runs the machine
// level at the managed Redis's production settings (appendonly yes, appendfsync always: Redis fsyncs
// before it answers, once per event-loop turn for all clients), with concurrent submissions, and kills
// Redis after the last 201.
func TestContact_MachineLevel_ManagedRedisSettings_EveryAcknowledgedMessageSurvivesAKill(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{AppendOnly: true})
	cfg := formstest.Config()
	cfg.Forms.Durability = config.DurabilityMachine
	h := newHarness(t, harnessOpts{cfg: cfg, redis: rs})
	if err := h.svc.Ready(t.Context()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 10 {
				h.post("/contact", validContact, "Idempotency-Key", fmt.Sprintf("m-%d-%d", w, i)).expect(t, 201, "created")
			}
		})
	}
	wg.Wait()
	rs.Kill()
	rs.Restart()
	if n := rs.Client().XLen(t.Context(), store.ContactStream).Val(); n != 40 {
		t.Fatalf("%d messages after a kill, want the 40 acknowledged", n)
	}
}

// TestContact_MachineLevel_WAITAOF_201AfterTheFsync runs the machine level on a store that fsyncs once
// a second (appendfsync everysec): the answer waits for WAITAOF. It needs Redis 7.2 or later.
func TestContact_MachineLevel_WAITAOF_201AfterTheFsync(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{Args: []string{"--appendonly", "yes", "--appendfsync", "everysec"}})
	cfg := formstest.Config()
	cfg.Forms.Durability = config.DurabilityMachine
	h := newHarness(t, harnessOpts{cfg: cfg, redis: rs})
	if v := redisVersion(t, rs); v < 70200 {
		// Before 7.2 there is no WAITAOF: such a store cannot keep the promise, and says so.
		if err := h.svc.Ready(t.Context()); err == nil {
			t.Fatal("ready on a store that can neither fsync before answering nor on demand")
		}
		h.post("/contact", validContact).expect(t, 502, "error")
		return
	}
	if err := h.svc.Ready(t.Context()); err != nil {
		t.Fatal(err)
	}
	h.post("/contact", validContact, "Idempotency-Key", "w-1").expect(t, 201, "created")
	rs.Kill()
	rs.Restart()
	if n := rs.Client().XLen(t.Context(), store.ContactStream).Val(); n != 1 {
		t.Fatalf("%d messages after a kill, want 1", n)
	}
}

// redisVersion is the server's version as major*10000 + minor*100 + patch.
func redisVersion(t *testing.T, rs *testredis.Server) int {
	t.Helper()
	info := rs.Client().Info(t.Context(), "server").Val()
	_, rest, _ := strings.Cut(info, "redis_version:")
	v, _, _ := strings.Cut(rest, "\r\n")
	parts := strings.SplitN(v, ".", 3)
	n := 0
	for _, p := range parts {
		d, _ := strconv.Atoi(p)
		n = n*100 + d
	}
	return n
}
