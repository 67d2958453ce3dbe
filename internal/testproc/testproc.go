// Package testproc builds the module's binaries and runs them as real processes for tests: a process's
// output is kept and shown when the test fails, and the process is killed when the test ends. It lives
// at the module root (not under test/) so that the operator's tests in controllers/ and cmd/ can use it
// too.
package testproc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/reporoot"
	"github.com/formsservice/formsservice/internal/testwait"
)

var (
	buildMu  sync.Mutex
	buildDir string
	built    = map[string]string{}
)

// Build compiles a main package of the module (e.g. "./cmd/formsservice") once per test binary and
// returns the executable. A package with a TestMain may call RemoveBuilds when its tests are done.
// Under `go test -short` (make test-fast) it skips the test: a test of the built binary's processes is
// no unit test.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	SkipShort(t, "the built "+pkg+" run as processes")
	buildMu.Lock()
	defer buildMu.Unlock()
	if exe, ok := built[pkg]; ok {
		return exe
	}
	if buildDir == "" {
		dir, err := os.MkdirTemp("", "formsservice-bin-")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = dir
	}
	exe := filepath.Join(buildDir, filepath.Base(pkg))
	// Same build settings as `go test` (no CGO_ENABLED=0): the binary then reuses the packages the test
	// binaries compiled. With CGO_ENABLED=0, 586 of cmd/manager's 1092 packages (everything that imports
	// net) were compiled a second time on a cold cache.
	cmd := exec.Command("go", "build", "-o", exe, pkg)
	cmd.Dir = moduleRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	built[pkg] = exe
	return exe
}

// RemoveBuilds deletes what Build compiled.
func RemoveBuilds() {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	buildDir, built = "", map[string]string{}
}

func moduleRoot() string {
	dir, _ := reporoot.Dir()
	return dir
}

// Process is a running command.
type Process struct {
	cmd       *exec.Cmd
	name      string
	out       *Buffer
	listening chan string // the first address the process logged as "listening"
	done      chan struct{}
	err       error
}

// Start runs exe with args, with the test's environment plus env, until the test ends.
func Start(t testing.TB, env []string, exe string, args ...string) *Process {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), env...)
	return StartCmd(t, cmd)
}

// StartCmd runs a prepared command (its own environment, say) until the test ends. Its stdout and
// stderr are the process's Output.
func StartCmd(t testing.TB, cmd *exec.Cmd) *Process {
	t.Helper()
	name := filepath.Base(cmd.Path)
	if len(cmd.Args) > 1 {
		name += " " + cmd.Args[1]
	}
	// A chatty process keeps its last few MB.
	p := &Process{cmd: cmd, name: name, out: &Buffer{Max: 4 << 20}, listening: make(chan string, 1), done: make(chan struct{})}
	w := &listenWatch{out: p.out, found: p.listening}
	cmd.Stdout, cmd.Stderr = w, w // one writer: exec calls it from one goroutine at a time
	DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("output of %s:\n%s", p.name, tail(p.Output(), 8000))
		}
	})
	return p
}

// WaitListening waits until the process logs the address it listens on, as the services do once their
// listener is open (a JSON log line {"msg":"listening","addr":"127.0.0.1:41234"}), and returns it. Start
// a service with -addr 127.0.0.1:0: the kernel picks a free port and the process reports it, so no port
// is guessed. Fails with the process's output when it exits first or the time runs out.
func (p *Process) WaitListening(t testing.TB, within time.Duration) string {
	t.Helper()
	select {
	case addr := <-p.listening:
		p.listening <- addr // for a later call
		return addr
	case <-p.done:
		t.Fatalf("%s exited (%v) before it reported a listening address\n%s", p.name, p.err, tail(p.Output(), 4000))
	case <-time.After(within):
		t.Fatalf("%s reported no listening address within %s\n%s", p.name, within, tail(p.Output(), 4000))
	}
	return ""
}

// WaitReady polls url (a /readyz) until it answers 200, failing the test with the process's output
// when it does not within the given time or the process exits first.
func (p *Process) WaitReady(t testing.TB, url string, within time.Duration) {
	t.Helper()
	c := &http.Client{Timeout: time.Second}
	err := testwait.Poll(within, func() error {
		if exited, exitErr := p.Exited(); exited {
			t.Fatalf("%s exited (%v) before %s answered 200\n%s", p.name, exitErr, url, tail(p.Output(), 4000))
		}
		res, err := c.Get(url)
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", res.StatusCode)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %s not 200 within %s (%v)\n%s", p.name, url, within, err, tail(p.Output(), 4000))
	}
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop sends SIGTERM, waits up to 10 s, then kills.
func (p *Process) Stop() {
	if !p.signal(syscall.SIGTERM) {
		p.Kill()
	}
}

// Kill stops the process at once (SIGKILL), as a crash or an OOM kill would, and waits for it.
func (p *Process) Kill() { p.signal(syscall.SIGKILL) }

// signal sends sig unless the process has ended, and reports whether it ended within 10 s.
func (p *Process) signal(sig syscall.Signal) bool {
	if exited, _ := p.Exited(); exited {
		return true
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Output is everything the process wrote so far.
func (p *Process) Output() string { return p.out.String() }

// Buffer is a bytes.Buffer that a process (or an in-process server's logger) and the test may use at the
// same time.
type Buffer struct {
	// Max, when not zero, bounds the buffer: past it only the last quarter is kept.
	Max int

	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Max > 0 && s.b.Len() > s.Max {
		rest := s.b.Bytes()[s.b.Len()-s.Max/4:]
		s.b = *bytes.NewBuffer(append([]byte(nil), rest...))
	}
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// WatchListening is for a server run in the test's own process (a command's run function) on port 0:
// the returned writer keeps its log in out and sends the address of its first "listening" line on the
// channel.
func WatchListening(out *Buffer) (io.Writer, <-chan string) {
	found := make(chan string, 1)
	return &listenWatch{out: out, found: found}, found
}

// listenWatch passes a process's output on to out and picks the first "listening" line out of it.
type listenWatch struct {
	out     *Buffer
	found   chan string
	partial []byte
	done    bool
}

func (w *listenWatch) Write(b []byte) (int, error) {
	n, err := w.out.Write(b)
	if w.done {
		return n, err
	}
	w.partial = append(w.partial, b...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := w.partial[:i]
		w.partial = w.partial[i+1:]
		var l struct{ Msg, Addr string }
		if bytes.Contains(line, []byte(`"listening"`)) && json.Unmarshal(line, &l) == nil && l.Msg == "listening" && l.Addr != "" {
			w.found <- l.Addr
			w.done, w.partial = true, nil
			break
		}
	}
	if len(w.partial) > 64<<10 { // a line this long is no log line of ours
		w.partial = nil
	}
	return n, err
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
