package delivery

import (
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/redisclient"
)

// harness is the delivery worker as the forms service runs it: on a real redis-server through the
// production Redis client, beside the store that POST /contact writes through (submit), on a
// configuration the test can reload. The worker idles until the configuration names a delivery target.
type harness struct {
	*testWorker
	t     *testing.T
	src   *formstest.Source
	rdb   redis.UniversalClient
	store *store.Store
	now   func() time.Time
}

type harnessOpts struct {
	cfg *config.Config
	// now is the worker's clock (default time.Now).
	now func() time.Time
}

func newHarness(t *testing.T, o harnessOpts) *harness {
	t.Helper()
	if o.cfg == nil {
		o.cfg = formstest.Config()
	}
	h := &harness{t: t, src: &formstest.Source{}, now: o.now}
	if h.now == nil {
		h.now = time.Now
	}
	h.src.Set(t, o.cfg)
	// appendonly yes: what the default durability level, process, needs of the store.
	rs := testredis.Start(t, testredis.Options{AppendFsync: "no"})
	rdb, err := redisclient.New(config.Redis{URL: rs.URL(), Timeout: config.Duration(time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	h.rdb = rdb
	if h.store, err = store.New(rdb, store.Options{}); err != nil {
		t.Fatal(err)
	}
	h.testWorker = runWorker(t, rdb, h.src, "", o.now)
	return h
}

// validContact is what POST /contact stores of the forms' valid test message.
var validContact = store.ContactRecord{Name: "Ada Lovelace", Email: "ada@example.com", Topic: "general",
	Message: "Hello there, a question about pricing."}

// submit stores c as POST /contact does (its record, received now from formstest.Origin, through the
// same script at the configured durability) and fails the test unless it was stored.
func (h *harness) submit(c store.ContactRecord) {
	h.t.Helper()
	c.ReceivedAt, c.Origin = h.now().UTC(), formstest.Origin
	cfg := h.src.Current()
	r, err := h.store.AddContact(h.t.Context(), netip.MustParseAddr("127.0.0.1"), cfg.Forms.RateLimit(), store.Idempotency{},
		store.AppendContactRecord(nil, c), cfg.Forms.Durability)
	if err != nil || r.Outcome != store.Stored {
		h.t.Fatalf("storing a contact message: %+v, %v", r, err)
	}
}

// withName and withEmail are c with another name or address.
func withName(c store.ContactRecord, name string) store.ContactRecord {
	c.Name = name
	return c
}

func withEmail(c store.ContactRecord, address string) store.ContactRecord {
	c.Email = address
	return c
}

func (h *harness) counter(name string, labels ...string) float64 {
	h.t.Helper()
	return formstest.Counter(h.t, h.reg, name, labels...)
}

// testClock is a worker's clock (harnessOpts.now, startWorker) that runs with real time and that a test
// moves ahead with Advance, as agePending moves the delivery group's idle times on Redis's clock: the
// two clocks a delivery decision reads then stay in step.
type testClock struct{ ahead atomic.Int64 }

func (c *testClock) Now() time.Time { return time.Now().Add(time.Duration(c.ahead.Load())) }

func (c *testClock) Advance(d time.Duration) { c.ahead.Add(int64(d)) }
