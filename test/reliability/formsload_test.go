package reliability

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// formsLoad is workers posting in turn to /waitlist and /contact, each request with a key of its own
// (name-w<worker>-<n>), until stopped; every answer is kept with the time its request started, so that
// a failover test can judge each answer by when it was asked and look each 201 up afterwards.
type formsLoad struct {
	mu      sync.Mutex
	answers []timedAnswer
	created atomic.Int64 // answers 201
	stop    atomic.Bool
	wg      sync.WaitGroup
}

func startFormsLoad(t *testing.T, fc *formsClient, workers int, name string) *formsLoad {
	l := &formsLoad{}
	for w := range workers {
		l.wg.Go(func() {
			for n := 0; !l.stop.Load(); n++ {
				ta := timedAnswer{started: time.Now()}
				if n%2 == 0 {
					ta.kind, ta.key = "waitlist", fmt.Sprintf("%s-w%d-%d@example.com", name, w, n)
					ta.ans = fc.post("/waitlist", waitlistBody(ta.key))
				} else {
					ta.kind, ta.key = "contact", fmt.Sprintf("%s message w%d-%d, hello there", name, w, n)
					ta.ans = fc.post("/contact", contactBody(name+"@example.com", ta.key))
				}
				if ta.ans.status == 201 {
					l.created.Add(1)
				}
				l.mu.Lock()
				l.answers = append(l.answers, ta)
				l.mu.Unlock()
			}
		})
	}
	t.Cleanup(func() { l.Stop() }) // a t.Fatal must not leave the workers running after the test
	return l
}

// Stop ends the load, waits for the workers and returns every answer.
func (l *formsLoad) Stop() []timedAnswer {
	l.stop.Store(true)
	l.wg.Wait()
	return l.Answers()
}

// Answers is a copy of the answers so far.
func (l *formsLoad) Answers() []timedAnswer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]timedAnswer(nil), l.answers...)
}

// Created is how many requests were answered 201 so far.
func (l *formsLoad) Created() int64 { return l.created.Load() }

var notDurableRe = regexp.MustCompile(`(?m)^formsservice_forms_store_errors_total\{reason="(not_durable|durability_unmet)"\} (\d+)`)

// notDurable502s reads from the forms service's /metrics how many submissions it answered 502 because
// the durability level could not be kept: written but not acknowledged in time (not_durable: a replica
// or an fsync slower than the request's bound, which a loaded machine makes happen at any moment, not
// only around a failover), or not written because the store's durability check found it unable to keep
// the level (durability_unmet: at primary, a master without a synced replica, until the next check
// sees the replica back).
func notDurable502s(t *testing.T, base string) int {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	ms := notDurableRe.FindAllSubmatch(b, -1)
	if len(ms) == 0 {
		t.Fatalf("no not_durable store error count in %s/metrics", base)
	}
	total := 0
	for _, m := range ms {
		n, _ := strconv.Atoi(string(m[2]))
		total += n
	}
	return total
}

// failoverWindow is when a failover test allows a submission to answer 502: from the kill until
// reconnectSlack after the store was writable again (at durability primary: a master with a replica).
type failoverWindow struct {
	killedAt, promotedAt, writableAt time.Time
	// allowedOutside is how many 502s outside the window the service's own not_durable count explains
	// (durability primary only; zero otherwise). A write that no replica acknowledged in time answers
	// 502, and a loaded machine causes that outside any failover; the count includes the window's own,
	// so the bound is loose but never wrong.
	allowedOutside int
}

// failoverVerdict is what judgeFailover found in a failover run's answers.
type failoverVerdict struct {
	counts      map[string]int // "waitlist 201", "contact 502", ...
	lastFailure time.Time      // when the last 502 was answered
	slowest     time.Duration
}

// judgeFailover checks every answer of a failover run: each one within storeBound, no transport error,
// only 201 or 502, and a 502 outside the window only as far as allowedOutside explains it.
func judgeFailover(t *testing.T, answers []timedAnswer, w failoverWindow) failoverVerdict {
	t.Helper()
	v := failoverVerdict{counts: map[string]int{}}
	windowEnd := w.writableAt.Add(reconnectSlack)
	since := func(at time.Time) time.Duration { return at.Sub(w.killedAt).Round(time.Millisecond) }
	var outside []string
	for _, a := range answers {
		v.counts[fmt.Sprintf("%s %d", a.kind, a.ans.status)]++
		v.slowest = max(v.slowest, a.ans.elapsed)
		if a.ans.elapsed > storeBound {
			t.Errorf("%s answered %d after %s (bound %s)", a.kind, a.ans.status, a.ans.elapsed, storeBound)
		}
		switch {
		case a.ans.err != nil:
			t.Errorf("%s: transport error %v", a.kind, a.ans.err)
		case a.ans.status == 201:
		case a.ans.status == 502:
			end := a.started.Add(a.ans.elapsed)
			if end.After(v.lastFailure) {
				v.lastFailure = end
			}
			if end.Before(w.killedAt) || a.started.After(windowEnd) {
				outside = append(outside, fmt.Sprintf("%s got 502 at %s, outside the window (kill at 0, promotion at %s, writable at %s)",
					a.kind, since(end), since(w.promotedAt), since(w.writableAt)))
			}
		default:
			t.Errorf("%s: status %d %s (want 201 or 502)", a.kind, a.ans.status, a.ans.body)
		}
	}
	if len(outside) > w.allowedOutside {
		for _, o := range outside {
			t.Error(o)
		}
		t.Errorf("%d 502s outside the window without a master; %d not_durable answers could explain them", len(outside), w.allowedOutside)
	} else if len(outside) > 0 {
		t.Logf("%d 502s outside the window without a master, within the %d answered not_durable (a replica late to acknowledge)", len(outside), w.allowedOutside)
	}
	return v
}

// lostAcknowledged counts the submissions answered 201 that the export does not have.
func lostAcknowledged(t *testing.T, answers []timedAnswer, configYAML string) int {
	t.Helper()
	waitlist := countBy(exported(t, "waitlist", configYAML), "email")
	contact := countBy(exported(t, "contact", configYAML), "message")
	lost := 0
	for _, a := range answers {
		if a.ans.status == 201 && ((a.kind == "waitlist" && waitlist[a.key] == 0) ||
			(a.kind == "contact" && contact[strings.ToLower(a.key)] == 0)) {
			lost++
		}
	}
	return lost
}
