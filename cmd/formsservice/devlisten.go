//go:build !formsonly

package main

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
)

// devListen opens the dev server's listener and returns the public URL it announces (its issuer unless
// the configuration names one). On a loopback address (127.0.0.1, ::1 or localhost) that URL is
// http://localhost:<port> (D74): a host name, so that passkeys work (WebAuthn takes no IP address as
// relying party ID), and a secure context in browsers as 127.0.0.1 is. localhost may resolve to ::1
// first (Node's fetch tries only the first address before Node 20; Safari and some resolvers prefer
// IPv6), so the server listens on 127.0.0.1 and on ::1 of the same port: a request to localhost then
// reaches this server, never another program on [::1]:<port>. Any other address is served as before,
// its URL naming it.
func devListen(addr string) (net.Listener, string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || !loopbackName(host) {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, "", err
		}
		return ln, "http://" + displayAddr(ln.Addr().String()), nil
	}
	// Port 0 picks a free port on 127.0.0.1; ::1 of that port may be taken (rarely): pick again.
	for range 20 {
		v4, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
		if err != nil {
			return nil, "", err
		}
		_, got, _ := net.SplitHostPort(v4.Addr().String())
		url := devURLOf(v4.Addr().String())
		v6, err := net.Listen("tcp", net.JoinHostPort("::1", got))
		switch {
		case err == nil:
			return joinListeners(v4, v6), url, nil
		case noIPv6(err):
			return v4, url, nil // no IPv6 here: localhost is 127.0.0.1 alone
		case errors.Is(err, syscall.EADDRINUSE) && port == "0":
			v4.Close()
			continue
		default:
			v4.Close()
			return nil, "", fmt.Errorf("%w (another program listens on [::1]:%s, where %s may lead; stop it or set ADDR to another port)", err, got, url)
		}
	}
	return nil, "", fmt.Errorf("listen: found no port free on both 127.0.0.1 and ::1")
}

// noIPv6: the machine has no IPv6 loopback (IPv6 off in the kernel, or in a container).
func noIPv6(err error) bool {
	return errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EAFNOSUPPORT) || errors.Is(err, syscall.EPROTONOSUPPORT)
}

// joinedListener accepts from several listeners as one; its Addr is the first one's.
type joinedListener struct {
	ls    []net.Listener
	conns chan net.Conn
	errs  chan error
	done  chan struct{}
	once  sync.Once
}

func joinListeners(ls ...net.Listener) net.Listener {
	j := &joinedListener{ls: ls, conns: make(chan net.Conn), errs: make(chan error, len(ls)), done: make(chan struct{})}
	for _, l := range ls {
		go j.acceptFrom(l)
	}
	return j
}

func (j *joinedListener) acceptFrom(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			j.errs <- err // buffered: one per listener, its last
			return
		}
		select {
		case j.conns <- c:
		case <-j.done:
			c.Close()
			return
		}
	}
}

func (j *joinedListener) Accept() (net.Conn, error) {
	select {
	case c := <-j.conns:
		return c, nil
	case <-j.done:
		return nil, net.ErrClosed
	case err := <-j.errs:
		j.Close() // a listener failed: the server stops, as with one listener
		return nil, err
	}
}

func (j *joinedListener) Close() error {
	var errs []error
	j.once.Do(func() {
		close(j.done)
		for _, l := range j.ls {
			errs = append(errs, l.Close())
		}
	})
	return errors.Join(errs...)
}

func (j *joinedListener) Addr() net.Addr { return j.ls[0].Addr() }
