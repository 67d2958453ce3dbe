// Command loadgen is the load generator of `make bench`: it runs the forms service and two baselines on
// loopback against a real redis-server, drives each with keep-alive HTTP/1.1 connections for a bounded
// time, and prints requests per second and p50/p99 latency side by side.
//
//	loadgen bench [-duration 10s] [-slices 8] [-conns 32]    the whole comparison (hack/bench.sh)
//	loadgen baseline -mode bare|setnx -addr A [-redis URL]  one baseline server (bench starts these)
//	loadgen run -addr A -path /waitlist [-rate N]             load one running server
//	loadgen report [-duration 3s] [-concurrency 1,4,16,64]   forms, token and health at each concurrency:
//	                                                          artifacts/bench/report.md and latency.svg
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: loadgen bench|report|baseline|run [flags]")
	}
	switch args[0] {
	case "baseline":
		fs := flag.NewFlagSet("baseline", flag.ContinueOnError)
		mode := fs.String("mode", "bare", "bare or setnx")
		addr := fs.String("addr", "127.0.0.1:0", "listen address")
		redisURL := fs.String("redis", "", "redis URL (setnx)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return runBaseline(*mode, *addr, *redisURL)
	case "bench":
		return bench(args[1:], stdout, stderr)
	case "report": // forms, token and health load at several concurrencies: report.md and latency.svg
		return cmdReport(args[1:], stdout, stderr)
	case "run":
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		spec := loadSpec{want: 201}
		fs.StringVar(&spec.addr, "addr", "", "host:port on loopback")
		fs.StringVar(&spec.path, "path", "/waitlist", "path to POST to")
		fs.StringVar(&spec.kind, "kind", "waitlist", "body: waitlist, contact or declared (the bench's form demo8)")
		fs.StringVar(&spec.origin, "origin", benchOrigin, "Origin header")
		fs.IntVar(&spec.conns, "conns", 32, "connections")
		fs.DurationVar(&spec.warmup, "warmup", time.Second, "unmeasured time first")
		fs.DurationVar(&spec.duration, "duration", 5*time.Second, "measured time")
		fs.Float64Var(&spec.rate, "rate", 0, "requests per second (0: as fast as possible)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		requestSeq.Store(time.Now().UnixNano() / 1000) // a new address range for each run
		res, err := runLoad(spec)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s %s: %.0f req/s, p50 %s, p99 %s, unexpected %v\n", spec.addr, spec.path, res.perSecond, ms(res.p50), ms(res.p99), res.unexpected)
		return nil
	}
	return fmt.Errorf("unknown command %q", args[0])
}

type benchFlags struct {
	formsservice, redisServer string
	duration, warmup          time.Duration
	conns, slices             int
	levels                    bool
}

const benchOrigin = "http://bench.localhost"

// benchFormsConfig is the forms service's configuration under load. Rate limiting stays on (its counter
// runs in every request's script) with a limit the run never reaches.
// A declared form with eight fields (docs/forms.md "Your own forms") runs beside the built-in forms:
// every field type that checks something, and a unique address.
const benchFormsConfig = "logLevel: warn\nallowedOrigins: [\"" + benchOrigin + "\"]\nforms:\n  rateLimitPerMinute: 1000000000\n" +
	"  declared:\n    - id: demo8\n      unique: email\n      fields:\n" +
	"        - {name: company, type: text, required: true}\n" +
	"        - {name: email, type: email, required: true}\n" +
	"        - {name: role, type: oneof, choices: [engineer, manager, other]}\n" +
	"        - {name: budget, type: number, min: \"0\"}\n" +
	"        - {name: start, type: date}\n" +
	"        - {name: interests, type: manyof, choices: [forms, sign-in, health]}\n" +
	"        - {name: notes, type: longtext}\n" +
	"        - {name: consent, type: consent}\n"

// findRedisServer is the redis-server binary: the flag's value, else bin/redis-server, else PATH.
func findRedisServer(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if _, err := os.Stat("bin/redis-server"); err == nil {
		return "bin/redis-server", nil
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	return "", errors.New("redis-server not found: run `make deps-redis`")
}

// bench measures every target in short slices taken in turn (A B C D A B C D ...) rather than one long
// run each, so that other work on a shared machine, which comes and goes over seconds, weighs on every
// target alike. All servers run for the whole bench and idle while another is measured.
func bench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var f benchFlags
	fs.StringVar(&f.formsservice, "formsservice", "bin/formsservice", "the formsservice binary")
	fs.StringVar(&f.redisServer, "redis-server", "", "redis-server binary (default: bin/redis-server, then PATH)")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "measured time per target and phase (peak, half peak)")
	fs.IntVar(&f.slices, "slices", 8, "the measured time is split into this many slices, interleaved across targets")
	fs.DurationVar(&f.warmup, "warmup", 250*time.Millisecond, "unmeasured time at the start of each slice")
	fs.IntVar(&f.conns, "conns", 32, "concurrent connections")
	fs.BoolVar(&f.levels, "levels", true, "also measure POST /contact at durability machine (appendfsync always) and primary (WAIT 1, one replica)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if f.slices < 1 {
		f.slices = 1
	}
	redisServer, err := findRedisServer(f.redisServer)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "formsservice-bench-")
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

	self, err := os.Executable()
	if err != nil {
		return err
	}
	bareAddr, _, stopBare, err := startBaseline(self, "bare", redisURL)
	if err != nil {
		return err
	}
	defer stopBare()
	setnxAddr, setnxPID, stopSetnx, err := startBaseline(self, "setnx", redisURL)
	if err != nil {
		return err
	}
	defer stopSetnx()
	forms, err := startService(f.formsservice, "forms", loopbackAddr(), writeFile(tmp, "forms.yaml", benchFormsConfig), redisURL, tmp)
	if err != nil {
		return err
	}
	defer forms.stop()

	targets := []*target{
		{name: "baseline: Fiber, JSON decode, 201", addr: bareAddr, path: "/waitlist", kind: "waitlist"},
		{name: "baseline: same + one Redis SETNX", addr: setnxAddr, path: "/waitlist", kind: "waitlist"},
		{name: "formsservice forms POST /waitlist", addr: forms.addr, path: "/waitlist", kind: "waitlist", forms: true},
		{name: "formsservice forms POST /contact", addr: forms.addr, path: "/contact", kind: "contact", forms: true},
		{name: "formsservice forms POST /f/demo8", addr: forms.addr, path: "/f/demo8", kind: "declared", forms: true},
	}
	if f.levels {
		more, stop, err := durabilityTargets(f.formsservice, redisServer, tmp)
		if err != nil {
			return err
		}
		defer stop()
		targets = append(targets, more...)
	}
	slice := f.duration / time.Duration(f.slices)
	fmt.Fprintf(stdout, "load: %d connections; per target and phase %s measured in %d interleaved slices (+%s warm-up each); redis-server %s on loopback\n",
		f.conns, f.duration, f.slices, f.warmup, redisAddr)
	fmt.Fprintf(stdout, "machine: %d CPUs shared by load generator, servers and Redis; load average before: %s\n", runtime.NumCPU(), loadAverage())

	phase := func(name string, rate func(*target) float64, into func(*target) *loadResult) error {
		var parts = make([][]loadResult, len(targets))
		for i := range f.slices {
			for k, t := range targets {
				spec := loadSpec{addr: t.addr, path: t.path, kind: t.kind, origin: benchOrigin, conns: f.conns,
					warmup: f.warmup, duration: slice, rate: rate(t), want: 201}
				r, err := runLoad(spec)
				if err != nil {
					return fmt.Errorf("%s: %w", t.name, err)
				}
				parts[k] = append(parts[k], r)
			}
			fmt.Fprintf(stderr, "  %s: slice %d/%d done\n", name, i+1, f.slices)
		}
		for k, t := range targets {
			*into(t) = merge(parts[k], slice)
		}
		return nil
	}
	if err := phase("peak", func(*target) float64 { return 0 }, func(t *target) *loadResult { return &t.peak }); err != nil {
		return err
	}
	if err := phase("half peak", func(t *target) float64 { return t.peak.perSecond / 2 }, func(t *target) *loadResult { return &t.half }); err != nil {
		return err
	}
	report(stdout, targets)
	reportMemory(stdout, peakRSSKiB(forms.pid), peakRSSKiB(setnxPID))
	fmt.Fprintf(stdout, "load average after: %s (other work on the machine shows up as noise, in the half-peak p99 most)\n", loadAverage())
	return nil
}

type target struct {
	name, addr, path, kind string
	forms                  bool
	peak, half             loadResult
}

func report(w io.Writer, ts []*target) {
	fmt.Fprintf(w, "\n%-36s %10s %9s %9s   %-28s %s\n", "target", "peak req/s", "p50", "p99", "at half peak (rate, p50, p99)", "vs SETNX")
	setnx := ts[1].peak.perSecond
	for _, t := range ts {
		vs := ""
		if t.forms && setnx > 0 {
			vs = fmt.Sprintf("%.0f%%", 100*t.peak.perSecond/setnx)
		}
		fmt.Fprintf(w, "%-36s %10.0f %9s %9s   %7.0f/s %8s %9s   %s\n", t.name, t.peak.perSecond, ms(t.peak.p50), ms(t.peak.p99),
			t.half.perSecond, ms(t.half.p50), ms(t.half.p99), vs)
		for code, n := range t.peak.unexpected {
			fmt.Fprintf(w, "    %d answers with status %d (want 201)\n", n, code)
		}
	}
	fmt.Fprintln(w)
	for _, t := range ts {
		if !t.forms {
			continue
		}
		okRate := t.peak.perSecond >= 0.9*setnx
		okP99 := t.half.p99 < 10*time.Millisecond
		fmt.Fprintf(w, "%s: >= 90%% of the one-round-trip baseline: %s; p99 at half peak < 10 ms: %s\n",
			t.name, yes(okRate), yes(okP99))
	}
}

// reportMemory compares the peak resident set (VmHWM) of the forms process, after the whole bench
// (/waitlist and /contact at peak and half peak), with the one-SETNX baseline's under the same load: the
// forms service promises to stay within 2× of it (docs/forms.md, "Performance").
func reportMemory(w io.Writer, formsKiB, setnxKiB int) {
	if formsKiB == 0 || setnxKiB == 0 {
		fmt.Fprintln(w, "peak RSS: not readable from /proc on this machine")
		return
	}
	ratio := float64(formsKiB) / float64(setnxKiB)
	fmt.Fprintf(w, "peak RSS (VmHWM): formsservice forms %.1f MiB, baseline SETNX %.1f MiB: %.2f×; within 2× of the baseline: %s\n",
		float64(formsKiB)/1024, float64(setnxKiB)/1024, ratio, yes(ratio <= 2))
}

// peakRSSKiB reads a process's peak resident set size (VmHWM, KiB) from /proc; 0 if unreadable.
func peakRSSKiB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }

// durabilityTargets starts a forms service at each durability level beyond process, each on its own
// Redis at that level's production settings: machine on appendonly yes + appendfsync always (the managed
// Redis), primary on a Redis with one replica. The process level is the default forms target's.
func durabilityTargets(formsBin, redisBin, tmp string) ([]*target, func(), error) {
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	fail := func(err error) ([]*target, func(), error) { stop(); return nil, nil, err }
	dir := func(name string) string {
		d := filepath.Join(tmp, name)
		_ = os.MkdirAll(d, 0o700)
		return d
	}
	machineAddr, s, err := startRedis(redisBin, dir("machine-redis"), "--appendonly", "yes", "--appendfsync", "always")
	if err != nil {
		return fail(err)
	}
	stops = append(stops, s)
	primaryAddr, s, err := startRedis(redisBin, dir("primary-redis"), "--repl-diskless-sync-delay", "0")
	if err != nil {
		return fail(err)
	}
	stops = append(stops, s)
	host, port, _ := net.SplitHostPort(primaryAddr)
	_, s, err = startRedis(redisBin, dir("replica-redis"), "--replicaof", host, port)
	if err != nil {
		return fail(err)
	}
	stops = append(stops, s)
	if err := waitReplica(primaryAddr, 20*time.Second); err != nil {
		return fail(err)
	}
	var out []*target
	for _, l := range []struct{ level, addr string }{{"machine", machineAddr}, {"primary", primaryAddr}} {
		d := dir("forms-" + l.level)
		svc, err := startService(formsBin, "forms", loopbackAddr(), writeFile(d, "forms.yaml", benchFormsConfig+"  durability: "+l.level+"\n"),
			"redis://"+l.addr+"/0", d)
		if err != nil {
			return fail(err)
		}
		stops = append(stops, svc.stop)
		out = append(out, &target{name: "forms POST /contact at " + l.level, addr: svc.addr, path: "/contact", kind: "contact", forms: true})
	}
	return out, stop, nil
}

// waitReplica waits until a write on the primary at addr is acknowledged by a replica (WAIT 1).
func waitReplica(addr string, within time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	ctx := context.Background()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		c.Set(ctx, "bench:probe", "1", 0)
		if n, err := c.Do(ctx, "wait", 1, 100).Int(); err == nil && n == 1 {
			return nil
		}
	}
	return errors.New("the bench replica did not acknowledge a write")
}

// startRedis runs a redis-server on a free loopback port with what the forms' default durability
// (process) needs, the append-only file (with Redis's own default policy when it is on, appendfsync
// everysec), and no RDB snapshots; extra arguments override. The baselines share it, so every target
// pays the same for persistence.
func startRedis(bin, dir string, extra ...string) (string, func(), error) {
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log")}, extra...)
	cmd := exec.Command(bin, args...)
	stop, err := startProcess(cmd)
	if err != nil {
		return "", nil, err
	}
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			stop()
			return "", nil, errors.New("redis-server did not answer PING")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return addr, stop, nil
}

// startBaseline runs `loadgen baseline` and reads the address it listens on; pid is its process's.
func startBaseline(self, mode, redisURL string) (addr string, pid int, stop func(), err error) {
	cmd := exec.Command(self, "baseline", "-mode", mode, "-addr", "127.0.0.1:0", "-redis", redisURL)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", 0, nil, err
	}
	cmd.Stderr = os.Stderr
	stop, err = startProcess(cmd)
	if err != nil {
		return "", 0, nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return "", 0, nil, fmt.Errorf("baseline did not report its address: %w", err)
	}
	addr = strings.TrimSpace(line)
	if err := waitHTTP("http://"+addr+"/livez", 10*time.Second); err != nil {
		stop()
		return "", 0, nil, err
	}
	return addr, cmd.Process.Pid, stop, nil
}

// service is a started process and where it listens.
type service struct {
	name string
	addr string
	pid  int
	stop func()
}

// startService runs `formsservice <name>` the way a Deployment does, its log in dir, and waits for /readyz.
func startService(bin, name, addr, cfgPath, redisURL, dir string) (*service, error) {
	cmd := exec.Command(bin, name, "-addr", addr, "-config", cfgPath)
	cmd.Env = append(os.Environ(), "REDIS_URL="+redisURL)
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	stop, err := startProcess(cmd)
	if err != nil {
		logf.Close()
		return nil, err
	}
	svc := &service{name: name, addr: addr, pid: cmd.Process.Pid, stop: func() { stop(); logf.Close() }}
	if err := waitHTTP("http://"+addr+"/readyz", 20*time.Second); err != nil {
		svc.stop()
		log, _ := os.ReadFile(logf.Name())
		return nil, fmt.Errorf("formsservice %s: %w\n%s", name, err, log)
	}
	return svc, nil
}

// startProcess starts cmd and returns a function that stops exactly that process (SIGTERM, then SIGKILL).
func startProcess(cmd *exec.Cmd) (func(), error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	return func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}, nil
}

func waitHTTP(url string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready within %s (%v)", url, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
