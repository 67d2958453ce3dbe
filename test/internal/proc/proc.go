// Package proc builds and runs the project's binaries as real processes for the tests in test/: a
// process's output is kept and shown when the test fails, and the process is stopped (SIGTERM, then
// SIGKILL) when the test ends.
package proc

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/formsservice/formsservice/test/internal/repo"
)

var (
	buildMu sync.Mutex
	built   = map[string]string{}
)

// Build compiles a main package of the module (e.g. "./cmd/manager") once per test binary and returns
// the executable.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if exe, ok := built[pkg]; ok {
		return exe
	}
	dir, err := os.MkdirTemp("", "formsservice-bin-")
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, filepath.Base(pkg))
	repo.Run(t, []string{"CGO_ENABLED=0"}, "go", "build", "-o", exe, pkg)
	built[pkg] = exe
	return exe
}

// Process is a running command.
type Process struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

// Start runs exe with args and extra environment until the test ends.
func Start(t testing.TB, env []string, exe string, args ...string) *Process {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), env...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Process{cmd: cmd, out: out, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("output of %s:\n%s", filepath.Base(exe), p.Output())
		}
	})
	return p
}

// Stop sends SIGTERM, waits up to 10 s, then kills.
func (p *Process) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
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

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Addr is 127.0.0.1:<a free port>.
func Addr(t testing.TB) string { return fmt.Sprintf("127.0.0.1:%d", FreePort(t)) }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
