package health

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/server"
)

// These tests run the service in a synctest bubble: its clock is fake and moves only when every
// goroutine in the bubble waits, so a check that takes 250ms takes exactly 250ms, however busy the
// machine is. The checks are in-process peers whose Ready waits on that clock.

// timedPeer is a peer whose Ready answers after delay (honouring its context unless stubborn), and
// counts its calls and the calls that have returned.
type timedPeer struct {
	name     string
	delay    atomic.Int64 // time.Duration
	stubborn bool
	calls    atomic.Int64
	returned atomic.Int64
}

func (p *timedPeer) Name() string           { return p.name }
func (p *timedPeer) Routes() []server.Route { return nil }
func (p *timedPeer) Ready(ctx context.Context) error {
	p.calls.Add(1)
	defer p.returned.Add(1)
	wait := time.After(time.Duration(p.delay.Load()))
	if p.stubborn {
		<-wait
		return nil
	}
	select {
	case <-wait:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// bubbleService builds the service on health section h with the given peers, defaults applied.
func bubbleService(t *testing.T, h config.Health, peers ...server.Service) *Service {
	t.Helper()
	cfg := &config.Config{Health: h}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	svc, err := New(Options{Config: config.Static{C: cfg}, Peers: peers})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// checkOf decodes one check of a round's body.
func checkOf(t *testing.T, snap *snapshot, name string) map[string]any {
	t.Helper()
	var body struct {
		Checks map[string][]map[string]any `json:"checks"`
	}
	if err := json.Unmarshal(snap.body, &body); err != nil || len(body.Checks[name]) != 1 {
		t.Fatalf("check %s in %s (%v)", name, snap.body, err)
	}
	return body.Checks[name][0]
}

// A check passes under warnAfter, warns from warnAfter on, and fails at the timeout, whose value it then
// reports; each at exactly its threshold.
func TestThresholds_PassWarnFail_AtExactlyTheirBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		forms := &timedPeer{name: "forms"}
		stuck := &timedPeer{name: "auth", stubborn: true}
		svc := bubbleService(t, config.Health{WarnAfter: ms(250 * time.Millisecond), Timeout: ms(700 * time.Millisecond),
			CacheFor: ms(time.Second)}, forms, stuck)
		for _, c := range []struct {
			delay       time.Duration
			status      string
			observed    float64
			output      string
			stuckOutput string
		}{
			{delay: 249 * time.Millisecond, status: "pass", observed: 249},
			{delay: 250 * time.Millisecond, status: "warn", observed: 250, output: "slow: answered in 250ms (warn after 250ms)"},
			{delay: 699 * time.Millisecond, status: "warn", observed: 699, output: "slow: answered in 699ms (warn after 250ms)"},
			{delay: 701 * time.Millisecond, status: "fail", observed: 700, output: "no answer within 700ms"},
			{delay: time.Hour, status: "fail", observed: 700, output: "no answer within 700ms"},
		} {
			forms.delay.Store(int64(c.delay))
			stuck.delay.Store(int64(c.delay))
			start := time.Now()
			snap := svc.current()
			took := time.Since(start)
			got := checkOf(t, snap, "forms:readiness")
			out, _ := got["output"].(string)
			if got["status"] != c.status || got["observedValue"] != c.observed || out != c.output {
				t.Errorf("check taking %s: %v, want %s %vms %q", c.delay, got, c.status, c.observed, c.output)
			}
			// A check that ignores its context is waited for cancelGrace past the timeout, no longer.
			if want := min(c.delay, 700*time.Millisecond+cancelGrace); took != want {
				t.Errorf("round with a check taking %s took %s, want %s", c.delay, took, want)
			}
			if s := checkOf(t, snap, "auth:readiness"); s["status"] != c.status {
				t.Errorf("the check ignoring its context, taking %s: %v, want %s", c.delay, s, c.status)
			}
			// Fake time (the bubble's clock), moved to the later of the two moments the next case
			// needs: the stuck check has returned (delay after the round began), and the round is as
			// old as cacheFor (1s). Both are then asserted, not assumed.
			time.Sleep(time.Until(start.Add(max(c.delay, time.Second))))
			synctest.Wait()
			if stuck.returned.Load() != stuck.calls.Load() {
				t.Fatalf("after a round taking %s: the check ignoring its context has not returned", c.delay)
			}
			if age := time.Since(snap.at); age < time.Second {
				t.Fatalf("after a round taking %s: the cached round is %s old, younger than cacheFor", c.delay, age)
			}
		}
	})
}

// A round is reused for exactly cacheFor, and concurrent requests share one round.
func TestCache_ReusedForCacheFor_SharedByConcurrentRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		forms := &timedPeer{name: "forms"}
		forms.delay.Store(int64(100 * time.Millisecond))
		svc := bubbleService(t, config.Health{CacheFor: ms(2 * time.Second)}, forms)

		var wg sync.WaitGroup
		snaps := make([]*snapshot, 50)
		for i := range snaps {
			wg.Go(func() { snaps[i] = svc.current() })
		}
		wg.Wait()
		for _, s := range snaps {
			if s != snaps[0] {
				t.Fatal("concurrent requests got different rounds")
			}
		}
		if n := forms.calls.Load(); n != 1 {
			t.Fatalf("50 concurrent requests ran the check %d times, want 1", n)
		}
		// The round started 100ms ago; it is as old as its start.
		time.Sleep(2*time.Second - 100*time.Millisecond - time.Nanosecond) // fake time: the bubble's clock
		if svc.current() != snaps[0] || forms.calls.Load() != 1 {
			t.Fatal("a round younger than cacheFor was not reused")
		}
		time.Sleep(time.Nanosecond) // fake time: exactly cacheFor now
		if svc.current() == snaps[0] || forms.calls.Load() != 2 {
			t.Fatal("a round as old as cacheFor was reused")
		}
	})
}
