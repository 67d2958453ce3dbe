package reliability

import (
	"bytes"
	"context"
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
	"sync"
	"syscall"
	"testing"
	"time"
)

// binary is bin/formsservice built once for the whole suite by TestMain.
var binary string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "formsservice-reliability-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "formsservice")
	cmd := exec.Command("go", "build", "-o", binary, "./cmd/formsservice")
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/formsservice: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// proc is one formsservice process on a loopback port.
type proc struct {
	t    testing.TB
	name string
	Base string // http://127.0.0.1:port
	Addr string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

// startProc runs `formsservice <service> -config <file> -addr 127.0.0.1:<free port>` with the given
// configuration (YAML) and extra environment, and waits until /readyz answers 200. It is killed when the
// test ends.
func startProc(t testing.TB, service, configYAML string, extraArgs []string, env ...string) *proc {
	t.Helper()
	addr := freeAddr(t)
	return startProcAt(t, service, addr, configYAML, extraArgs, env...)
}

func startProcAt(t testing.TB, service, addr, configYAML string, extraArgs []string, env ...string) *proc {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), service+".yaml")
	if err := os.WriteFile(cfg, []byte(configYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{service, "-config", cfg, "-addr", addr}, extraArgs...)
	cmd := exec.Command(binary, args...)
	// GOMAXPROCS=2: the machine the numbers are about; REDIS_URL must not leak in from the environment.
	cmd.Env = append(filteredEnv("REDIS_URL", "FORMSSERVICE_CONFIG", "CONFIG", "ADDR"), "GOMAXPROCS=2")
	cmd.Env = append(cmd.Env, env...)
	p := &proc{t: t, name: service, Base: "http://" + addr, Addr: addr, cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("output of formsservice %s (%s):\n%s", service, addr, tail(p.out.String(), 4000))
		}
	})
	if err := waitReady(p.Base, 20*time.Second, p.done); err != nil {
		t.Fatalf("formsservice %s: %v\n%s", service, err, tail(p.out.String(), 4000))
	}
	return p
}

func filteredEnv(drop ...string) []string {
	var out []string
next:
	for _, kv := range os.Environ() {
		for _, d := range drop {
			if strings.HasPrefix(kv, d+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// Pid is the process id.
func (p *proc) Pid() int { return p.cmd.Process.Pid }

// Kill stops the process at once (SIGKILL), as a crash or an OOM kill would.
func (p *proc) Kill() { p.signal(syscall.SIGKILL, 10*time.Second) }

// Term sends SIGTERM and waits up to within for the process to exit; it reports whether it did.
func (p *proc) Term(within time.Duration) bool {
	p.signal(syscall.SIGTERM, within)
	return p.Exited()
}

func (p *proc) signal(sig syscall.Signal, within time.Duration) {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(within):
	}
}

// Exited reports whether the process has ended.
func (p *proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Output is what the process has written so far.
func (p *proc) Output() string { return p.out.String() }

func waitReady(base string, within time.Duration, exited <-chan struct{}) error {
	c := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(within)
	for {
		res, err := c.Get(base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before it was ready")
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("/readyz not 200 within %s (%v)", within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() > 4<<20 { // keep the last few MB of a chatty process
		rest := s.b.Bytes()[s.b.Len()-(1<<20):]
		s.b = *bytes.NewBuffer(append([]byte(nil), rest...))
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// rssKiB reads a process's resident set size from /proc.
func rssKiB(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

// metric reads one unlabelled sample (go_goroutines, process_open_fds) from a process's /metrics.
func metric(t testing.TB, base, name string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("metrics of %s: %v", base, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return f
			}
		}
	}
	t.Fatalf("%s has no sample %s (status %d):\n%s", base, name, res.StatusCode, tail(string(body), 1500))
	return 0
}

func writeTemp(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
