package forms

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// startReplicated starts a primary and one replica of it, and waits until the replica is in sync.
func startReplicated(t *testing.T) (primary, replica *testredis.Server) {
	t.Helper()
	return startReplicatedWith(t, testredis.Options{AppendFsync: "no"})
}

// startReplicatedWith starts a primary with opts and one replica of it, as startReplicated.
func startReplicatedWith(t *testing.T, opts testredis.Options) (primary, replica *testredis.Server) {
	t.Helper()
	// The replica syncs at once instead of after Redis' default 5 s delay.
	opts.Args = append(opts.Args, "--repl-diskless-sync-delay", "0")
	primary = testredis.Start(t, opts)
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
	// Another pod. Its request, too, waits for the frozen replica (the wait is sent with the script, before
	// its answer is known) and answers 409 when the wait ends: 5 s, so that a loaded machine's slow round
	// trip is not taken for a store that does not answer (502), as with the default 1.5 s it once was.
	second := newHarness(t, harnessOpts{cfg: primaryLevelConfig(), redis: primary, storeTimeout: 5 * time.Second})
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

func TestForms_MachineLevelOnAStoreThatCannotFsyncOnDemand_Is502(t *testing.T) {
	cfg := formstest.Config()
	cfg.Forms.Durability = config.DurabilityMachine
	h := newHarness(t, harnessOpts{cfg: cfg}) // appendonly no (and before Redis 7.2, no WAITAOF at all)
	err := h.svc.StoreState(t.Context())
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
	if err := h.svc.StoreState(t.Context()); err != nil {
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
		if err := h.svc.StoreState(t.Context()); err == nil {
			t.Fatal("ready on a store that can neither fsync before answering nor on demand")
		}
		h.post("/contact", validContact).expect(t, 502, "error")
		return
	}
	if err := h.svc.StoreState(t.Context()); err != nil {
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

// Each level is checked against what it needs from the store, at start: a store that cannot keep it
// makes StoreState fail with the reason (and /readyz stays 200), every submission answer 502 without writing anything, and the
// metrics say why.
func TestForms_StoreCannotKeepTheLevel_502AndTheMetricSaysWhy_ProcessStaysReady(t *testing.T) {
	for _, c := range []struct {
		name   string
		level  config.Durability
		redis  testredis.Options
		reason string // "" when the store keeps the level
	}{
		{"process on a stock redis-server", config.DurabilityProcess, testredis.Options{}, "appendonly_off"},
		{"process with appendonly", config.DurabilityProcess, testredis.Options{AppendFsync: "everysec"}, ""},
		{"process on a store that evicts", config.DurabilityProcess,
			testredis.Options{AppendFsync: "no", Args: []string{"--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"}}, "eviction_policy"},
		{"process on a store that evicts only keys with a TTL", config.DurabilityProcess,
			testredis.Options{AppendFsync: "no", Args: []string{"--maxmemory", "100mb", "--maxmemory-policy", "volatile-lru"}}, "eviction_policy"},
		{"process without maxmemory: nothing is evicted whatever the policy", config.DurabilityProcess,
			testredis.Options{AppendFsync: "no", Args: []string{"--maxmemory-policy", "allkeys-lru"}}, ""},
		{"machine on a stock redis-server", config.DurabilityMachine, testredis.Options{}, "appendonly_off"},
		{"machine with appendfsync always", config.DurabilityMachine, testredis.Options{AppendOnly: true}, ""},
		{"primary on a stock redis-server", config.DurabilityPrimary, testredis.Options{}, "appendonly_off, no_replica"},
		{"primary without a replica", config.DurabilityPrimary, testredis.Options{AppendFsync: "no"}, "no_replica"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := testredis.Start(t, c.redis)
			cfg := formstest.Config()
			cfg.Forms.Durability = c.level
			h := newHarness(t, harnessOpts{cfg: cfg, redis: rs})
			err := h.svc.StoreState(t.Context())
			if c.reason == "" {
				if err != nil {
					t.Fatalf("Ready: %v", err)
				}
				h.post("/contact", validContact).expect(t, 201, "created")
				if ok := h.counter("formsservice_forms_durability_ok"); ok != 1 {
					t.Fatalf("formsservice_forms_durability_ok %v, want 1", ok)
				}
				return
			}
			var unmet *store.Unmet
			if !errors.As(err, &unmet) || unmet.Reason() != "durability "+string(c.level)+": "+c.reason {
				t.Fatalf("Ready: %v, want the reason %s", err, c.reason)
			}
			h.post("/contact", validContact).expect(t, 502, "error")
			h.post("/waitlist", validWaitlist).expect(t, 502, "error")
			if n := h.rdb.XLen(t.Context(), store.ContactStream).Val() + h.rdb.HLen(t.Context(), store.WaitlistEntries).Val(); n != 0 {
				t.Fatalf("%d submissions written although the answer was 502", n)
			}
			if n := h.counter("formsservice_forms_store_errors_total", "reason", "durability_unmet"); n != 2 {
				t.Fatalf("store_errors_total{reason=durability_unmet} %v, want 2", n)
			}
			h.checkDurability() // the metrics follow the checks; the one at start may not have finished
			if ok := h.counter("formsservice_forms_durability_ok"); ok != 0 {
				t.Fatalf("formsservice_forms_durability_ok %v, want 0", ok)
			}
			for _, r := range strings.Split(c.reason, ", ") {
				if v := h.counter("formsservice_forms_durability_unmet", "reason", r); v != 1 {
					t.Fatalf("formsservice_forms_durability_unmet{reason=%s} %v, want 1", r, v)
				}
			}
			// /readyz reports the process (D55): the pod stays in its Service and answers the 502 above,
			// with CORS, rather than leaving the browser the ingress's 503.
			resp, err := http.Get(h.url + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != "ok" {
				t.Fatalf("/readyz: %d %q, want 200 \"ok\": the process is ready, the store is not", resp.StatusCode, body)
			}
		})
	}
}

// The settings are watched, not read once: a store put right is taken up at the next check, and a
// store put wrong is refused from the next check on; each change is logged with what to change.
func TestForms_StoreSettingsChangeLive_TheNextCheckFollows(t *testing.T) {
	rs := testredis.Start(t) // stock: appendonly no
	logs := &testproc.Buffer{}
	h := newHarness(t, harnessOpts{redis: rs, log: logs})
	h.post("/waitlist", validWaitlist).expect(t, 502, "error")
	testwait.For(t, 5*time.Second, "the log to say what to change", func() bool {
		return strings.Contains(logs.String(), "set appendonly yes")
	})

	rc := rs.Client()
	if err := rc.ConfigSet(t.Context(), "appendonly", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	// Until the first rewrite ends, appendonly yes is not yet durable (aof_starting: the first test
	// below); then the next check takes submissions.
	testwait.For(t, 10*time.Second, "the first append-only rewrite to end", func() bool {
		return strings.Contains(rc.Info(t.Context(), "persistence").Val(), "aof_rewrite_in_progress:0\r\n")
	})
	h.checkDurability()
	if err := h.svc.StoreState(t.Context()); err != nil {
		t.Fatalf("Ready after appendonly yes: %v", err)
	}
	h.post("/waitlist", validWaitlist).expect(t, 201, "created")
	if !strings.Contains(logs.String(), "the store keeps the configured durability again") {
		t.Fatalf("no log line for the recovery:\n%s", logs)
	}

	// An eviction policy set at runtime is refused from the next check on.
	if err := rc.ConfigSet(t.Context(), "maxmemory", "200mb").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.ConfigSet(t.Context(), "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	h.checkDurability()
	h.post("/waitlist", `{"email":"grace@example.com","consent":true}`).expect(t, 502, "error")
	if v := h.counter("formsservice_forms_durability_unmet", "reason", "eviction_policy"); v != 1 {
		t.Fatalf("durability_unmet{reason=eviction_policy} %v, want 1", v)
	}
	if !strings.Contains(logs.String(), "set maxmemory-policy noeviction") {
		t.Fatalf("the log does not say what to change:\n%s", logs)
	}

	// A reload to another level is judged on the last check at once.
	cfg := formstest.Config()
	cfg.Forms.Durability = config.DurabilityPrimary
	h.src.Set(t, cfg)
	var unmet *store.Unmet
	if err := h.svc.StoreState(t.Context()); !errors.As(err, &unmet) || !slices.Contains(unmet.Reasons, store.ReasonNoReplica) {
		t.Fatalf("Ready at primary without a replica: %v", err)
	}
}

// A managed Redis often refuses CONFIG: INFO still tells appendonly, the eviction policy and the
// replicas, so process and primary are judged as usual; machine, which needs appendfsync, then relies on
// WAITAOF (Redis 7.2 or later) and is refused without it. A store that refuses INFO too cannot be
// judged: no level is kept.
func TestForms_ManagedRedisRefusesConfigOrInfo(t *testing.T) {
	noConfig := testredis.Options{AppendOnly: true, Args: []string{"--rename-command", "CONFIG", ""}}
	rs := testredis.Start(t, noConfig)
	h := newHarness(t, harnessOpts{redis: rs})
	h.post("/waitlist", validWaitlist).expect(t, 201, "created")

	cfg := formstest.Config()
	cfg.Forms.Durability = config.DurabilityMachine
	h.src.Set(t, cfg)
	err := h.svc.StoreState(t.Context())
	if v := redisVersion(t, rs); v >= 70200 {
		if err != nil {
			t.Fatalf("machine on Redis %d without CONFIG (WAITAOF instead): %v", v, err)
		}
	} else if err == nil || !strings.Contains(err.Error(), "refuses CONFIG GET") {
		t.Fatalf("machine on Redis %d without CONFIG: %v, want a refusal that names CONFIG GET", v, err)
	}

	noInfo := testredis.Start(t, testredis.Options{AppendFsync: "no", Args: []string{"--rename-command", "INFO", ""}})
	h2 := newHarness(t, harnessOpts{redis: noInfo})
	var unmet *store.Unmet
	if err := h2.svc.StoreState(t.Context()); !errors.As(err, &unmet) || !slices.Contains(unmet.Reasons, store.ReasonUnverifiable) {
		t.Fatalf("Ready on a store that refuses INFO: %v", err)
	}
	h2.post("/waitlist", validWaitlist).expect(t, 502, "error")
}

// appendfsync changed at runtime is seen at the next check (every 2 s), not a minute later: at machine,
// a primary that stops fsyncing before it answers must be waited for with WAITAOF (Redis 7.2 or later),
// or, without it, the level cannot be kept.
func TestForms_MachineLevel_AppendfsyncChangedLive_TheNextCheckFollows(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{AppendOnly: true})
	cfg := formstest.Config()
	cfg.Forms.Durability = config.DurabilityMachine
	h := newHarness(t, harnessOpts{cfg: cfg, redis: rs})
	h.post("/contact", validContact, "Idempotency-Key", "before").expect(t, 201, "created")

	if err := rs.Client().ConfigSet(t.Context(), "appendfsync", "everysec").Err(); err != nil {
		t.Fatal(err)
	}
	h.checkDurability()
	if redisVersion(t, rs) >= 70200 {
		h.post("/contact", validContact, "Idempotency-Key", "after").expect(t, 201, "created") // WAITAOF now
		return
	}
	h.post("/contact", validContact, "Idempotency-Key", "after").expect(t, 502, "error")
	if v := h.counter("formsservice_forms_durability_unmet", "reason", "no_fsync"); v != 1 {
		t.Fatalf("durability_unmet{reason=no_fsync} %v, want 1", v)
	}
}

// Redis reports aof_enabled:1 as soon as CONFIG SET appendonly yes is made — the fix the service's own
// log suggests — while its first rewrite still runs and the writes meanwhile go to a temporary file that
// a restart does not read. A submission in that window is refused (502), not answered 201 and then lost
// to a kill -9. rdb-key-save-delay holds the rewrite open until the kill.
func TestForms_FirstAOFRewrite_Refused502_AKillThenLosesNothingAcknowledged(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{AppendFsync: "always"})
	rc := rs.Client()
	h := newHarness(t, harnessOpts{redis: rs})
	h.post("/contact", validContact).expect(t, 201, "created")

	// appendonly turned off, seen by the guard, then on again: the first rewrite starts, and lasts.
	if err := rc.ConfigSet(t.Context(), "appendonly", "no").Err(); err != nil {
		t.Fatal(err)
	}
	h.checkDurability()
	h.post("/contact", validContact).expect(t, 502, "error")
	for _, kv := range [][2]string{{"rdb-key-save-delay", "100000000"}, {"appendonly", "yes"}} {
		if err := rc.ConfigSet(t.Context(), kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	info := rc.Info(t.Context(), "persistence").Val()
	for _, want := range []string{"aof_enabled:1", "aof_rewrite_in_progress:1"} {
		if !strings.Contains(info, want+"\r\n") {
			t.Fatalf("the window is not open: INFO persistence lacks %s:\n%s", want, info)
		}
	}
	h.checkDurability()
	a := h.post("/contact", strings.Replace(validContact, "Ada", "Grace", 1))
	var unmet *store.Unmet
	if err := h.svc.StoreState(t.Context()); !errors.As(err, &unmet) || !slices.Contains(unmet.Reasons, store.ReasonAOFStarting) {
		t.Errorf("the store's state during the first rewrite: %v, want aof_starting", err)
	}
	if v := h.counter("formsservice_forms_durability_unmet", "reason", "aof_starting"); v != 1 {
		t.Errorf("formsservice_forms_durability_unmet{reason=aof_starting} %v, want 1", v)
	}

	rs.Kill() // kill -9, and the rewrite child with it
	rs.Restart()
	n := rs.Client().XLen(t.Context(), store.ContactStream).Val()
	if a.code == 201 && n < 2 {
		t.Fatalf("answered 201 during the first rewrite, and the message is gone after a kill (%d stored)", n)
	}
	a.expect(t, 502, "error")
	if n != 1 {
		t.Fatalf("%d messages after the kill, want the 1 acknowledged before the window", n)
	}

	// Restarted with its append-only file complete, the store takes submissions again.
	h.checkDurability()
	h.post("/contact", strings.Replace(validContact, "Ada", "Grace", 1)).expect(t, 201, "created")
}

// replicated is for a store that replicates but keeps no append-only file (ElastiCache with replicas,
// RDB-only plans): the answer waits for a replica (WAIT 1), appendonly is not required, and every
// acknowledged submission is on the replica when the primary is killed, which is what a failover
// promotes. The same store is refused at primary, which needs the primary's append-only file too.
func TestForms_ReplicatedLevel_NoAppendOnlyFile_201OnceAReplicaHasIt(t *testing.T) {
	primary, replica := startReplicatedWith(t, testredis.Options{}) // stock: appendonly no
	cfg := formstest.Config()
	cfg.Forms.Durability = config.DurabilityReplicated
	h := newHarness(t, harnessOpts{cfg: cfg, redis: primary})
	if err := h.svc.StoreState(t.Context()); err != nil {
		t.Fatalf("StoreState at replicated on a replicated store without AOF: %v", err)
	}
	for i := range 5 {
		h.post("/contact", validContact, "Idempotency-Key", fmt.Sprintf("r-%d", i)).expect(t, 201, "created")
	}
	h.post("/waitlist", validWaitlist).expect(t, 201, "created")

	// A replica that does not answer: no 201 for what only the primary has.
	replica.Pause()
	h.post("/contact", strings.Replace(validContact, "Ada", "Grace", 1)).expect(t, 502, "error")
	replica.Resume()

	// The primary crashes: every acknowledged submission is on the replica a failover would promote.
	primary.Kill()
	rc := replica.Client()
	testwait.For(t, 5*time.Second, "the replica to see its primary gone", func() bool {
		return strings.Contains(rc.Info(t.Context(), "replication").Val(), "master_link_status:down")
	})
	if n := rc.XLen(t.Context(), store.ContactStream).Val(); n < 5 {
		t.Fatalf("the replica has %d contact messages after the primary's crash, want the 5 acknowledged", n)
	}
	if n := rc.HLen(t.Context(), store.WaitlistEntries).Val(); n != 1 {
		t.Fatalf("the replica has %d waitlist entries, want 1", n)
	}
}

func TestForms_ReplicatedLevel_WithoutAReplica_Is502NoReplica(t *testing.T) {
	cfg := formstest.Config()
	cfg.Forms.Durability = config.DurabilityReplicated
	h := newHarness(t, harnessOpts{cfg: cfg, redis: testredis.Start(t)}) // stock (appendonly no), alone
	var unmet *store.Unmet
	if err := h.svc.StoreState(t.Context()); !errors.As(err, &unmet) || unmet.Reason() != "durability replicated: no_replica" {
		t.Fatalf("StoreState: %v, want no_replica alone (no append-only file is asked for)", err)
	}
	h.post("/contact", validContact).expect(t, 502, "error")

	cfg = formstest.Config()
	cfg.Forms.Durability = config.DurabilityPrimary
	h.src.Set(t, cfg)
	if err := h.svc.StoreState(t.Context()); !errors.As(err, &unmet) || unmet.Reason() != "durability primary: appendonly_off, no_replica" {
		t.Fatalf("StoreState at primary: %v, want appendonly_off, no_replica", err)
	}
}

// unchecked asks nothing of the store: a stock, evicting Redis takes submissions, and the choice is
// never silent: a gauge (and its info alert, FormsServiceDurabilityUnchecked) and a warning in the log.
func TestForms_UncheckedLevel_TakesAnyStore_AndSaysSo(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{Args: []string{"--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"}})
	cfg := formstest.Config()
	cfg.Forms.Durability = config.DurabilityUnchecked
	logs := &testproc.Buffer{}
	h := newHarness(t, harnessOpts{cfg: cfg, redis: rs, log: logs})
	h.post("/contact", validContact).expect(t, 201, "created")
	h.post("/waitlist", validWaitlist).expect(t, 201, "created")
	h.checkDurability()
	if v := h.counter("formsservice_forms_durability_unchecked"); v != 1 {
		t.Fatalf("formsservice_forms_durability_unchecked %v, want 1", v)
	}
	for _, r := range []string{"appendonly_off", "eviction_policy"} {
		if v := h.counter("formsservice_forms_durability_unmet", "reason", r); v != 0 {
			t.Fatalf("durability_unmet{reason=%s} %v at unchecked, want 0", r, v)
		}
	}
	if !strings.Contains(logs.String(), "forms.durability is unchecked") {
		t.Fatalf("no warning in the log:\n%s", logs)
	}

	// Back to process: the same store is refused, and the gauge drops.
	h.src.Set(t, formstest.Config())
	h.post("/contact", validContact).expect(t, 502, "error")
	if v := h.counter("formsservice_forms_durability_unchecked"); v != 0 {
		t.Fatalf("formsservice_forms_durability_unchecked %v at process, want 0", v)
	}
}

// A routine rewrite of a complete append-only file is harmless (the file in use keeps every write), so
// the guard that saw the file complete keeps taking submissions during it, and a kill -9 in it loses
// none of them.
func TestForms_RoutineAOFRewrite_StillTakesSubmissions_AKillLosesNone(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{AppendFsync: "always"})
	rc := rs.Client()
	h := newHarness(t, harnessOpts{redis: rs})
	h.post("/contact", validContact).expect(t, 201, "created")
	h.checkDurability()
	if err := rc.ConfigSet(t.Context(), "rdb-key-save-delay", "100000000").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.BgRewriteAOF(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	if info := rc.Info(t.Context(), "persistence").Val(); !strings.Contains(info, "aof_rewrite_in_progress:1\r\n") {
		t.Fatalf("no rewrite running:\n%s", info)
	}
	h.checkDurability()
	h.post("/contact", strings.Replace(validContact, "Ada", "Grace", 1)).expect(t, 201, "created")
	rs.Kill()
	rs.Restart()
	if n := rs.Client().XLen(t.Context(), store.ContactStream).Val(); n != 2 {
		t.Fatalf("%d messages after a kill during a routine rewrite, want the 2 acknowledged", n)
	}
}
