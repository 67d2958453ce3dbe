package health

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/formsservice/formsservice/config/monitoring"
	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/server"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testproc.RemoveBuilds()
	os.Exit(code)
}

// formsservice is the binary built from this tree, so that the end-to-end tests run the real
// `formsservice forms|auth|health` processes.
func formsservice(t testing.TB) string { return testproc.Build(t, "./cmd/formsservice") }

// offered reports whether the binary has the subcommand, so that a missing one fails with a clear message.
func offered(t testing.TB, name string) bool {
	t.Helper()
	out, _ := exec.Command(formsservice(t), name, "-h").CombinedOutput()
	return !strings.Contains(string(out), "unknown command")
}

// proc is one running `formsservice <service>` process.
type proc struct {
	name string
	URL  string
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs strings.Builder
}

// startProc runs `formsservice name -config cfg -addr 127.0.0.1:0` and waits for its "listening" line.
func startProc(t testing.TB, name, cfg string) *proc {
	t.Helper()
	p := &proc{name: name}
	p.cmd = exec.Command(formsservice(t), name, "-config", cfg, "-addr", "127.0.0.1:0")
	p.cmd.Env = cleanEnv()
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.logs.WriteString(line + "\n")
			p.mu.Unlock()
			var l struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "listening" {
				select {
				case addr <- l.Addr:
				default:
				}
			}
		}
		close(addr)
	}()
	exited := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("--- %s log:\n%s", name, p.log())
		}
	})
	select {
	case a, ok := <-addr:
		if !ok {
			<-exited
			t.Fatalf("%s exited before listening:\n%s", name, p.log())
		}
		p.URL = "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not listen within 30s:\n%s", name, p.log())
	}
	return p
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// cleanEnv is this environment without the variables that would override the test's configuration.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "REDIS_URL" || k == "REDIS_PASSWORD" || k == "ADDR" || k == "CONFIG" || strings.HasPrefix(k, "FORMSSERVICE_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// writeConfig writes a service configuration file (the format the operator renders).
func writeConfig(t testing.TB, path string, c map[string]any) {
	t.Helper()
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// signingKey writes a fresh EC P-256 key (PKCS #8 PEM, as the operator's Secret holds) for the auth
// process. Written here rather than with auth's keys package: one service's tests do not import another.
func signingKey(t testing.TB, dir string) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "signing-key.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// platformUnderTest is Redis, the forms and auth processes, and a health process pointed at them.
type platformUnderTest struct {
	redis    *testredis.Server
	services []*proc // forms, auth
	health   *proc
	checks   []string // the checks /health must report
}

func startPlatform(t testing.TB, healthSection map[string]any) *platformUnderTest {
	t.Helper()
	pu := &platformUnderTest{redis: testredis.Start(t, testredis.Options{AppendFsync: "no", Args: []string{"--enable-debug-command", "yes"}})}
	dir := t.TempDir()
	base := map[string]any{
		"publicURL":      "http://127.0.0.1:8080",
		"allowedOrigins": []string{"http://localhost:8080"},
		// The store's own command timeout is longer than the health checks' so that the checks'
		// thresholds, not the client, decide warn and fail.
		"redis": map[string]any{"url": pu.redis.URL(), "timeout": "3s"},
		"auth": map[string]any{"signingKeyFile": signingKey(t, dir), "clients": []map[string]any{{
			"clientID": "demo", "redirectURIs": []string{"http://localhost:8080/demo/callback"}}}},
	}
	svcConfig := filepath.Join(dir, "services.json")
	writeConfig(t, svcConfig, base)
	pu.checks = []string{"redis:responseTime"}
	health := map[string]any{}
	for k, v := range healthSection {
		health[k] = v
	}
	for _, name := range []string{"forms", "auth"} {
		if !offered(t, name) {
			t.Fatalf("this binary has no `formsservice %s`: its builder must be listed in serviceBuilders (cmd/formsservice/serve.go)", name)
		}
		p := startProc(t, name, svcConfig)
		pu.services = append(pu.services, p)
		if _, set := health[name+"URL"]; !set {
			health[name+"URL"] = p.URL
		}
	}
	for _, name := range []string{"forms", "auth"} {
		if _, set := health[name+"URL"]; set {
			pu.checks = append(pu.checks, name+":readiness")
		}
	}
	base["health"] = health
	healthConfig := filepath.Join(dir, "health.json")
	writeConfig(t, healthConfig, base)
	pu.health = startProc(t, "health", healthConfig)
	return pu
}

// assertChecks fails unless the body has exactly the platform's checks, each with the wanted status
// (want maps a check to its status; checks not in want must pass).
func (pu *platformUnderTest) assertChecks(t *testing.T, r reply, want map[string]Status) {
	t.Helper()
	var got []string
	for name := range r.checkMap {
		got = append(got, name)
	}
	slices.Sort(got)
	wantNames := slices.Clone(pu.checks)
	slices.Sort(wantNames)
	if !slices.Equal(got, wantNames) {
		t.Fatalf("checks %v, want %v: %s", got, wantNames, r.Raw)
	}
	for _, name := range pu.checks {
		w, ok := want[name]
		if !ok {
			w = Pass
		}
		if s := r.status(t, name); s != w {
			t.Errorf("%s is %s, want %s: %s", name, s, w, r.Raw)
		}
	}
}

// The whole story against real processes: all up, metrics, slow store (warn, then fail), a store that
// accepts connections and never answers, a stopped store, and recovery.
func TestE2E_Health_AgainstRealRedisAndServices(t *testing.T) {
	// Thresholds roomy enough that a loaded CI machine keeps healthy checks at pass.
	pu := startPlatform(t, map[string]any{"warnAfter": "300ms", "timeout": "1500ms", "cacheFor": "1ms"})
	h := pu.health.URL

	t.Run("all up: 200 pass", func(t *testing.T) {
		r := waitFor(t, h, 10*time.Second, "all up", func(r reply) bool { return r.Code == 200 && r.Body.Status == Pass })
		if r.Type != ContentType {
			t.Fatalf("got %d %s %s", r.Code, r.Type, r.Raw)
		}
		pu.assertChecks(t, r, nil)
	})

	t.Run("metrics: documented series", func(t *testing.T) {
		fams := scrape(t, h)
		status := gaugesByCheck(t, fams, "formsservice_health_check_status")
		durations := gaugesByCheck(t, fams, "formsservice_health_check_duration_seconds")
		for _, c := range pu.checks {
			if status[c] != 1 {
				t.Errorf("formsservice_health_check_status{check=%q} = %v, want 1", c, status[c])
			}
			if d, ok := durations[c]; !ok || d <= 0 || d >= 1 {
				t.Errorf("formsservice_health_check_duration_seconds{check=%q} = %v", c, d)
			}
		}
		if len(status) != len(pu.checks) {
			t.Errorf("status series %v, want one per check %v", status, pu.checks)
		}
		// Every service's request metrics share labels and buckets, so one dashboard covers them all.
		all := []*proc{pu.health}
		all = append(all, pu.services...)
		seen := map[string]bool{}
		for _, p := range all {
			f := scrape(t, p.URL)
			assertRequestMetrics(t, p.name, f)
			for name := range f {
				seen[name] = true
			}
		}
		// The series the alerts and the dashboard select exist in the processes that export them.
		assertMonitoringSeriesExist(t, seen, pu.services)
	})

	t.Run("store slowed: warn past warnAfter", func(t *testing.T) {
		// Asked at least 100ms into the sleep: the store answers within 1.1s, under the timeout, and past
		// warnAfter unless the machine delays the health process's PING by over 800ms. (The thresholds'
		// exact bounds are measured on a fake clock in thresholds_test.go.)
		r := whileSleeping(t, pu.redis, 1200*time.Millisecond, h)
		if r.Code != 200 || r.Body.Status != Warn || r.status(t, "redis:responseTime") != Warn {
			t.Fatalf("got %d %s, want 200 warn with redis:responseTime warn", r.Code, r.Raw)
		}
		waitFor(t, h, 5*time.Second, "pass after the sleep", func(r reply) bool { return r.Code == 200 && r.Body.Status == Pass })
	})

	t.Run("store slowed more: fail past the timeout", func(t *testing.T) {
		// Past the timeout unless the machine delays the PING by over 2.4s.
		r := whileSleeping(t, pu.redis, 4*time.Second, h)
		if r.Code != 503 || r.Body.Status != Fail || r.check(t, "redis:responseTime")["output"] != "no answer within 1.5s" {
			t.Fatalf("got %d %s, want 503 fail, redis:responseTime \"no answer within 1.5s\"", r.Code, r.Raw)
		}
		if r.Took > 1500*time.Millisecond+loadSlack {
			t.Errorf("GET /health took %s with 1.5s timeouts", r.Took)
		}
		waitFor(t, h, 10*time.Second, "pass after the sleep", func(r reply) bool { return r.Code == 200 && r.Body.Status == Pass })
	})

	t.Run("store accepts and never answers: bounded", func(t *testing.T) {
		pu.redis.Pause()
		defer pu.redis.Resume()
		r := getHealth(t, h)
		if r.Code != 503 || r.check(t, "redis:responseTime")["output"] != "no answer within 1.5s" {
			t.Fatalf("got %d %s", r.Code, r.Raw)
		}
		if r.Took > 1500*time.Millisecond+loadSlack {
			t.Errorf("GET /health took %s with a paused store and 1.5s timeouts", r.Took)
		}
		// The services hang on the same store: their checks fail by the timeout too, and are reported.
		want := map[string]Status{}
		for _, c := range pu.checks {
			want[c] = Fail
		}
		pu.assertChecks(t, r, want)
	})

	t.Run("store stopped: 503 fail, the others still reported", func(t *testing.T) {
		pu.redis.Stop()
		r := waitFor(t, h, 5*time.Second, "503 with the store down", func(r reply) bool {
			c := r.checkMap["redis:responseTime"]
			return r.Code == 503 && len(c) == 1 && c[0]["output"] == "connection refused"
		})
		want := map[string]Status{"redis:responseTime": Fail}
		for _, p := range pu.services {
			// forms and auth cannot serve without their store; health tells so: auth's /readyz answers 503,
			// and the forms' /readyz reports its process (D55), so health asks the forms' store itself.
			want[p.name+":readiness"] = Fail
			wantOut := "not ready: /readyz answered 503"
			if p.name == "forms" {
				wantOut = "connection refused"
			}
			if out := r.check(t, p.name+":readiness")["output"]; out != wantOut {
				t.Errorf("%s output %q, want %q", p.name, out, wantOut)
			}
		}
		pu.assertChecks(t, r, want)
		fams := scrape(t, h)
		if v := gaugesByCheck(t, fams, "formsservice_health_check_status")["redis:responseTime"]; v != 0 {
			t.Errorf("formsservice_health_check_status{check=redis:responseTime} = %v, want 0", v)
		}
	})

	t.Run("recovery: pass again", func(t *testing.T) {
		pu.redis.Restart()
		r := waitFor(t, h, 15*time.Second, "pass after the store came back", func(r reply) bool { return r.Code == 200 && r.Body.Status == Pass })
		pu.assertChecks(t, r, nil)
	})
}

// A service address that accepts TCP connections and never answers a byte does not hold /health past
// its bound, and the real dependencies are still reported.
func TestE2E_Health_ServiceThatNeverAnswers_Bounded(t *testing.T) {
	hang := "http://" + silentListener(t)
	// The bound is long enough that the real auth and store answer within it on a loaded CI machine (at
	// 500ms, auth's readiness missed it under -race at a load of 25), and short enough to keep the test quick.
	pu := startPlatform(t, map[string]any{"formsURL": hang, "timeout": "2s", "warnAfter": "1500ms", "cacheFor": "1ms"})
	for range 3 {
		r := getHealth(t, pu.health.URL)
		if r.Code != 503 || r.check(t, "forms:readiness")["output"] != "no answer within 2s" {
			t.Fatalf("got %d %s", r.Code, r.Raw)
		}
		if r.Took > 2*time.Second+loadSlack {
			t.Fatalf("GET /health took %s with a 2s timeout", r.Took)
		}
		pu.assertChecks(t, r, map[string]Status{"forms:readiness": Fail})
	}
}

// assertRequestMetrics: formsservice_http_requests_total and _duration_seconds carry service, route,
// method and code, and the histogram has the platform's shared buckets.
func assertRequestMetrics(t *testing.T, service string, fams map[string]*dto.MetricFamily) {
	t.Helper()
	reqs, ok := fams["formsservice_http_requests_total"]
	if !ok || reqs.GetType() != dto.MetricType_COUNTER {
		t.Fatalf("%s: no formsservice_http_requests_total counter", service)
	}
	hist, ok := fams["formsservice_http_request_duration_seconds"]
	if !ok || hist.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("%s: no formsservice_http_request_duration_seconds histogram", service)
	}
	for _, m := range append(reqs.GetMetric(), hist.GetMetric()...) {
		var names []string
		for _, l := range m.GetLabel() {
			names = append(names, l.GetName())
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"code", "method", "route", "service"}) {
			t.Errorf("%s: request metric labels %v, want code, method, route, service", service, names)
		}
	}
	for _, m := range hist.GetMetric() {
		var bounds []float64
		for _, b := range m.GetHistogram().GetBucket() {
			if !math.IsInf(b.GetUpperBound(), 1) { // the text format spells out +Inf
				bounds = append(bounds, b.GetUpperBound())
			}
		}
		if !slices.Equal(bounds, server.LatencyBuckets) {
			t.Errorf("%s: buckets %v, want the shared %v", service, bounds, server.LatencyBuckets)
		}
	}
}

// eventOnly are families that appear on /metrics only after their first event (a vector without
// pre-created children): they are checked against the source instead (config/monitoring's test).
var eventOnly = map[string]bool{"formsservice_auth_signins_total": true}

// assertMonitoringSeriesExist checks that every family the alerts and the dashboard select is on the
// /metrics of a running process, for the processes this binary offers.
func assertMonitoringSeriesExist(t *testing.T, seen map[string]bool, services []*proc) {
	t.Helper()
	qs, err := monitoring.AllQueries()
	if err != nil {
		t.Fatal(err)
	}
	running := map[string]bool{"platform": true, "health": true}
	for _, p := range services {
		running[p.name] = true
	}
	for _, q := range qs {
		e, err := monitoring.ParseExpr(q.Expr)
		if err != nil {
			t.Fatalf("%s: %v", q.Where, err)
		}
		for _, n := range monitoring.MetricNames(e) {
			fam := monitoring.Family(n)
			owner := ownerOf(fam)
			if !running[owner] || eventOnly[fam] {
				continue
			}
			if !seen[fam] {
				t.Errorf("%s selects %s, which no running process exports", q.Where, fam)
			}
		}
	}
}

// ownerOf names the service whose process exports a family: formsservice_<service>_..., or the
// platform's shared request metrics.
func ownerOf(family string) string {
	rest := strings.TrimPrefix(family, "formsservice_")
	owner, _, _ := strings.Cut(rest, "_")
	if owner == "http" {
		return "platform"
	}
	return owner
}

// The dev server checks the services it runs in-process, each under its name, with its embedded store.
func TestE2E_DevServer_ChecksItsInProcessServices(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "dev.json")
	writeConfig(t, cfg, map[string]any{"health": map[string]any{"cacheFor": "1ms", "warnAfter": "1s", "timeout": "2s"}})
	dev := startProc(t, "dev", cfg)
	r := waitFor(t, dev.URL, 10*time.Second, "dev server healthy", func(r reply) bool { return r.Code == 200 && r.Body.Status == Pass })
	pu := &platformUnderTest{checks: []string{"redis:responseTime", "forms:readiness", "auth:readiness"}}
	pu.assertChecks(t, r, nil)
	if r.Body.Status != Pass || r.Body.Version == "" {
		t.Fatalf("dev /health: %s", r.Raw)
	}
}
