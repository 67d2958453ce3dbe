package reliability

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"

	"github.com/formsservice/formsservice/internal/testredis"
)

// soakDuration is 15 s in `go test`; `make bench` sets FORMSSERVICE_SOAK_DURATION=5m.
func soakDuration(t *testing.T) time.Duration {
	if v := os.Getenv("FORMSSERVICE_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("FORMSSERVICE_SOAK_DURATION: %v", err)
		}
		return d
	}
	return 15 * time.Second
}

// footprint is one process's resources at one moment.
type footprint struct {
	goroutines, fds float64
	rssKiB          int
}

// measure reads a process's goroutines, open descriptors and RSS.
func measure(t *testing.T, p *proc) footprint {
	return footprint{goroutines: metric(t, p.Base, "go_goroutines"), fds: metric(t, p.Base, "process_open_fds"), rssKiB: rssKiB(p.Pid())}
}

// settled reads a process's footprint once it has stopped moving: the same goroutines and descriptors
// in three readings in a row (closed connections finish closing on the server side; a scrape can start
// short-lived work, such as the health service's round of checks when its cached one is stale).
func settled(t *testing.T, p *proc) footprint {
	t.Helper()
	var last footprint
	same := 0
	testwait.For(t, 30*time.Second, p.name+"'s goroutines and descriptors settled", func() bool {
		f := measure(t, p)
		if f.goroutines == last.goroutines && f.fds == last.fds {
			same++
		} else {
			same = 0
		}
		last = f
		return same >= 2
	})
	return last
}

// settledNear is settled, but it returns as soon as the process is back within margin of before: a
// process that keeps a few more goroutines for a while is not waited on for stillness. A leak never
// comes back, and is measured as it stands once settled.
func settledNear(t *testing.T, p *proc, before footprint, margin float64) footprint {
	t.Helper()
	var last footprint
	same := 0
	testwait.For(t, 30*time.Second, p.name+"'s goroutines and descriptors settled", func() bool {
		f := measure(t, p)
		if f.goroutines <= before.goroutines+margin && f.fds <= before.fds+margin {
			last = f
			return true
		}
		if f.goroutines == last.goroutines && f.fds == last.fds {
			same++
		} else {
			same = 0
		}
		last = f
		return same >= 5
	})
	return last
}

// TestSoak_MixedTraffic_NoGoroutineOrConnectionLeak drives forms (waitlist and contact), auth (refresh
// grants and userinfo) and health (GET /health, which checks the other two and Redis) at once, and
// compares each process's goroutines, open file descriptors and RSS after a warm-up with the same after
// the soak, once the clients have closed their connections. Goroutines and descriptors must come back
// to where they were; RSS is sampled through the soak and must stay flat.
func TestSoak_MixedTraffic_NoGoroutineOrConnectionLeak(t *testing.T) {
	duration := soakDuration(t)
	rs := testredis.Start(t, testredis.Options{Unix: true, AppendFsync: "no"})
	forms := startProc(t, "forms", formsConfig(redisURLSection(rs.URL()), ""), nil)
	auth := startAuth(t, redisURLSection(rs.URL()))
	// A soak looks for leaks, not latency: generous check timeouts keep a CPU-starved machine (the soak's
	// own load, a parallel test package) from reading as a failing platform.
	health := startProc(t, "health", fmt.Sprintf("logLevel: warn\nredis: {url: %q}\nhealth:\n  formsURL: %s\n  authURL: %s\n  cacheFor: 500ms\n  timeout: 5s\n",
		rs.URL(), forms.Base, auth.Base), nil)
	procs := []*proc{forms, auth.proc, health}

	var (
		stop     atomic.Bool
		requests sync.Map // kind -> *atomic.Int64
		failures atomic.Int64
		mu       sync.Mutex
		firstBad []string
	)
	count := func(kind string, ok bool, detail string) {
		v, _ := requests.LoadOrStore(kind, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
		if !ok {
			failures.Add(1)
			mu.Lock()
			if len(firstBad) < 10 {
				firstBad = append(firstBad, kind+": "+detail)
			}
			mu.Unlock()
		}
	}
	healthClient := &http.Client{Timeout: 5 * time.Second}
	phase := func(d time.Duration) {
		stop.Store(false)
		var wg sync.WaitGroup
		fc := newFormsClient(forms.Base, 4)
		for w := range 4 { // forms
			wg.Go(func() {
				for n := 0; !stop.Load(); n++ {
					if n%2 == 0 {
						a := fc.post("/waitlist", waitlistBody(fmt.Sprintf("soak-%d-%d-%d@example.com", time.Now().UnixNano(), w, n)))
						count("waitlist", a.status == 201, fmt.Sprint(a.status, a.err))
					} else {
						a := fc.post("/contact", contactBody("soak@example.com", "soak message, hello there"))
						count("contact", a.status == 201, fmt.Sprint(a.status, a.err))
					}
				}
			})
		}
		// auth: two refresh chains with userinfo; signed in here, since t.Fatal belongs to this goroutine.
		for _, tk := range []tokenAnswer{auth.signedIn(t), auth.signedIn(t)} {
			wg.Go(func() {
				for !stop.Load() {
					r := auth.refresh(tk.RefreshToken)
					count("refresh", r.status == 200, fmt.Sprint(r.status, r.Error, r.err))
					if r.status != 200 {
						return
					}
					tk = r
					st := auth.userinfo(tk.AccessToken)
					count("userinfo", st == 200, fmt.Sprint(st))
				}
			})
		}
		wg.Go(func() { // health, as a scraper would, but fast
			for !stop.Load() {
				res, err := healthClient.Get(health.Base + "/health")
				ok := err == nil && res.StatusCode == 200
				if err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
				count("health", ok, fmt.Sprint(err))
				time.Sleep(10 * time.Millisecond) // a scraper's interval, shortened
			}
		})
		time.Sleep(d) // the soak's length: the behaviour under test
		stop.Store(true)
		wg.Wait()
		fc.close()
		healthClient.CloseIdleConnections()
		tokenClient.CloseIdleConnections()
	}
	phase(3 * time.Second) // warm-up: pools and caches reach their working size
	before := map[*proc]footprint{}
	for _, p := range procs {
		before[p] = settled(t, p)
	}
	start := time.Now()
	samples := map[*proc][]int{}
	sampler := make(chan struct{})
	go func() {
		defer close(sampler)
		for time.Since(start) < duration {
			for _, p := range procs {
				samples[p] = append(samples[p], rssKiB(p.Pid()))
			}
			time.Sleep(duration / 10) // ten samples over the soak
		}
	}()
	phase(duration)
	<-sampler
	after := map[*proc]footprint{}
	for _, p := range procs {
		after[p] = settledNear(t, p, before[p], 5)
	}

	total := int64(0)
	perKind := map[string]int{}
	requests.Range(func(k, v any) bool {
		n := v.(*atomic.Int64).Load()
		perKind[k.(string)] = int(n)
		total += n
		return true
	})
	t.Logf("soak of %s (+3 s warm-up): %d requests (%s), %d failed", duration, total, sortedCounts(perKind), failures.Load())
	for _, b := range firstBad {
		t.Errorf("failed: %s", b)
	}
	for _, p := range procs {
		b, a := before[p], after[p]
		t.Logf("%-7s goroutines %3.0f → %3.0f, open fds %3.0f → %3.0f, RSS %6d → %6d KiB (samples during the soak: %v)",
			p.name, b.goroutines, a.goroutines, b.fds, a.fds, b.rssKiB, a.rssKiB, samples[p])
		if a.goroutines > b.goroutines+5 {
			t.Errorf("%s: goroutines grew from %.0f to %.0f", p.name, b.goroutines, a.goroutines)
		}
		if a.fds > b.fds+5 {
			t.Errorf("%s: open file descriptors grew from %.0f to %.0f", p.name, b.fds, a.fds)
		}
		// Flat memory: the last third of the soak holds no more than the first sample plus a margin
		// for the allocator's and the GC's breathing (25% or 16 MiB, whichever is larger).
		if s := samples[p]; len(s) >= 3 {
			first, last := s[0], s[len(s)-1]
			if limit := first + max(first/4, 16<<10); last > limit {
				t.Errorf("%s: RSS grew during the soak from %d to %d KiB", p.name, first, last)
			}
		}
	}
}
