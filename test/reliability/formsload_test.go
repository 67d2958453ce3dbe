package reliability

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
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

var notDurableRe = regexp.MustCompile(`(?m)^formsservice_forms_store_errors_total\{reason="not_durable"\} (\d+)`)

// notDurable502s reads from the forms service's /metrics how many submissions it answered 502 because
// the write, though made, was not acknowledged at its durability level in time (a replica or an fsync
// slower than the request's bound): at durability primary the correct answer whenever a replica lags,
// which a loaded machine makes happen at any moment, not only around a failover.
func notDurable502s(t *testing.T, base string) int {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	m := notDurableRe.FindSubmatch(b)
	if m == nil {
		t.Fatalf("no not_durable store error count in %s/metrics", base)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
