package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/oauth2"
)

// `loadgen report` (the report block of `make bench`): forms, token and health load on the real
// processes — `formsservice forms`, `auth` and `health` with one redis-server, all on loopback — at
// several concurrencies for a fixed time each. It writes a Markdown report (requests/s, p50/p99/p99.9,
// errors, RSS of every process) and an SVG plot of latency against load.

type reportFlags struct {
	formsservice, redisServer, out string
	duration, warmup               time.Duration
	levels                         []int
}

// reportTarget is one kind of load and what it measured at each concurrency.
type reportTarget struct {
	name   string
	want   int
	spec   func(addr map[string]string, conns int) loadSpec
	server string // the process that serves it
	points []reportPoint
}

type reportPoint struct {
	conns          int
	res            loadResult
	p999           time.Duration
	errors         int
	rssAfterKiB    map[string]int
	cpuSecondsUsed float64
}

func cmdReport(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	var f reportFlags
	levels := "1,4,16,64"
	fs.StringVar(&f.formsservice, "formsservice", "bin/formsservice", "the formsservice binary")
	fs.StringVar(&f.redisServer, "redis-server", "", "redis-server binary (default: bin/redis-server, then PATH)")
	fs.StringVar(&f.out, "out", "artifacts/bench", "directory for report.md and latency.svg")
	fs.DurationVar(&f.duration, "duration", 3*time.Second, "measured time per point")
	fs.DurationVar(&f.warmup, "warmup", time.Second, "unmeasured time before each point")
	fs.StringVar(&levels, "concurrency", levels, "comma-separated connection counts")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, s := range strings.Split(levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 1024 {
			return fmt.Errorf("-concurrency %q: want numbers from 1 to 1024", levels)
		}
		f.levels = append(f.levels, n)
	}
	redisServer, err := findRedisServer(f.redisServer)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "formsservice-report-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	redisAddr, stopRedis, err := startRedis(redisServer, tmp)
	if err != nil {
		return err
	}
	defer stopRedis()
	redisURL := "redis://" + redisAddr + "/0"
	redisPID, err := redisProcessID(redisAddr)
	if err != nil {
		return err
	}

	svcs, err := startReportServices(f.formsservice, redisURL, tmp, stderr)
	for _, s := range svcs {
		defer s.stop()
	}
	if err != nil {
		return err
	}
	addrs := map[string]string{}
	pids := map[string]int{"redis-server": redisPID}
	for _, s := range svcs {
		addrs[s.name], pids["formsservice "+s.name] = s.addr, s.pid
	}

	maxConns := 0
	for _, n := range f.levels {
		maxConns = max(maxConns, n)
	}
	fmt.Fprintf(stderr, "  signing in %d token clients (one refresh chain per connection)\n", maxConns)
	chains, err := refreshChains(addrs["auth"], maxConns)
	if err != nil {
		return fmt.Errorf("token clients: %w", err)
	}
	idle := rssOf(pids)

	targets := []*reportTarget{
		{name: "forms POST /waitlist", want: 201, server: "forms", spec: func(a map[string]string, n int) loadSpec {
			return loadSpec{addr: a["forms"], path: "/waitlist", kind: "waitlist", origin: benchOrigin, conns: n}
		}},
		{name: "forms POST /contact", want: 201, server: "forms", spec: func(a map[string]string, n int) loadSpec {
			return loadSpec{addr: a["forms"], path: "/contact", kind: "contact", origin: benchOrigin, conns: n}
		}},
		{name: "auth POST /oauth2/token (refresh_token)", want: 200, server: "auth", spec: func(a map[string]string, n int) loadSpec {
			return loadSpec{addr: a["auth"], conns: n, build: chains.request, read: chains.answer}
		}},
		{name: "health GET /health", want: 200, server: "health", spec: func(a map[string]string, n int) loadSpec {
			return loadSpec{addr: a["health"], conns: n, build: func(dst []byte, _ int, _ int64) []byte {
				return append(dst, "GET /health HTTP/1.1\r\nHost: bench\r\n\r\n"...)
			}}
		}},
	}
	start := time.Now()
	loadBefore := loadAverage()
	for _, t := range targets {
		for _, n := range f.levels {
			spec := t.spec(addrs, n)
			spec.warmup, spec.duration, spec.want = f.warmup, f.duration, t.want
			cpuBefore := cpuSeconds(pids["formsservice "+t.server])
			res, err := runLoad(spec)
			if err != nil {
				return fmt.Errorf("%s at %d connections: %w", t.name, n, err)
			}
			p := reportPoint{conns: n, res: res, p999: permille(res.latencies, 999), rssAfterKiB: rssOf(pids),
				cpuSecondsUsed: cpuSeconds(pids["formsservice "+t.server]) - cpuBefore}
			for _, c := range res.unexpected {
				p.errors += c
			}
			t.points = append(t.points, p)
			fmt.Fprintf(stderr, "  %-42s %4d conns %9.0f req/s  p50 %8s  p99 %8s  p99.9 %8s  errors %d\n",
				t.name, n, res.perSecond, ms(res.p50), ms(res.p99), ms(p.p999), p.errors)
		}
	}
	md := renderReport(f, targets, idle, pids, loadBefore, time.Since(start))
	mdPath, svgPath := filepath.Join(f.out, "report.md"), filepath.Join(f.out, "latency.svg")
	if err := os.WriteFile(mdPath, []byte(md), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(svgPath, []byte(latencySVG(targets, f.duration)), 0o644); err != nil {
		return err
	}
	fmt.Fprint(stdout, md)
	fmt.Fprintf(stdout, "\nwritten: %s, %s\n", mdPath, svgPath)
	return nil
}

// startReportServices runs forms, auth (with a user and a public client) and health on loopback.
func startReportServices(bin, redisURL, dir string, stderr io.Writer) ([]*service, error) {
	var out []*service
	formsAddr, authAddr, healthAddr := loopbackAddr(), loopbackAddr(), loopbackAddr()
	keyFile := filepath.Join(dir, "signing.pem")
	if err := writeSigningKey(keyFile); err != nil {
		return nil, err
	}
	authCfg := fmt.Sprintf(`publicURL: http://%s
logLevel: warn
redis: {url: %q}
auth:
  signingKeyFile: %s
  # BENCH ONLY: a deliberately cheap argon2id setting; sign-ins happen only to set up the refresh
  # chains, the measured token requests hash no password.
  passwordHash: {memoryKiB: 64, iterations: 1, parallelism: 1}
  throttle: {accountFailures: 1000000, ipFailures: 1000000}
  rateLimit: {perIP: 1000000000, perUser: 1000000000} # load from one address and few users
  clients:
    - clientID: bench
      redirectURIs: [http://%s/cb]
`, authAddr, redisURL, keyFile, authAddr)
	healthCfg := fmt.Sprintf("logLevel: warn\nredis: {url: %q}\nhealth: {formsURL: 'http://%s', authURL: 'http://%s'}\n", redisURL, formsAddr, authAddr)
	users := exec.Command(bin, "users", "create", "-email", benchEmail, "-name", "Bench", "-config", writeFile(dir, "auth.yaml", authCfg))
	users.Stdin = strings.NewReader(benchPassword + "\n")
	if b, err := users.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("formsservice users create: %v\n%s", err, b)
	}
	for _, s := range []struct{ name, addr, cfg string }{{"forms", formsAddr, benchFormsConfig}, {"auth", authAddr, authCfg}, {"health", healthAddr, healthCfg}} {
		svc, err := startService(bin, s.name, s.addr, writeFile(dir, s.name+".yaml", s.cfg), redisURL, dir)
		if err != nil {
			return out, err
		}
		out = append(out, svc)
	}
	fmt.Fprintf(stderr, "  forms %s, auth %s, health %s, redis %s\n", formsAddr, authAddr, healthAddr, redisURL)
	return out, nil
}

const (
	benchEmail    = "bench@example.com"
	benchPassword = "bench password, not a secret"
)

func loopbackAddr() string {
	p, err := freePort()
	if err != nil {
		panic(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
}

func writeFile(dir, name, content string) string {
	p := filepath.Join(dir, name)
	_ = os.WriteFile(p, []byte(content), 0o600)
	return p
}

func writeSigningKey(path string) error {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
}

func redisProcessID(addr string) (int, error) {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	info, err := c.Info(context.Background(), "server").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("redis INFO has no process_id")
}

// tokenChains holds one refresh token per connection; each connection rotates its own.
type tokenChains struct {
	tokens []string
}

func (c *tokenChains) request(dst []byte, conn int, _ int64) []byte {
	body := "grant_type=refresh_token&client_id=bench&refresh_token=" + url.QueryEscape(c.tokens[conn])
	dst = append(dst, "POST /oauth2/token HTTP/1.1\r\nHost: bench\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: "...)
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	dst = append(dst, "\r\n\r\n"...)
	return append(dst, body...)
}

func (c *tokenChains) answer(conn, status int, body []byte) {
	if status != 200 {
		return
	}
	var tk struct {
		RefreshToken string `json:"refresh_token"`
	}
	if json.Unmarshal(body, &tk) == nil && tk.RefreshToken != "" {
		c.tokens[conn] = tk.RefreshToken
	}
}

var (
	formRe  = regexp.MustCompile(`(?s)<form method="post" action="([^"]+)">(.*?)</form>`)
	inputRe = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
)

// refreshChains signs in n times through the hosted page (authorization code with PKCE) and keeps each
// refresh token.
func refreshChains(authAddr string, n int) (*tokenChains, error) {
	base := "http://" + authAddr
	conf := oauth2.Config{ClientID: "bench", RedirectURL: base + "/cb", Scopes: []string{"openid", "offline_access"},
		Endpoint: oauth2.Endpoint{AuthURL: base + "/oauth2/authorize", TokenURL: base + "/oauth2/token", AuthStyle: oauth2.AuthStyleInParams}}
	chains := &tokenChains{}
	for range n {
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		verifier := oauth2.GenerateVerifier()
		res, err := c.Get(conf.AuthCodeURL("state-bench-0123", oauth2.S256ChallengeOption(verifier)))
		if err != nil {
			return nil, err
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		m := formRe.FindSubmatch(page)
		if m == nil {
			return nil, fmt.Errorf("authorize page %d has no form", res.StatusCode)
		}
		form := url.Values{"email": {benchEmail}, "password": {benchPassword}}
		for _, in := range inputRe.FindAllSubmatch(m[2], -1) {
			form.Set(string(in[1]), html.UnescapeString(string(in[2])))
		}
		res, err = c.PostForm(base+html.UnescapeString(string(m[1])), form)
		if err != nil {
			return nil, err
		}
		res.Body.Close()
		loc, err := url.Parse(res.Header.Get("Location"))
		if err != nil || loc.Query().Get("code") == "" {
			return nil, fmt.Errorf("sign-in answered %d, location %q", res.StatusCode, res.Header.Get("Location"))
		}
		ctx := context.WithValue(context.Background(), oauth2.HTTPClient, c)
		tk, err := conf.Exchange(ctx, loc.Query().Get("code"), oauth2.VerifierOption(verifier))
		if err != nil {
			return nil, err
		}
		chains.tokens = append(chains.tokens, tk.RefreshToken)
	}
	return chains, nil
}

// rssOf reads every process's resident set size (KiB) from /proc.
func rssOf(pids map[string]int) map[string]int {
	out := map[string]int{}
	for name, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				out[name], _ = strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			}
		}
	}
	return out
}

// cpuSeconds is the user+system CPU time a process has used, from /proc/<pid>/stat.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // clock ticks; USER_HZ is 100 on Linux
}

func renderReport(f reportFlags, targets []*reportTarget, idle map[string]int, pids map[string]int, loadBefore string, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# formsservice load report\n\n")
	fmt.Fprintf(&b, "%s · %d CPUs shared by the load generator, the services and Redis (all on loopback) · load average before: %s · "+
		"closed loop, %s warm-up + %s measured per point · took %s\n\n", time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(),
		loadBefore, f.warmup, f.duration, took.Round(time.Second))
	b.WriteString("Each connection sends its next request as soon as the previous answer arrived; requests/s is what the server " +
		"sustained, latency is measured by the client. Errors are answers other than the expected status, and transport errors. " +
		"The token load is refresh_token grants, each connection rotating its own refresh token (sign-in used a deliberately cheap " +
		"argon2id setting, BENCH ONLY; no password is hashed during the measurement). CPU/request is the serving process's user+system " +
		"time divided by the requests of the point.\n\n")
	b.WriteString("| target | connections | requests/s | p50 | p99 | p99.9 | errors | CPU/request |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, t := range targets {
		for _, p := range t.points {
			cpu := "–"
			if n := p.res.requests; n > 0 && p.cpuSecondsUsed > 0 {
				cpu = fmt.Sprintf("%.0f µs", p.cpuSecondsUsed/float64(n)*1e6*(f.duration.Seconds()/(f.duration+f.warmup).Seconds()))
			}
			fmt.Fprintf(&b, "| %s | %d | %.0f | %s | %s | %s | %s | %s |\n", t.name, p.conns, p.res.perSecond,
				ms(p.res.p50), ms(p.res.p99), ms(p.p999), errorText(p, t.want), cpu)
		}
	}
	b.WriteString("\n## Memory (RSS)\n\n")
	names := []string{"formsservice forms", "formsservice auth", "formsservice health", "redis-server"}
	b.WriteString("| process | idle |")
	for _, t := range targets {
		b.WriteString(" after " + t.name + " |")
	}
	b.WriteString(" peak |\n|---|---:|")
	for range targets {
		b.WriteString("---:|")
	}
	b.WriteString("---:|\n")
	for _, name := range names {
		if _, ok := pids[name]; !ok {
			continue
		}
		peak := idle[name]
		fmt.Fprintf(&b, "| %s | %s |", name, mib(idle[name]))
		for _, t := range targets {
			last := t.points[len(t.points)-1].rssAfterKiB[name]
			for _, p := range t.points {
				peak = max(peak, p.rssAfterKiB[name])
			}
			fmt.Fprintf(&b, " %s |", mib(last))
		}
		fmt.Fprintf(&b, " %s |\n", mib(peak))
	}
	b.WriteString("\n![latency against load](latency.svg)\n")
	return b.String()
}

func errorText(p reportPoint, want int) string {
	if p.errors == 0 {
		return "0"
	}
	var parts []string
	for code, n := range p.res.unexpected {
		label := strconv.Itoa(code)
		if code == -1 {
			label = "transport"
		}
		parts = append(parts, fmt.Sprintf("%d × %s", n, label))
	}
	return fmt.Sprintf("%d (%s; want %d)", p.errors, strings.Join(parts, ", "), want)
}

func mib(kib int) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }
