// Package testredis starts real redis-server processes on loopback for tests: a single server that can
// be stopped, restarted, paused and killed, a Redis Cluster, and a replicated Redis watched by real
// redis-sentinel processes. `make test` installs redis-server.
package testredis

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/reporoot"
	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/internal/testwait"
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
	dir, _ := reporoot.Dir()
	return dir
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Options tune a server.
type Options struct {
	// AppendOnly turns on the append-only file with appendfsync always (durability tests).
	AppendOnly bool
	// AppendFsync, when set, turns on the append-only file with this fsync policy ("always", "everysec"
	// or "no"). "no" is what the forms' default durability (process) needs at the least cost: Redis
	// writes each change to the file before it answers, so it survives a kill of the process. Without
	// it and AppendOnly the server is stock: appendonly no.
	AppendFsync string
	// Password, when set, is required of clients (requirepass) and used by a replica towards its
	// master (masterauth); Client and the start-up PING use it.
	Password string
	// Unix serves on a Unix socket in the test's directory and on no TCP port at all: Addr is the
	// socket's path (go-redis dials a path starting with "/" over the unix network) and URL a unix://
	// URL. No port can be taken by anyone else, not even across a Restart. Prefer it wherever nothing
	// needs TCP; a Cluster, a Sentinel's master and the operator's rendered host:port addresses do.
	Unix bool
	// TLS, when set, serves TLS too, on a second loopback port chosen (and retried when taken) like the
	// first: TLSAddr. The server does not ask clients for certificates.
	TLS *TLS
	// Args are extra redis-server arguments.
	Args []string
}

// TLS is the server's certificate and key, and the CA bundle it trusts, as PEM files.
type TLS struct {
	CertFile, KeyFile, CAFile string
	// Only serves TLS alone, with no plain TCP port: Addr is then the TLS address, and Client and the
	// start-up PING speak TLS, trusting CAFile.
	Only bool
}

// Server is one redis-server process, on a loopback TCP port or a Unix socket, stopped when the test
// ends.
type Server struct {
	tb       testing.TB
	bin      string
	port     int    // TCP; 0 with Options.Unix
	tlsPort  int    // with Options.TLS
	sock     string // with Options.Unix
	dir      string
	opts     Options
	conf     string   // a configuration file, first argument (Sentinel mode)
	sentinel string   // its content, written afresh before each start (Sentinel rewrites it)
	ready    []string // log lines that say the server accepts connections
	cmd      *exec.Cmd
	done     chan struct{}
	log      *logWatch
}

// Start runs a redis-server and returns once the server itself has said it accepts connections, and a
// PING on its address has been answered.
//
// redis-server cannot listen on TCP port 0 and report the port it got, so a TCP server takes a port
// that was free a moment ago (FreePort) and, when another process bound it in between, redis-server's
// own "Address already in use" ends the attempt and the next one takes another port. Start never pings
// a port before the process has reported it bound, so it cannot mistake another test's server for its
// own.
func Start(tb testing.TB, opts ...Options) *Server {
	tb.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	s := &Server{tb: tb, bin: Binary(tb), dir: tb.TempDir(), opts: o}
	if o.Unix {
		s.sock = filepath.Join(s.dir, "redis.sock")
		if len(s.sock) > 100 { // a socket path has room for 107 bytes; a long test name takes them
			dir, err := os.MkdirTemp("", "redis")
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { os.RemoveAll(dir) })
			s.sock = filepath.Join(dir, "redis.sock")
		}
	}
	s.ready = []string{"Ready to accept connections", "ready to accept connections at"}
	s.startRetrying()
	return s
}

// StartSentinel runs redis-server in Sentinel mode on a loopback TCP port, monitoring master (a
// TCP server) as masterName with quorum 1, and returns once it has said so.
func StartSentinel(tb testing.TB, masterName string, master *Server) *Server {
	tb.Helper()
	if master.port == 0 {
		tb.Fatal("testredis: a Sentinel monitors a master on TCP; start the master without Options.Unix")
	}
	s := &Server{tb: tb, bin: Binary(tb), dir: tb.TempDir()}
	s.conf = filepath.Join(s.dir, "sentinel.conf")
	s.sentinel = "sentinel monitor " + masterName + " 127.0.0.1 " + strconv.Itoa(master.port) + " 1\n" +
		// A Sentinel test asks what Sentinel hands out; it must not start failovers on its own.
		"sentinel down-after-milliseconds " + masterName + " 60000\n"
	s.ready = []string{"+monitor master " + masterName}
	s.startRetrying()
	return s
}

// startRetrying starts the server, on another TCP port each time redis-server reports its port (or its
// cluster bus port, port+10000) taken.
func (s *Server) startRetrying() {
	s.tb.Helper()
	s.tb.Cleanup(func() { s.Kill() })
	for attempt := 1; ; attempt++ {
		if s.sock == "" && !s.tlsOnly() {
			s.port = pickPort(s.tb)
		}
		if s.opts.TLS != nil {
			s.tlsPort = pickPort(s.tb)
		}
		err := s.start()
		if err == nil {
			return
		}
		if !errors.Is(err, errPortTaken) || attempt == 20 {
			s.tb.Fatalf("redis-server did not start (attempt %d): %v", attempt, err)
		}
	}
}

// pickPort is FreePort; a test of the retry replaces it.
var pickPort = FreePort

// errPortTaken is redis-server's exit because its port was bound by another process.
var errPortTaken = errors.New("port taken")

// Addr is host:port on TCP, or the socket's path with Options.Unix, or the TLS address with TLS.Only.
func (s *Server) Addr() string {
	if s.sock != "" {
		return s.sock
	}
	if s.tlsOnly() {
		return s.TLSAddr()
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// URL is redis://host:port/0, or unix:///path?db=0 with Options.Unix, or rediss://host:port/0 with
// TLS.Only.
func (s *Server) URL() string {
	if s.sock != "" {
		return "unix://" + s.sock + "?db=0"
	}
	if s.tlsOnly() {
		return "rediss://" + s.Addr() + "/0"
	}
	return "redis://" + s.Addr() + "/0"
}

// URLWithPassword is URL with a password in it.
func (s *Server) URLWithPassword(password string) string {
	u := s.URL()
	scheme, rest, _ := strings.Cut(u, "://")
	return scheme + "://:" + url.QueryEscape(password) + "@" + rest
}

// Client returns a go-redis client for assertions, closed when the test ends.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: s.opts.Password, TLSConfig: s.clientTLS()})
	s.tb.Cleanup(func() { c.Close() })
	return c
}

func (s *Server) args() []string {
	var a []string
	if s.conf != "" {
		a = append(a, s.conf, "--sentinel")
	}
	if s.sock != "" {
		a = append(a, "--port", "0", "--unixsocket", s.sock, "--unixsocketperm", "700")
	} else if s.tlsOnly() {
		a = append(a, "--port", "0", "--bind", "127.0.0.1")
	} else {
		a = append(a, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1")
	}
	// The log goes to stdout, where start reads it: readiness and the reason of a failed start come
	// from the server itself.
	a = append(a, "--dir", s.dir, "--logfile", "")
	if s.conf == "" {
		a = append(a, "--save", "")
		switch {
		case s.opts.AppendOnly:
			a = append(a, "--appendonly", "yes", "--appendfsync", "always")
		case s.opts.AppendFsync != "":
			a = append(a, "--appendonly", "yes", "--appendfsync", s.opts.AppendFsync)
		default:
			a = append(a, "--appendonly", "no")
		}
	}
	if p := s.opts.Password; p != "" {
		a = append(a, "--requirepass", p, "--masterauth", p)
	}
	if t := s.opts.TLS; t != nil {
		a = append(a, "--tls-port", strconv.Itoa(s.tlsPort), "--tls-cert-file", t.CertFile, "--tls-key-file", t.KeyFile,
			"--tls-ca-cert-file", t.CAFile, "--tls-auth-clients", "no")
	}
	return append(a, s.opts.Args...)
}

// TLSAddr is the host:port of the TLS port (Options.TLS).
func (s *Server) TLSAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.tlsPort)) }

func (s *Server) tlsOnly() bool { return s.opts.TLS != nil && s.opts.TLS.Only }

// clientTLS is what a client of a TLS-only server needs: the server's CA. Other servers: nil.
func (s *Server) clientTLS() *tls.Config {
	if !s.tlsOnly() {
		return nil
	}
	pool := x509.NewCertPool()
	if pem, err := os.ReadFile(s.opts.TLS.CAFile); err != nil || !pool.AppendCertsFromPEM(pem) {
		s.tb.Fatalf("testredis: the TLS CA file %s: %v", s.opts.TLS.CAFile, err)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// start runs the process and waits until its log has a ready line, or it exits.
func (s *Server) start() error {
	if s.conf != "" {
		if err := os.WriteFile(s.conf, []byte(s.sentinel), 0o600); err != nil {
			return err
		}
	}
	cmd := exec.Command(s.bin, s.args()...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	testproc.DieWithParent(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	lw := newLogWatch(s.ready)
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd, s.done, s.log = cmd, make(chan struct{}), lw
	scanned := make(chan struct{})
	go func() { lw.scan(stdout); close(scanned) }()
	go func(done chan struct{}) { <-scanned; _ = cmd.Wait(); close(done) }(s.done)

	select {
	case <-lw.ready:
	case <-s.done:
		if lw.contains("Address already in use") {
			return fmt.Errorf("%w: %s", errPortTaken, tail(lw.String(), 300))
		}
		return fmt.Errorf("redis-server exited (%v); log: %s", cmd.ProcessState, tail(lw.String(), 600))
	case <-time.After(30 * time.Second):
		s.Kill()
		return fmt.Errorf("no ready line from redis-server within 30s; log: %s", tail(lw.String(), 600))
	}
	if err := waitPing(&redis.Options{Addr: s.Addr(), Password: s.opts.Password, TLSConfig: s.clientTLS()}, 10*time.Second, s.done); err != nil {
		s.Kill()
		return fmt.Errorf("%w; log: %s", err, tail(lw.String(), 600))
	}
	return nil
}

// Restart starts the server again at the same address (and the same data directory). On TCP the port
// may have been taken in between by another process: then the test fails with redis-server's reason.
// Options.Unix cannot meet that.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Kill()
	if err := s.start(); err != nil {
		s.tb.Fatalf("restart redis-server: %v", err)
	}
}

// Done is closed when the current process has exited.
func (s *Server) Done() <-chan struct{} { return s.done }

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
	if sig == syscall.SIGKILL {
		// The whole process group (Setpgid): a crash takes the server's fork children with it (an
		// append-only rewrite or a save), which would otherwise keep its log pipe open.
		_ = syscall.Kill(-s.cmd.Process.Pid, sig)
	}
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

// logWatch keeps the last 64 KiB of a server's log and closes ready at the first line holding one of
// the ready markers.
type logWatch struct {
	markers []string
	ready   chan struct{}

	mu   sync.Mutex
	buf  []byte
	seen bool
}

func newLogWatch(markers []string) *logWatch {
	return &logWatch{markers: markers, ready: make(chan struct{})}
}

func (w *logWatch) scan(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		w.mu.Lock()
		w.buf = append(w.buf, line...)
		w.buf = append(w.buf, '\n')
		if len(w.buf) > 64<<10 {
			w.buf = append([]byte(nil), w.buf[len(w.buf)-48<<10:]...)
		}
		if !w.seen {
			for _, m := range w.markers {
				if strings.Contains(line, m) {
					w.seen = true
					close(w.ready)
					break
				}
			}
		}
		w.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, r)
}

func (w *logWatch) String() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

func (w *logWatch) contains(s string) bool { return strings.Contains(w.String(), s) }

// FreePort returns a loopback TCP port that was free a moment ago, and whose port+10000 (a cluster bus)
// is free too. It exists for redis-server, which cannot bind port 0 and report its port: Start retries
// with another port when redis-server reports the port taken. Anything that can bind port 0 should.
// Both lie below the kernel's ephemeral range when it leaves room: the thousands of
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

// waitPing asks a server that has logged that it is ready for a PING: the answer proves the address
// reaches it. It retries only a failed attempt, within a bounded time.
func waitPing(o *redis.Options, within time.Duration, exited <-chan struct{}) error {
	addr := o.Addr
	o.DialTimeout, o.MaxRetries = time.Second, -1
	c := redis.NewClient(o)
	defer c.Close()
	var gone error // redis-server exited: no retry can help
	err := testwait.Poll(within, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := c.Ping(ctx).Err()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			gone = fmt.Errorf("redis-server exited: %v", err)
			return nil
		default:
		}
		return err
	})
	if gone != nil {
		return gone
	}
	if err != nil {
		return fmt.Errorf("no PING answer from %s within %s: %v", addr, within, err)
	}
	return nil
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
