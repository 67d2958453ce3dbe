package forms

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/forms/internal/formstest"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/mail"
	"github.com/formsservice/formsservice/services/platform/redisclient"
	"github.com/formsservice/formsservice/services/platform/server"
)

func perMinute(n int) *int { return &n }

// harness is the forms service on the real platform app, listening on a loopback port, backed by a real
// redis-server (or cluster) through the production Redis client. app.Serve also runs the delivery
// worker, which idles until the configuration names a delivery target (none of these tests does: the
// worker's own are in package delivery).
type harness struct {
	t     *testing.T
	url   string
	addr  string
	src   *formstest.Source
	svc   *Service
	reg   *prometheus.Registry
	rdb   redis.UniversalClient
	redis *testredis.Server
	proxy *testredis.Proxy // between the service and redis, when harnessOpts.proxy
	// ticks paces the store's durability checks after the first (checkDurability).
	ticks chan time.Time
}

type harnessOpts struct {
	cfg     *config.Config
	cluster *testredis.Cluster
	// redis, when set, is shared with another harness: a second replica of the service.
	redis *testredis.Server
	// proxy puts a testredis.Proxy between the service and its redis-server.
	proxy bool
	// storeTimeout is the service's StoreTimeout and its Redis client's timeout (default 1.5 s and 1 s):
	// a long one keeps a request waiting for durability until the test ends the wait.
	storeTimeout time.Duration
	// mail sends the waitlist's confirmation mails; now is the service's clock.
	mail mail.Sender
	now  func() time.Time
	// dev and log: the service as the dev server runs it, and where its log goes (JSON lines, info and
	// up; refusals_test.go).
	dev bool
	log io.Writer
	// s3 is the AWS_* environment of forms.files' bucket (files_test.go).
	s3 map[string]string
	// readTimeout is the server's (default 10 s): a test of slow uploads shortens it.
	readTimeout time.Duration
}

func newHarness(t *testing.T, o harnessOpts) *harness {
	t.Helper()
	if o.cfg == nil {
		o.cfg = formstest.Config()
	}
	h := &harness{t: t, src: &formstest.Source{}, reg: prometheus.NewRegistry(), ticks: make(chan time.Time)}
	h.src.Set(t, o.cfg)
	rc := config.Redis{Timeout: config.Duration(cmp.Or(o.storeTimeout, time.Second))}
	switch {
	case o.cluster != nil:
		rc.Addrs, rc.Cluster = o.cluster.Addrs(), true
	case o.redis != nil:
		h.redis = o.redis
		rc.URL = h.redis.URL()
	default:
		h.redis = testredis.Start(t, durableRedis)
		rc.URL = h.redis.URL()
	}
	if o.proxy && h.redis != nil {
		h.proxy = testredis.StartProxy(t, h.redis.Addr())
		rc.URL = h.proxy.URL()
	}
	rdb, err := redisclient.New(rc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	h.rdb = rdb
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if o.log != nil {
		log = slog.New(slog.NewJSONHandler(o.log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	h.svc, err = New(Options{Config: h.src, Redis: rdb, Logger: log, Registerer: h.reg,
		StoreTimeout: o.storeTimeout, DurabilityTicks: h.ticks, Mail: o.mail, Now: o.now, Dev: o.dev,
		S3Env: func(k string) string { return o.s3[k] }})
	if err != nil {
		t.Fatal(err)
	}
	metrics := server.NewMetrics()
	app := server.New(server.Options{Logger: log, Metrics: metrics, ReadTimeout: o.readTimeout}, h.svc)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	h.url = "http://" + h.addr
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Serve(ctx, server.ServeOptions{Listener: ln, ShutdownTimeout: 5 * time.Second}) }()
	// Wait until the server answers: shutting down a Fiber app whose listener has not started yet would
	// leave it serving forever.
	testwait.For(t, 5*time.Second, "the app to listen", func() bool {
		resp, err := http.Get(h.url + "/livez")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("app did not stop")
		}
	})
	return h
}

// durableRedis is a redis-server set up as the default durability level, process, needs: appendonly
// yes (here without fsync, which that level does not ask for).
var durableRedis = testredis.Options{AppendFsync: "no"}

// checkDurability makes the service check its store's durability now and waits until it has: the
// check that runs after a change the test made. The loop takes a tick only between checks, so the second
// tick is taken once the check the first one started has ended. (Counting checks instead raced: the
// check could end before the count was read, and the wait then waited for one that never came.)
func (h *harness) checkDurability() {
	h.t.Helper()
	for range 2 {
		select {
		case h.ticks <- time.Now():
		case <-time.After(10 * time.Second):
			h.t.Fatal("the durability check loop did not take a tick")
		}
	}
}

// answer is a decoded response.
type answer struct {
	code   int
	header http.Header
	status string
	errors map[string]string
	raw    string
}

func (h *harness) do(method, path string, header map[string]string, body string) answer {
	h.t.Helper()
	req, err := http.NewRequest(method, h.url+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	return decodeAnswer(h.t, resp)
}

func decodeAnswer(t *testing.T, resp *http.Response) answer {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading answer: %v", err)
	}
	a := answer{code: resp.StatusCode, header: resp.Header, raw: string(b)}
	if len(bytes.TrimSpace(b)) > 0 {
		var v struct {
			Status string            `json:"status"`
			Errors map[string]string `json:"errors"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("answer %d is not JSON: %q", resp.StatusCode, b)
		}
		a.status, a.errors = v.Status, v.Errors
	}
	return a
}

// post sends a JSON body from formstest.Origin with extra headers as key/value pairs.
func (h *harness) post(path, body string, kv ...string) answer {
	h.t.Helper()
	hdr := map[string]string{"Origin": formstest.Origin, "Content-Type": "application/json"}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(hdr, kv[i])
		} else {
			hdr[kv[i]] = kv[i+1]
		}
	}
	return h.do(http.MethodPost, path, hdr, body)
}

func (a answer) expect(t *testing.T, code int, status string) {
	t.Helper()
	if a.code != code || a.status != status {
		t.Fatalf("got %d %q (%s), want %d %q", a.code, a.status, a.raw, code, status)
	}
}

func (h *harness) counter(name string, labels ...string) float64 {
	h.t.Helper()
	return formstest.Counter(h.t, h.reg, name, labels...)
}

const (
	validWaitlist = `{"email":"ada@example.com","consent":true}`
	validContact  = `{"name":"Ada Lovelace","email":"ada@example.com","message":"Hello there, a question about pricing."}`
)
