package forms

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/forms/store"
)

// submitConcurrently sends n identical waitlist submissions at the same moment, each on its own
// connection, and counts the answers by status code.
func submitConcurrently(t *testing.T, h *harness, n int, body string) map[int]int {
	t.Helper()
	// The burst tests the submission path: the store's first durability check (which the first
	// submissions would otherwise wait for, within the store timeout) is done before it.
	if err := h.svc.StoreState(t.Context()); err != nil {
		t.Fatalf("the service is not ready: %v", err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}}
	defer client.CloseIdleConnections()
	start := make(chan struct{})
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, h.url+"/waitlist", strings.NewReader(body))
			req.Header.Set("Origin", formstest.Origin)
			req.Header.Set("Content-Type", "application/json")
			<-start
			resp, err := client.Do(req)
			code := -1
			if err == nil {
				a := decodeAnswer(t, resp)
				resp.Body.Close()
				code = a.code
				if code != 200 && code != 201 {
					t.Logf("answer %d: %s", code, a.raw) // which 502, for the failure message
				}
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	return codes
}

func checkOneCreated(t *testing.T, h *harness, codes map[int]int) {
	t.Helper()
	if codes[201] != 1 || codes[200] != 99 || len(codes) != 2 {
		t.Fatalf("answers by status: %v, want exactly one 201 and 99 200", codes)
	}
	if n := h.rdb.HLen(t.Context(), store.WaitlistEntries).Val(); n != 1 {
		t.Fatalf("%d entries, want 1", n)
	}
	if n := h.rdb.LLen(t.Context(), store.WaitlistOrder).Val(); n != 1 {
		t.Fatalf("%d index entries, want 1", n)
	}
}

func TestWaitlist_100ConcurrentIdenticalSubmissions_CreateOneEntry(t *testing.T) {
	h := newHarness(t, harnessOpts{storeTimeout: 30 * time.Second}) // correctness, not latency (below)
	codes := submitConcurrently(t, h, 100, `{"email":"Race@Example.com","consent":true}`)
	checkOneCreated(t, h, codes)
}

func TestWaitlist_100ConcurrentIdenticalSubmissions_OnRedisCluster_CreateOneEntry(t *testing.T) {
	cluster := testredis.StartCluster(t, 3, 0, durableRedis)
	cfg := formstest.Config()
	cfg.Forms.RateLimitPerMinute = perMinute(1000) // the rate-limit counter runs in the same script and slot
	// A store timeout for correctness, not latency: 100 requests at once on a loaded two-core CI machine
	// took longer than the default 1.5 s and got 502 (65 of 100 in one run), which says nothing about
	// exactly-once.
	h := newHarness(t, harnessOpts{cfg: cfg, cluster: cluster, storeTimeout: 30 * time.Second})
	codes := submitConcurrently(t, h, 100, `{"email":"race@example.com","consent":true}`)
	checkOneCreated(t, h, codes)

	// Contact messages with an Idempotency-Key run their script on the cluster too.
	h.post("/contact", validContact, "Idempotency-Key", "k1").expect(t, 201, "created")
	h.post("/contact", validContact, "Idempotency-Key", "k1").expect(t, 201, "created")
	if n := h.rdb.XLen(t.Context(), store.ContactStream).Val(); n != 1 {
		t.Fatalf("%d contact messages, want 1", n)
	}

	// Export and erasure find everything: each endpoint's keys are on one master, and the client goes there.
	if out, n := exportLines(t, h.rdb, "waitlist", store.FormatJSONL); n != 1 || !strings.Contains(out, "race@example.com") {
		t.Fatalf("cluster export: %d %q", n, out)
	}
	if _, n := exportLines(t, h.rdb, "contact", store.FormatCSV); n != 1 {
		t.Fatalf("cluster contact export: %d", n)
	}
	rep, err := store.Forget(t.Context(), h.rdb, "ada@example.com")
	if err != nil || len(rep.ContactMessages) != 1 {
		t.Fatalf("cluster forget: %+v %v", rep, err)
	}
	if rep, _ := store.Forget(t.Context(), h.rdb, "race@example.com"); rep.WaitlistEntries != 1 {
		t.Fatalf("cluster forget waitlist: %+v", rep)
	}
}
