package testredis

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections to a Redis server and can hold back one reply: it makes "Redis ran the
// command, but the answer came too late" happen on demand, which is what a client's retry after a read
// timeout meets in production (a slow fsync, a busy server, a congested network).
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	trigger []byte        // a command containing these bytes arms the hold
	hold    time.Duration // how long its reply is held
	conns   []net.Conn
}

// StartProxy listens on a loopback port and forwards every connection to target. It stops when the test
// ends.
func StartProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target}
	go p.accept()
	tb.Cleanup(p.close)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is redis://host:port/0 through the proxy.
func (p *Proxy) URL() string { return "redis://" + p.Addr() + "/0" }

// HoldNextReply makes the proxy hold the reply to the next command whose request contains trigger (such
// as "EVALSHA"; compared without case) for d before passing it on. The command itself reaches the server at once.
func (p *Proxy) HoldNextReply(trigger string, d time.Duration) {
	p.mu.Lock()
	p.trigger, p.hold = bytes.ToLower([]byte(trigger)), d
	p.mu.Unlock()
}

func (p *Proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		held := make(chan time.Duration, 16)
		go p.upstream(c, s, held)
		go downstream(s, c, held)
	}
}

// upstream copies client → server and tells downstream when a reply is to be held.
func (p *Proxy) upstream(c, s net.Conn, held chan<- time.Duration) {
	defer s.Close()
	defer close(held)
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			p.mu.Lock()
			if p.trigger != nil && bytes.Contains(bytes.ToLower(buf[:n]), p.trigger) {
				held <- p.hold
				p.trigger = nil
			}
			p.mu.Unlock()
			if _, werr := s.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// downstream copies server → client, holding the next chunk back when upstream asked for it.
func downstream(s, c net.Conn, held <-chan time.Duration) {
	defer c.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			select {
			case d, ok := <-held:
				if ok {
					time.Sleep(d) // the fault being injected: a reply that arrives late
				}
			default:
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				_, _ = io.Copy(io.Discard, s)
				return
			}
		}
		if err != nil {
			return
		}
	}
}
