package reliability

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/reporoot"
	"github.com/formsservice/formsservice/internal/testproc"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testproc.RemoveBuilds()
	os.Exit(code)
}

// formsservice is the binary under test, built once for the whole suite.
func formsservice(t testing.TB) string {
	t.Helper()
	return testproc.Build(t, "./cmd/formsservice")
}

func repoRoot() string {
	dir, _ := reporoot.Dir() // "" (the working directory) if none: the paths below then fail clearly
	return dir
}

// proc is one formsservice process on a loopback port.
type proc struct {
	*testproc.Process
	name string
	Base string // http://127.0.0.1:port
	Addr string
}

// startProc runs `formsservice <service> -config <file> -addr 127.0.0.1:0` with the given configuration
// (YAML) and extra environment, reads the address the kernel gave it from its "listening" log line, and
// waits until /readyz answers 200. It is killed when the test ends.
func startProc(t testing.TB, service, configYAML string, extraArgs []string, env ...string) *proc {
	t.Helper()
	p := startListening(t, service, configYAML, extraArgs, env...)
	p.WaitReady(t, p.Base+"/readyz", 20*time.Second)
	return p
}

// startListening is startProc without waiting for readiness: for a process that is not meant to be
// ready.
func startListening(t testing.TB, service, configYAML string, extraArgs []string, env ...string) *proc {
	t.Helper()
	cfg := writeTemp(t, service+".yaml", configYAML)
	args := append([]string{service, "-config", cfg, "-addr", "127.0.0.1:0"}, extraArgs...)
	cmd := exec.Command(formsservice(t), args...)
	// GOMAXPROCS=2: the machine the numbers are about; REDIS_URL must not leak in from the environment.
	// The "listening" line that reports the address is logged at info, whatever level the file asks for.
	cmd.Env = append(filteredEnv("REDIS_URL", "FORMSSERVICE_CONFIG", "CONFIG", "ADDR"), "GOMAXPROCS=2", "FORMSSERVICE_LOG_LEVEL=info")
	cmd.Env = append(cmd.Env, env...)
	p := &proc{Process: testproc.StartCmd(t, cmd), name: service}
	p.Addr = p.WaitListening(t, 20*time.Second)
	p.Base = "http://" + p.Addr
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
