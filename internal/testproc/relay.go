package testproc

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Relay is a loopback listener on a port the kernel picked, whose connections are copied to a target
// named later. It is for an address that must be known before the process serving it starts — an
// issuer URL, a peer's URL in a configuration file — when the process itself binds port 0 and reports
// its address only once it runs (WaitListening): no port is guessed. Connections that arrive before
// To wait for it. The relay closes when the test ends.
type Relay struct {
	ln     net.Listener
	once   sync.Once
	set    chan struct{} // closed by To
	target string
}

// NewRelay listens on 127.0.0.1:0.
func NewRelay(t testing.TB) *Relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Relay{ln: ln, set: make(chan struct{})}
	t.Cleanup(func() { ln.Close() })
	go r.serve()
	return r
}

// Addr is the relay's host:port.
func (r *Relay) Addr() string { return r.ln.Addr().String() }

// To names the target (host:port) of every connection, held and new; only the first call counts.
func (r *Relay) To(target string) {
	r.once.Do(func() { r.target = target; close(r.set) })
}

func (r *Relay) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return // closed at the end of the test
		}
		go r.relay(c)
	}
}

func (r *Relay) relay(c net.Conn) {
	defer c.Close()
	<-r.set
	up, err := net.Dial("tcp", r.target)
	if err != nil {
		return // the client sees its connection closed, as with a server that is gone
	}
	defer up.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(up, c)
		_ = up.(*net.TCPConn).CloseWrite()
		close(done)
	}()
	_, _ = io.Copy(c, up)
	_ = c.(*net.TCPConn).CloseWrite()
	<-done
}
