package reliability

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"

	"github.com/formsservice/formsservice/internal/testredis"
)

// storeBound is the spec's bound for a storage failure (502 within 2 s), plus what a loaded 2-core
// machine adds between the server's answer and the client's clock.
const storeBound = 2*time.Second + 500*time.Millisecond

// submission is one request of the durability load and what it got.
type submission struct {
	kind  string // waitlist, contact
	key   string // the address (waitlist) or the message text (contact)
	idem  string // Idempotency-Key (contact), may be empty
	email string // the sender (contact): a retry sends the same message
	dupOf bool   // a second submission of an address already sent
	ans   answer
}

// TestDurability_RedisKilledUnderLoad_NoAcknowledgedSubmissionLost runs waitlist and contact submissions
// against `formsservice forms` on a redis-server with appendonly yes + appendfsync always, while Redis
// is killed with SIGKILL and restarted three times, then frozen (SIGSTOP) until requests have timed out
// on it. Each fault comes after the load has had answers, and lasts until a request has failed on it. Every 201 must be in the export afterwards, repeated
// addresses stay one entry, every failure is a 502 within the bound (never a 500, never a hang), retries
// with the same Idempotency-Key store a message exactly once, and the service recovers without restart.
func TestDurability_RedisKilledUnderLoad_NoAcknowledgedSubmissionLost(t *testing.T) {
	const (
		workers = 8
		kills   = 3
	)
	// The managed Redis's production settings: appendfsync always, and the forms service at durability
	// machine (it checks the setting and answers only after the fsync).
	rs := testredis.Start(t, testredis.Options{AppendOnly: true, Unix: true})
	cfg := formsConfig(redisURLSection(rs.URL()), "  durability: machine\n")
	forms := startProc(t, "forms", cfg, nil)
	fc := newFormsClient(forms.Base, workers)
	defer fc.close()

	var (
		mu      sync.Mutex
		subs    []submission
		stop    atomic.Bool
		wg      sync.WaitGroup
		outages []time.Duration
	)
	var acked, failed atomic.Int64 // answers 201/200, and 502
	record := func(s submission) {
		mu.Lock()
		subs = append(subs, s)
		mu.Unlock()
		switch s.ans.status {
		case 200, 201:
			acked.Add(1)
		case 502:
			failed.Add(1)
		}
	}
	// loadAnswered waits until n more submissions have been acknowledged; outageFelt until one more has
	// failed: a fault is only worth injecting into, and holding over, a load that is running.
	loadAnswered := func(n int64, what string) {
		t.Helper()
		from := acked.Load()
		testwait.For(t, 30*time.Second, fmt.Sprintf("%d submissions acknowledged %s", n, what), func() bool { return acked.Load() >= from+n })
	}
	outageFelt := func(what string) {
		t.Helper()
		from := failed.Load()
		testwait.For(t, 30*time.Second, "a submission failed "+what, func() bool { return failed.Load() > from })
	}
	for w := range workers {
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				if n%2 == 0 {
					// Mixed case: the service stores and compares addresses in lower case.
					addr := fmt.Sprintf("Durable.W%d-%d@Example.com", w, n)
					record(submission{kind: "waitlist", key: strings.ToLower(addr), ans: fc.post("/waitlist", waitlistBody(addr))})
					if n%6 == 0 { // the same address again, in another case
						again := strings.ToUpper(addr[:1]) + strings.ToLower(addr[1:])
						record(submission{kind: "waitlist", key: strings.ToLower(addr), dupOf: true, ans: fc.post("/waitlist", waitlistBody(again))})
					}
					continue
				}
				text := fmt.Sprintf("durability message w%d-%d: please keep this one", w, n)
				s := submission{kind: "contact", key: text, email: fmt.Sprintf("c%d-%d@example.com", w, n)}
				if n%4 == 1 {
					s.idem = fmt.Sprintf("durable-%d-%d", w, n)
					s.ans = fc.post("/contact", contactBody(s.email, text), "Idempotency-Key", s.idem)
				} else {
					s.ans = fc.post("/contact", contactBody(s.email, text))
				}
				record(s)
			}
		})
	}
	// A t.Fatal below must not leave the workers running after the test ended.
	t.Cleanup(func() { stop.Store(true); wg.Wait() })
	for i := range kills {
		loadAnswered(30, fmt.Sprintf("before kill %d", i+1))
		down := time.Now()
		rs.Kill()
		outageFelt("while Redis was dead")
		rs.Restart() // same socket, same directory: the append-only file is replayed
		outages = append(outages, time.Since(down))
	}
	// A store that hangs instead of dying (SIGSTOP): requests must still end in 502 within the bound.
	loadAnswered(30, "before the freeze")
	rs.Pause()
	frozen := time.Now()
	outageFelt("while Redis was frozen")
	rs.Resume()
	frozenFor := time.Since(frozen)
	loadAnswered(60, "after the freeze") // load continues on the recovered store
	stop.Store(true)
	wg.Wait()

	// Recovery without restarting the service: a fresh submission is stored.
	testwait.Until(t, 10*time.Second, "a submission stored after the last Redis restart", func() error {
		a := fc.post("/waitlist", waitlistBody(fmt.Sprintf("after-%d@example.com", time.Now().UnixNano())))
		if a.status != 201 {
			return fmt.Errorf("%d %s %v", a.status, a.body, a.err)
		}
		return nil
	})
	if exited, _ := forms.Exited(); exited {
		t.Fatal("formsservice forms exited during the test")
	}

	// Every contact that failed with an Idempotency-Key is retried with the same key: it must now be
	// acknowledged, and stored exactly once whether or not the failed attempt had reached the store.
	var retried []submission
	for _, s := range subs {
		if s.kind == "contact" && s.idem != "" && s.ans.status == 502 {
			a := fc.post("/contact", contactBody(s.email, s.key), "Idempotency-Key", s.idem)
			if a.status != 201 {
				t.Errorf("retry of %q with its Idempotency-Key: %d %s", s.idem, a.status, a.body)
			}
			s.ans = a
			retried = append(retried, s)
		}
	}

	counts := map[string]int{}
	var maxLatency, max502 time.Duration
	for _, s := range subs {
		a := s.ans
		maxLatency = max(maxLatency, a.elapsed)
		switch {
		case a.err != nil:
			t.Errorf("%s %q: transport error %v after %s", s.kind, s.key, a.err, a.elapsed)
			counts["transport error"]++
			continue
		case a.status == 502:
			max502 = max(max502, a.elapsed)
			if a.body != `{"status":"error"}` {
				t.Errorf("502 body %q", a.body)
			}
		case a.status == 201:
		case a.status == 200 && s.kind == "waitlist":
			if !strings.Contains(a.body, `"duplicate"`) {
				t.Errorf("200 body %q", a.body)
			}
		default:
			t.Errorf("%s %q: status %d %s (want 201, 200 duplicate or 502)", s.kind, s.key, a.status, a.body)
		}
		counts[fmt.Sprintf("%s %d", s.kind, a.status)]++
		if a.elapsed > storeBound {
			t.Errorf("%s answered %d after %s (bound %s)", s.kind, a.status, a.elapsed, storeBound)
		}
	}

	waitlist := countBy(exported(t, "waitlist", cfg), "email")
	contact := countBy(exported(t, "contact", cfg), "message")
	lost, dupEntries := 0, 0
	for _, s := range append(subs, retried...) {
		stored := waitlist[s.key]
		if s.kind == "contact" {
			stored = contact[strings.ToLower(s.key)]
		}
		if (s.ans.status == 201 || s.ans.status == 200) && stored == 0 {
			lost++
			t.Errorf("%s %q was acknowledged with %d but is not in the export", s.kind, s.key, s.ans.status)
		}
		if stored > 1 && (s.kind == "waitlist" || s.idem != "") {
			dupEntries++
			t.Errorf("%s %q is stored %d times", s.kind, s.key, stored)
		}
	}
	t.Logf("%d submissions by %d workers over %d SIGKILL/restart cycles of redis-server (appendfsync always; outages %v) and one SIGSTOP of %s",
		len(subs), workers, kills, outages, frozenFor.Round(time.Millisecond))
	t.Logf("answers: %v; contact retries with their Idempotency-Key: %d", sortedCounts(counts), len(retried))
	t.Logf("stored afterwards: %d waitlist entries, %d contact messages; acknowledged but lost: %d; stored twice: %d",
		len(waitlist), len(contact), lost, dupEntries)
	t.Logf("slowest answer %s, slowest 502 %s (bound %s)", maxLatency.Round(time.Millisecond), max502.Round(time.Millisecond), storeBound)
	if counts["waitlist 502"]+counts["contact 502"] == 0 {
		t.Error("no submission failed while Redis was down: the faults did not hit the load")
	}
	if counts["waitlist 201"] < 50 || counts["contact 201"] < 50 {
		t.Errorf("too little load got through to prove anything: %v", counts)
	}
}

func sortedCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %d", k, m[k])
	}
	return b.String()
}

// TestDurability_EveryLevel_RedisKilledUnderLoad_NothingAcknowledgedIsLost runs submissions against
// `formsservice forms` at each durability level, SIGKILLs Redis under that load and restarts it. On a
// stock redis-server (appendonly no, no replica) no level can keep its promise: the service must not
// acknowledge anything at all (every answer 502, nothing written). On a store set up as the level needs
// (an append-only file; at primary also a replica), what was acknowledged must all be there afterwards.
func TestDurability_EveryLevel_RedisKilledUnderLoad_NothingAcknowledgedIsLost(t *testing.T) {
	const workers = 4
	for _, c := range []struct {
		level string
		fit   bool // the store has what the level needs
	}{
		{"process", false}, {"machine", false}, {"primary", false},
		{"process", true}, {"machine", true}, {"primary", true},
	} {
		name := c.level + " on a stock redis-server"
		if c.fit {
			name = c.level + " on a store set up for it"
		}
		t.Run(name, func(t *testing.T) {
			opts := testredis.Options{Unix: true} // stock: appendonly no
			if c.fit {
				switch c.level {
				case "process":
					opts.AppendFsync = "everysec" // Redis's default once the append-only file is on
				case "machine":
					opts.AppendOnly = true // appendfsync always: Redis 7.0 has no WAITAOF
				case "primary":
					opts = testredis.Options{AppendFsync: "everysec", Args: []string{"--repl-diskless-sync-delay", "0"}}
				}
			}
			rs := testredis.Start(t, opts)
			if c.fit && c.level == "primary" {
				_, port, _ := strings.Cut(rs.Addr(), ":")
				testredis.Start(t, testredis.Options{Args: []string{"--replicaof", "127.0.0.1", port}})
			}
			cfg := formsConfig(redisURLSection(rs.URL()), "  durability: "+c.level+"\n")
			// /readyz reports the process, not the store (D55): the service is ready on either store, and
			// on a stock one answers every submission 502.
			forms := startProc(t, "forms", cfg, nil)
			fc := newFormsClient(forms.Base, workers)
			defer fc.close()
			load := startFormsLoad(t, fc, workers, "kill-"+c.level)

			// progress is what the load has to show before and after the kill: acknowledgements on a fit
			// store, and answers (all 502) on a stock one.
			progress := func(n int, what string) {
				t.Helper()
				from := len(load.Answers())
				fromCreated := load.Created()
				testwait.For(t, 60*time.Second, fmt.Sprintf("%d more submissions %s", n, what), func() bool {
					if c.fit {
						return load.Created() >= fromCreated+int64(n)
					}
					return len(load.Answers()) >= from+n
				})
			}
			progress(100, "before the kill")
			rs.Kill()
			killed := len(load.Answers())
			testwait.For(t, 30*time.Second, "a submission failed while Redis was dead", func() bool {
				for _, a := range load.Answers()[killed:] {
					if a.ans.status == 502 {
						return true
					}
				}
				return false
			})
			rs.Restart()
			progress(100, "after the restart")
			answers := load.Stop()

			counts := map[string]int{}
			acked := 0
			for _, a := range answers {
				counts[fmt.Sprintf("%s %d", a.kind, a.ans.status)]++
				switch {
				case a.ans.err != nil:
					t.Errorf("%s: transport error %v", a.kind, a.ans.err)
				case a.ans.status == 201:
					acked++
				case a.ans.status != 502:
					t.Errorf("%s: status %d %s (want 201 or 502)", a.kind, a.ans.status, a.ans.body)
				}
				if a.ans.elapsed > storeBound {
					t.Errorf("%s answered %d after %s (bound %s)", a.kind, a.ans.status, a.ans.elapsed, storeBound)
				}
			}
			lost := lostAcknowledged(t, answers, cfg)
			t.Logf("durability %s, %s: %d submissions, answers %s; acknowledged %d, acknowledged but lost after SIGKILL and restart: %d",
				c.level, map[bool]string{false: "stock redis-server (appendonly no)", true: "store set up for the level"}[c.fit],
				len(answers), sortedCounts(counts), acked, lost)
			if lost != 0 {
				t.Errorf("%d acknowledged submissions lost", lost)
			}
			if !c.fit && acked != 0 {
				t.Errorf("%d submissions acknowledged by a store that cannot keep durability %s", acked, c.level)
			}
			if c.fit && acked == 0 {
				t.Error("nothing acknowledged on a store set up for the level")
			}
			if !c.fit {
				// Nothing was written either: a 502 is "not taken, try again".
				if n := len(exported(t, "waitlist", cfg)) + len(exported(t, "contact", cfg)); n != 0 {
					t.Errorf("%d submissions stored although every answer was 502", n)
				}
			}
		})
	}
}
