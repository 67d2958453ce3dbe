package health

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/redisclient"
	"github.com/formsservice/formsservice/services/platform/server"
)

// healthServer is a health service on a real loopback listener, behind the platform's app (metrics, probes).
type healthServer struct {
	URL     string
	svc     *Service
	metrics *server.Metrics
	clock   *manualClock
}

// manualClock is the result cache's clock in these tests: it stands still unless the test moves it, so
// whether a request reuses the cached round is the test's decision, not the machine's speed.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// expire makes the cached round stale: the next request runs the checks again.
func (s *healthServer) expire() { s.clock.Advance(24 * time.Hour) }

// fresh is GET /health answered by a new round of checks.
func (s *healthServer) fresh(t testing.TB) reply {
	t.Helper()
	s.expire()
	return getHealth(t, s.URL)
}

// waitFor asks for fresh rounds until cond holds, or fails after within.
func (s *healthServer) waitFor(t testing.TB, within time.Duration, what string, cond func(reply) bool) reply {
	t.Helper()
	return waitReply(t, within, what, func() reply { return s.fresh(t) }, cond)
}

// startHealth serves a health service built from cfg (defaults applied) and the given options.
func startHealth(t testing.TB, cfg *config.Config, o Options) *healthServer {
	t.Helper()
	// A test that sets no thresholds is not about them: roomy ones keep a loaded CI machine from
	// turning a healthy check into warn (CI once measured a loopback PING at 112ms).
	if cfg.Health.WarnAfter == 0 && cfg.Health.Timeout == 0 {
		cfg.Health.WarnAfter, cfg.Health.Timeout = ms(roomyWarnAfter), ms(2*roomyWarnAfter)
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	m := server.NewMetrics()
	clock := &manualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	o.Clock = clock.Now
	o.Config = config.Static{C: cfg}
	o.Registerer = m.Registry
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	svc, err := New(o)
	if err != nil {
		t.Fatalf("health.New: %v", err)
	}
	app := server.New(server.Options{Logger: o.Logger, Metrics: m}, svc)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		_ = app.Serve(ctx, server.ServeOptions{Listener: ln, ShutdownTimeout: 5 * time.Second})
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return &healthServer{URL: "http://" + ln.Addr().String(), svc: svc, metrics: m, clock: clock}
}

// testWriter sends the service's log lines to t.Log, so a failing test shows what the service said.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// redisClient connects to a test server the way the services do (platform.NewRedis, short timeouts).
func redisClient(t testing.TB, url string) redis.UniversalClient {
	t.Helper()
	rdb, err := redisclient.New(config.Redis{URL: url, Timeout: config.Duration(time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// reply is one GET /health answer.
type reply struct {
	Code     int
	Type     string
	Raw      string
	Body     Response
	Took     time.Duration
	checkMap map[string][]map[string]any
}

// check returns the single entry of a check key, failing the test when it is missing.
func (r reply) check(t *testing.T, name string) map[string]any {
	t.Helper()
	entries, ok := r.checkMap[name]
	if !ok || len(entries) != 1 {
		t.Fatalf("check %q missing or not one entry in %s", name, r.Raw)
	}
	return entries[0]
}

func (r reply) status(t *testing.T, name string) Status {
	t.Helper()
	return Status(r.check(t, name)["status"].(string))
}

var httpClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}

func getHealth(t testing.TB, base string) reply {
	t.Helper()
	start := time.Now()
	resp, err := httpClient.Get(base + "/health")
	if err != nil {
		t.Fatalf("GET /health: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := reply{Code: resp.StatusCode, Type: resp.Header.Get("Content-Type"), Raw: string(b), Took: time.Since(start)}
	if err := json.Unmarshal(b, &r.Body); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, b)
	}
	var loose struct {
		Checks map[string][]map[string]any `json:"checks"`
	}
	if err := json.Unmarshal(b, &loose); err != nil {
		t.Fatal(err)
	}
	r.checkMap = loose.Checks
	return r
}

// waitFor polls GET /health of a health process (its own clock: set a short cacheFor) until cond
// holds, or fails after within.
func waitFor(t testing.TB, base string, within time.Duration, what string, cond func(reply) bool) reply {
	t.Helper()
	return waitReply(t, within, what, func() reply { return getHealth(t, base) }, cond)
}

// waitReply asks until cond holds for an answer, and returns that answer.
func waitReply(t testing.TB, within time.Duration, what string, ask func() reply, cond func(reply) bool) reply {
	t.Helper()
	var r reply
	testwait.Until(t, within, what, func() error {
		if r = ask(); !cond(r) {
			return fmt.Errorf("last answer %d %s", r.Code, r.Raw)
		}
		return nil
	})
	return r
}

// readyzServer answers /readyz with the status code set by the test.
type readyzServer struct {
	URL  string
	mu   sync.Mutex
	code int
}

func startReadyz(t testing.TB) *readyzServer {
	t.Helper()
	rs := &readyzServer{code: http.StatusOK}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		rs.mu.Lock()
		code := rs.code
		rs.mu.Unlock()
		w.WriteHeader(code)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	rs.URL = "http://" + ln.Addr().String()
	return rs
}

func (rs *readyzServer) set(code int) {
	rs.mu.Lock()
	rs.code = code
	rs.mu.Unlock()
}

// silentListener accepts TCP connections and never answers a byte: a dependency that hangs.
func silentListener(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

// pingCalls reads how many PINGs the server has answered (INFO commandstats).
func pingCalls(t testing.TB, r *testredis.Server) int {
	t.Helper()
	info, err := r.Client().Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	v := infoField(info, "cmdstat_ping")
	if v == "" {
		return 0
	}
	calls, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
	n, err := strconv.Atoi(calls)
	if err != nil {
		t.Fatalf("cmdstat_ping %q: %v", v, err)
	}
	return n
}

func ms(d time.Duration) config.Duration { return config.Duration(d) }

// loadSlack is what a loaded machine (two shared cores, the race detector) may add to a request's time.
// An upper bound of timeout+loadSlack still tells an answer bounded by the timeout from one that waits
// for a dependency that never answers (that one waits for the client's 30 s).
const loadSlack = 2 * time.Second

// roomyWarnAfter is startHealth's warn threshold for tests that set none.
const roomyWarnAfter = time.Second
