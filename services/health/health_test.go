package health

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/config"
)

func TestHealth_AllUp_Answers200PassInHealthJSON(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{Unix: true})
	forms, auth := startReadyz(t), startReadyz(t)
	srv := startHealth(t, &config.Config{Health: config.Health{FormsURL: forms.URL, AuthURL: auth.URL}},
		Options{Redis: redisClient(t, rs.URL()), Version: "v9.9.9"})

	r := getHealth(t, srv.URL)
	if r.Code != http.StatusOK || r.Body.Status != Pass {
		t.Fatalf("got %d %s, want 200 pass", r.Code, r.Raw)
	}
	if r.Type != "application/health+json" {
		t.Errorf("Content-Type %q, want application/health+json", r.Type)
	}
	if r.Body.Version != "v9.9.9" || r.Body.Output != "" {
		t.Errorf("version %q output %q", r.Body.Version, r.Body.Output)
	}
	if len(r.checkMap) != 3 {
		t.Errorf("checks %v, want redis:responseTime, forms:readiness, auth:readiness", r.checkMap)
	}
	for name, typ := range map[string]string{"redis:responseTime": "datastore", "forms:readiness": "component", "auth:readiness": "component"} {
		c := r.check(t, name)
		if c["status"] != "pass" || c["componentType"] != typ || c["observedUnit"] != "ms" {
			t.Errorf("%s: %v", name, c)
		}
		if v, ok := c["observedValue"].(float64); !ok || v < 0 || v > float64(roomyWarnAfter.Milliseconds()) {
			t.Errorf("%s: observedValue %v, want milliseconds under the warn threshold", name, c["observedValue"])
		}
		if _, ok := c["output"]; ok {
			t.Errorf("%s: output on a passing check: %v", name, c)
		}
		ts, err := time.Parse(time.RFC3339Nano, c["time"].(string))
		if err != nil || time.Since(ts) > 5*time.Second || time.Since(ts) < -time.Second {
			t.Errorf("%s: time %v (%v), want a recent RFC 3339 time", name, c["time"], err)
		}
	}
}

func TestHealth_RedisDown_503WithOthersStillReported(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{Unix: true})
	forms, auth := startReadyz(t), startReadyz(t)
	srv := startHealth(t, &config.Config{Health: config.Health{FormsURL: forms.URL, AuthURL: auth.URL}},
		Options{Redis: redisClient(t, rs.URL())})
	if r := getHealth(t, srv.URL); r.Code != 200 {
		t.Fatalf("before: %d %s", r.Code, r.Raw)
	}

	rs.Kill() // a crash: the socket stays, and refuses connections
	r := srv.fresh(t)
	if r.Code != http.StatusServiceUnavailable || r.Body.Status != Fail {
		t.Fatalf("got %d %s, want 503 fail", r.Code, r.Raw)
	}
	c := r.check(t, "redis:responseTime")
	if c["status"] != "fail" || c["output"] != "connection refused" {
		t.Errorf("redis check %v, want fail with output \"connection refused\"", c)
	}
	if r.status(t, "forms:readiness") != Pass || r.status(t, "auth:readiness") != Pass {
		t.Errorf("the other checks must still be reported on their own: %s", r.Raw)
	}
	if r.Body.Output != "failing: redis:responseTime" {
		t.Errorf("output %q", r.Body.Output)
	}

	rs.Restart()
	srv.waitFor(t, 5*time.Second, "recovery to pass", func(r reply) bool { return r.Code == 200 && r.Body.Status == Pass })
}

func TestHealth_ServiceNotReady_FailsWithStatusInOutput(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{Unix: true})
	forms, auth := startReadyz(t), startReadyz(t)
	srv := startHealth(t, &config.Config{Health: config.Health{FormsURL: forms.URL, AuthURL: auth.URL}},
		Options{Redis: redisClient(t, rs.URL())})
	auth.set(http.StatusServiceUnavailable)
	r := getHealth(t, srv.URL)
	if r.Code != 503 || r.status(t, "auth:readiness") != Fail || r.check(t, "auth:readiness")["output"] != "not ready: /readyz answered 503" {
		t.Fatalf("got %d %s", r.Code, r.Raw)
	}
	if r.status(t, "forms:readiness") != Pass || r.status(t, "redis:responseTime") != Pass {
		t.Errorf("healthy checks must pass: %s", r.Raw)
	}
}

// A store that stalls inside a command (DEBUG SLEEP blocks the real server, longer than anything the
// machine can add) fails the check at its timeout, and /health answers within that bound. The warn and
// fail thresholds themselves are measured on a fake clock (thresholds_test.go).
func TestHealth_RedisStalled_FailsAtTheTimeout(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{Unix: true, Args: []string{"--enable-debug-command", "yes"}})
	srv := startHealth(t, &config.Config{Health: config.Health{WarnAfter: ms(250 * time.Millisecond), Timeout: ms(700 * time.Millisecond)}},
		Options{Redis: redisClient(t, rs.URL())})
	if r := getHealth(t, srv.URL); r.Body.Status != Pass {
		t.Fatalf("before: %s", r.Raw)
	}

	srv.expire()
	r := whileSleeping(t, rs, 4*time.Second, srv.URL)
	c := r.check(t, "redis:responseTime")
	if r.Code != 503 || c["status"] != "fail" || c["output"] != "no answer within 700ms" {
		t.Fatalf("stalled store: got %d %s, want 503 fail \"no answer within 700ms\"", r.Code, r.Raw)
	}
	if r.Took > 700*time.Millisecond+loadSlack {
		t.Errorf("GET /health took %s with a 700ms timeout", r.Took)
	}
	srv.waitFor(t, 10*time.Second, "recovery to pass once the sleep ends", func(r reply) bool { return r.Code == 200 && r.Body.Status == Pass })
}

// whileSleeping blocks the store with DEBUG SLEEP d and asks /health while it sleeps.
func whileSleeping(t *testing.T, rs *testredis.Server, d time.Duration, base string) reply {
	t.Helper()
	cl := rs.Client()
	// The probe's connection is open before the sleep starts, so a slow dial is never read as "blocked".
	probe := redis.NewClient(&redis.Options{Addr: rs.Addr(), MaxRetries: -1, PoolSize: 1, ContextTimeoutEnabled: true})
	defer probe.Close()
	if err := probe.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("probe: %v", err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), d+5*time.Second)
		defer cancel()
		if err := cl.Do(ctx, "DEBUG", "SLEEP", d.Seconds()).Err(); err != nil {
			t.Errorf("DEBUG SLEEP: %v", err)
		}
	}()
	defer wg.Wait() // also when waitUntilBlocked fails: the goroutine must not outlive the test
	waitUntilBlocked(t, probe)
	return getHealth(t, base)
}

// waitUntilBlocked returns once the server stops answering (DEBUG SLEEP has reached it): a PING on
// probe's open connection gets no answer within 100ms.
func waitUntilBlocked(t *testing.T, probe *redis.Client) {
	t.Helper()
	testwait.For(t, 3*time.Second, "the store to stop answering after DEBUG SLEEP", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		return probe.Ping(ctx).Err() != nil
	})
}

// A store that accepts the connection and never answers (a paused process), and a service that does the
// same (a raw TCP listener), must not hold /health past its bound.
func TestHealth_DependencyAcceptsAndNeverAnswers_AnswersWithinBound(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{Unix: true})
	hang := "http://" + silentListener(t)
	auth := startReadyz(t)
	timeout := 500 * time.Millisecond
	// warnAfter sits just under the timeout: the healthy checks must pass while forms hangs, and a
	// first dial on a loaded CI machine can take over 100ms without being what this test is about.
	srv := startHealth(t, &config.Config{Health: config.Health{FormsURL: hang, AuthURL: auth.URL,
		WarnAfter: ms(400 * time.Millisecond), Timeout: ms(timeout)}},
		Options{Redis: redisClient(t, rs.URL())})

	r := getHealth(t, srv.URL)
	if r.Code != 503 || r.check(t, "forms:readiness")["output"] != "no answer within 500ms" {
		t.Fatalf("hanging forms: got %d %s", r.Code, r.Raw)
	}
	if r.status(t, "redis:responseTime") != Pass || r.status(t, "auth:readiness") != Pass {
		t.Errorf("other checks: %s", r.Raw)
	}
	if r.Took > timeout+loadSlack {
		t.Errorf("GET /health took %s with a %s timeout", r.Took, timeout)
	}

	rs.Pause()
	defer rs.Resume()
	r = srv.fresh(t)
	if r.Code != 503 || r.check(t, "redis:responseTime")["output"] != "no answer within 500ms" {
		t.Fatalf("paused store: got %d %s", r.Code, r.Raw)
	}
	if r.Took > timeout+loadSlack {
		t.Errorf("GET /health took %s with a %s timeout and a paused store", r.Took, timeout)
	}
}

func TestHealth_PerCheckLimits_OverrideTheSection(t *testing.T) {
	hang := "http://" + silentListener(t)
	auth := startReadyz(t)
	srv := startHealth(t, &config.Config{Health: config.Health{FormsURL: hang, AuthURL: auth.URL,
		Timeout: ms(2 * time.Second),
		Checks:  map[string]config.CheckLimits{"forms:readiness": {WarnAfter: ms(50 * time.Millisecond), Timeout: ms(200 * time.Millisecond)}}}},
		Options{})
	r := getHealth(t, srv.URL)
	// The output names the timeout that applied; the time alone could not tell 200ms from 2s on a loaded
	// machine.
	if r.check(t, "forms:readiness")["output"] != "no answer within 200ms" {
		t.Fatalf("got %s after %s, want forms failing at its own 200ms timeout", r.Raw, r.Took)
	}
}

// 200 concurrent requests (a scrape storm) share one round of checks: the store sees one PING.
func TestHealth_ScrapeStorm_OneRoundOfChecks(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{Unix: true})
	srv := startHealth(t, &config.Config{Health: config.Health{CacheFor: ms(10 * time.Second)}},
		Options{Redis: redisClient(t, rs.URL())})
	before := pingCalls(t, rs)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := httpClient.Get(srv.URL + "/health")
			if err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				errs <- errors.New(resp.Status)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// go-redis may PING once more when it opens its first connection; never once per request.
	if got := pingCalls(t, rs) - before; got < 1 || got > 2 {
		t.Fatalf("the store answered %d PINGs for 200 requests, want one round", got)
	}
}

// Within cacheFor a request gets the cached round, with the time it was measured; past it, a new round.
// The cache's clock is the test's.
func TestHealth_CachedResult_SaysWhenItWasMeasured(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{Unix: true})
	srv := startHealth(t, &config.Config{Health: config.Health{CacheFor: ms(time.Second)}},
		Options{Redis: redisClient(t, rs.URL())})
	a := getHealth(t, srv.URL)
	pings := pingCalls(t, rs)
	srv.clock.Advance(time.Second - time.Nanosecond)
	b := getHealth(t, srv.URL)
	if b.Raw != a.Raw || pingCalls(t, rs) != pings {
		t.Fatalf("within cacheFor the result must be reused with its time: %s then %s", a.Raw, b.Raw)
	}
	srv.clock.Advance(time.Nanosecond)
	getHealth(t, srv.URL)
	if pingCalls(t, rs) == pings {
		t.Fatal("after cacheFor the checks must run again")
	}
}

// The body is public: it shows short fixed lines, never a password, an address or a library's error.
func TestHealth_Failures_LeakNoSecretsOrAddresses(t *testing.T) {
	rs := testredis.Start(t)
	if err := rs.Client().ConfigSet(context.Background(), "requirepass", "right-password").Err(); err != nil {
		t.Fatal(err)
	}
	wrong := rs.URLWithPassword("wrong-s3cret")
	// Port 1 is privileged and served by nothing here; a test's listeners bind port 0 and never get it.
	dead := "http://127.0.0.1:1"
	srv := startHealth(t, &config.Config{Health: config.Health{FormsURL: dead, AuthURL: "http://no-such-host.invalid"}},
		Options{Redis: redisClient(t, wrong)})
	r := getHealth(t, srv.URL)
	if r.Code != 503 {
		t.Fatalf("got %d %s", r.Code, r.Raw)
	}
	want := map[string]string{
		"redis:responseTime": "store answered an error: WRONGPASS",
		"forms:readiness":    "connection refused",
		"auth:readiness":     "name does not resolve",
	}
	for name, out := range want {
		if got := r.check(t, name)["output"]; got != out {
			t.Errorf("%s output %q, want %q", name, got, out)
		}
	}
	for _, secret := range []string{"s3cret", "right-password", "127.0.0.1", "no-such-host", "dial", "tcp"} {
		if strings.Contains(r.Raw, secret) {
			t.Errorf("body shows %q: %s", secret, r.Raw)
		}
	}
}

func TestOutput_KeepsOnlyTheRedisErrorCode(t *testing.T) {
	for in, want := range map[string]string{
		"LOADING Redis is loading the dataset in memory": "LOADING",
		"NOAUTH Authentication required.":                "NOAUTH",
		"weird lower-case message":                       "ERR",
		"":                                               "ERR",
	} {
		if got := redisErrorCode(in); got != want {
			t.Errorf("redisErrorCode(%q) = %q, want %q", in, got, want)
		}
	}
}
