// Package testredis starts real redis-server processes on loopback for tests: a single server that can
// be stopped, restarted, paused and killed, and a Redis Cluster. `make test` installs redis-server.
package testredis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Binary finds redis-server: $REDIS_SERVER, the repository's bin/, or PATH.
func Binary(tb testing.TB) string {
	return find(tb, "REDIS_SERVER", "redis-server")
}

func find(tb testing.TB, env, name string) string {
	tb.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if root := repoRoot(); root != "" {
		if p := filepath.Join(root, "bin", name); isExec(p) {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	tb.Fatalf("%s not found: run `make test` (it installs redis-server into bin/) or set %s", name, env)
	return ""
}

func repoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Options tune a server.
type Options struct {
	// AppendOnly turns on the append-only file with appendfsync always (durability tests).
	AppendOnly bool
	// Args are extra redis-server arguments.
	Args []string
}

// Server is one redis-server process on a loopback port, stopped when the test ends.
type Server struct {
	tb   testing.TB
	bin  string
	port int
	dir  string
	opts Options
	cmd  *exec.Cmd
	done chan struct{}
}

// Start runs a redis-server on a free loopback port and waits until it answers PING.
func Start(tb testing.TB, opts ...Options) *Server {
	tb.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	s := &Server{tb: tb, bin: Binary(tb), dir: tb.TempDir(), opts: o}
	for attempt := 0; ; attempt++ {
		s.port = FreePort(tb)
		err := s.start()
		if err == nil {
			break
		}
		if attempt == 4 {
			tb.Fatalf("redis-server did not start: %v", err)
		}
	}
	tb.Cleanup(func() { s.Kill() })
	return s
}

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is redis://host:port/0.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Client returns a go-redis client for assertions, closed when the test ends.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	s.tb.Cleanup(func() { c.Close() })
	return c
}

func (s *Server) args() []string {
	a := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir, "--save", "",
		"--logfile", filepath.Join(s.dir, "redis.log")}
	if s.opts.AppendOnly {
		a = append(a, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		a = append(a, "--appendonly", "no")
	}
	return append(a, s.opts.Args...)
}

func (s *Server) start() error {
	cmd := exec.Command(s.bin, s.args()...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(s.done)
	if err := waitPing(s.Addr(), 5*time.Second, s.done); err != nil {
		s.Kill()
		log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
		return fmt.Errorf("%w; log: %s", err, tail(string(log), 600))
	}
	return nil
}

// Restart starts the server again on the same port (and the same data directory).
func (s *Server) Restart() {
	s.tb.Helper()
	s.Kill()
	if err := s.start(); err != nil {
		s.tb.Fatalf("restart redis-server: %v", err)
	}
}

// Stop shuts the server down gracefully (SIGTERM) and waits for it to exit.
func (s *Server) Stop() { s.signal(syscall.SIGTERM) }

// Kill stops the server at once (SIGKILL), as a crash would.
func (s *Server) Kill() { s.signal(syscall.SIGKILL) }

func (s *Server) signal(sig syscall.Signal) {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a paused server cannot act on SIGTERM
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// Pause freezes the process (SIGSTOP): connections are accepted by the kernel but nothing answers.
func (s *Server) Pause() { _ = s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused server.
func (s *Server) Resume() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }

// FreePort returns a loopback TCP port that was free a moment ago, and whose port+10000 (a cluster bus)
// is free too. Both lie below the kernel's ephemeral range when it leaves room: the thousands of
// outgoing connections that parallel load tests open take their source ports from that range, and one
// of them could otherwise take the port between this check and the server's bind.
func FreePort(tb testing.TB) int {
	tb.Helper()
	if lo, hi := 10000, ephemeralLow()-10000; hi-lo >= 1000 {
		for range 1000 {
			port := lo + rand.IntN(hi-lo)
			if portFree(port) && portFree(port+10000) {
				return port
			}
		}
	}
	for range 100 { // no room below the ephemeral range: ask the kernel
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatalf("free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port < 55535 && portFree(port+10000) {
			return port
		}
	}
	tb.Fatal("no free port")
	return 0
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's default when unknown).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				return n
			}
		}
	}
	return 32768
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func waitPing(addr string, within time.Duration, exited <-chan struct{}) error {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("redis-server exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PING answer from %s within %s: %v", addr, within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
