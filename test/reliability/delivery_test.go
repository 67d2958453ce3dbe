package reliability

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/testwait"
)

// webhookSink is the operating team's webhook: it records every delivery by message ID, answers slowly
// (so that a worker can be killed while a delivery is in flight), and can hold the n-th delivery open
// until the test has killed the process that sent it.
type webhookSink struct {
	URL string

	mu        sync.Mutex
	got       map[string]int // message ID -> deliveries
	total     int
	holdAt    map[int]chan struct{} // delivery number -> released when the test is done with it
	reached   map[int]chan struct{} // delivery number -> closed when that delivery arrives
	respDelay time.Duration
}

func newWebhookSink(t *testing.T, delay time.Duration) *webhookSink {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &webhookSink{URL: "http://" + l.Addr().String() + "/hook", got: map[string]int{},
		holdAt: map[int]chan struct{}{}, reached: map[int]chan struct{}{}, respDelay: delay}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	return s
}

// holdDelivery makes delivery number n wait until release is closed; reached closes when it arrives.
func (s *webhookSink) holdDelivery(n int) (reached <-chan struct{}, release chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, rel := make(chan struct{}), make(chan struct{})
	s.reached[n], s.holdAt[n] = r, rel
	return r, rel
}

func (s *webhookSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var p struct {
		Text    string `json:"text"`
		Contact struct {
			ID string `json:"id"`
		} `json:"contact"`
	}
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil || p.Contact.ID == "" || p.Text == "" {
		http.Error(w, "bad payload", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.total++
	n := s.total
	hold := s.holdAt[n]
	if ch := s.reached[n]; ch != nil {
		close(ch)
	}
	s.mu.Unlock()
	if hold != nil {
		// The sender is killed meanwhile: this delivery's outcome never reaches it. It does not count,
		// so that "every message delivered" proves that another replica sent this very message again.
		<-hold
		http.Error(w, "held while its sender died", http.StatusServiceUnavailable)
		return
	}
	time.Sleep(s.respDelay) // a slow relay, so that a kill can land while deliveries are in flight
	s.mu.Lock()
	s.got[p.Contact.ID]++
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *webhookSink) snapshot() (map[string]int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.got))
	for k, v := range s.got {
		out[k] = v
	}
	return out, s.total
}

// TestDelivery_WorkerKilledMidDelivery_EveryMessageDeliveredAtLeastOnce stores contact messages, then
// SIGKILLs the delivery worker's process twice while the webhook holds one of its deliveries open (and
// kills Redis once in between), starting a fresh replica each time. Every stored message must reach the
// webhook at least once, the two held ones included (they count only when sent again by another
// replica); the duplicates (messages sent again because their sender died before acknowledging) are
// counted.
func TestDelivery_WorkerKilledMidDelivery_EveryMessageDeliveredAtLeastOnce(t *testing.T) {
	const messages = 60
	rs := testredis.Start(t, testredis.Options{AppendOnly: true, Unix: true})
	sink := newWebhookSink(t, 40*time.Millisecond)
	// A short retry schedule so that a replica takes over a dead one's messages within seconds.
	delivery := fmt.Sprintf("  delivery:\n    webhook: {url: %q}\n    timeout: 1s\n    retryAfter: 2s\n    maxRetryInterval: 4s\n", sink.URL)
	cfg := formsConfig(redisURLSection(rs.URL()), delivery)

	// The first replica has no target yet: the messages are stored, then delivered once one exists
	// (messages stored while delivery is off are not lost either).
	store := startProc(t, "forms", formsConfig(redisURLSection(rs.URL()), ""), nil)
	fc := newFormsClient(store.Base, 4)
	for i := range messages {
		if a := fc.post("/contact", contactBody(fmt.Sprintf("d%d@example.com", i), fmt.Sprintf("delivery message %d, please answer", i))); a.status != 201 {
			t.Fatalf("contact %d: %d %s %v", i, a.status, a.body, a.err)
		}
	}
	fc.close()
	store.Kill()
	ids := map[string]bool{}
	for _, r := range exported(t, "contact", cfg) {
		ids[fmt.Sprint(r["id"])] = true
	}
	if len(ids) != messages {
		t.Fatalf("%d messages stored, want %d", len(ids), messages)
	}

	// Replica 1 dies while the webhook holds its 10th delivery; replica 2 dies at the 30th; Redis is
	// killed and restarted between the two; replica 3 finishes the work.
	// The holds are set before any replica starts: a fast worker cannot pass a delivery before its hold.
	kills := []int{10, 30}
	reached, release := make([]<-chan struct{}, len(kills)), make([]chan struct{}, len(kills))
	for i, at := range kills {
		reached[i], release[i] = sink.holdDelivery(at)
	}
	replica := startProc(t, "forms", cfg, nil)
	for i, at := range kills {
		reached, release := reached[i], release[i]
		select {
		case <-reached:
		case <-time.After(30 * time.Second):
			t.Fatalf("delivery %d never arrived", at)
		}
		replica.Kill()
		close(release)
		if i == 0 {
			rs.Kill()
			rs.Restart()
		}
		replica = startProc(t, "forms", cfg, nil)
	}

	var got map[string]int
	var total int
	testwait.Until(t, 45*time.Second, "every stored message delivered", func() error {
		got, total = sink.snapshot()
		missing := 0
		for id := range ids {
			if got[id] == 0 {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d stored messages not delivered (deliveries so far: %d)", missing, messages, total)
		}
		return nil
	})
	dups := 0
	for id, n := range got {
		if !ids[id] {
			t.Errorf("the webhook got a message that was never stored: %s", id)
		}
		dups += n - 1
	}
	t.Logf("%d messages stored; 2 worker processes SIGKILLed mid-delivery and Redis restarted once; "+
		"%d deliveries received (%d held while their sender died, then sent again by another replica), every message at least once, "+
		"%d more sent again (at-least-once duplicates)", messages, total, len(kills), dups)
	if dups > 2*readBatchBound {
		t.Errorf("%d duplicates: more than the batches in flight at the two kills could explain", dups)
	}
}

// readBatchBound is the most messages one worker holds at a time (its read batch); a kill can leave at
// most that many to be sent again.
const readBatchBound = 16
