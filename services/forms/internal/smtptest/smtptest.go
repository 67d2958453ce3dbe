// Package smtptest runs a real SMTP server (emersion/go-smtp) on a loopback port for tests: it records
// every message it accepts, can refuse or stall the next sessions or hold each one until the test lets
// it through, and can require STARTTLS and AUTH.
package smtptest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Mail is one accepted message.
type Mail struct {
	From string
	To   []string
	Data string
	User string // the AUTH user, if any
}

// Server is an SMTP server on 127.0.0.1.
type Server struct {
	Addr string
	// ClientTLS trusts the server's certificate (when started WithTLS).
	ClientTLS *tls.Config

	mu       sync.Mutex
	mails    []Mail
	sessions int
	failNext int
	refuse   int
	stallCh  chan struct{}
	stalls   int
	gated    bool
	gate     chan struct{} // one token per gated transaction let through
	waiting  int           // transactions waiting at the gate
	received chan struct{}
	user     string
	password string
	dropQuit int
}

// Options configure Start.
type Options struct {
	// TLS offers STARTTLS with a self-signed certificate for "localhost".
	TLS bool
	// User and Password require AUTH PLAIN with these credentials.
	User, Password string
}

// Start runs a server until the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	s := &Server{received: make(chan struct{}, 1000), gate: make(chan struct{}, 1000), user: o.User, password: o.Password}
	srv := smtp.NewServer(backend{s})
	srv.Domain = "localhost"
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	srv.AllowInsecureAuth = !o.TLS
	if o.TLS {
		cert, pool := selfSigned(t)
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		s.ClientTLS = &tls.Config{RootCAs: pool, ServerName: "localhost"}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = ln.Addr().String()
	go func() { _ = srv.Serve(quitDropper{ln, s}) }()
	t.Cleanup(func() {
		s.Release()
		_ = srv.Close()
	})
	return s
}

// FailNext makes the next n transactions fail at DATA with a temporary error (451).
func (s *Server) FailNext(n int) {
	s.mu.Lock()
	s.failNext = n
	s.mu.Unlock()
}

// RefuseNext makes the next n transactions fail at DATA with a permanent refusal: "554 5.6.0 message
// refused", as a strict relay answers a message it will never take.
func (s *Server) RefuseNext(n int) {
	s.mu.Lock()
	s.refuse = n
	s.mu.Unlock()
}

// DropNextQuit makes the next n sessions end at QUIT with a closed connection instead of "221 Bye": the
// relay had accepted the message at DATA, and the connection broke afterwards.
func (s *Server) DropNextQuit(n int) {
	s.mu.Lock()
	s.dropQuit = n
	s.mu.Unlock()
}

// quitDropper hands out connections that break on QUIT when DropNextQuit asked for it (plain text only).
type quitDropper struct {
	net.Listener
	s *Server
}

func (l quitDropper) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &quitDropConn{Conn: c, s: l.s}, nil
}

type quitDropConn struct {
	net.Conn
	s *Server
}

func (c *quitDropConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n >= 4 && strings.EqualFold(string(p[:4]), "QUIT") {
		c.s.mu.Lock()
		drop := c.s.dropQuit > 0
		if drop {
			c.s.dropQuit--
		}
		c.s.mu.Unlock()
		if drop {
			c.Conn.Close()
			return 0, io.EOF
		}
	}
	return n, err
}

// StallNext makes the next n transactions hang at DATA until Release.
func (s *Server) StallNext(n int) {
	s.mu.Lock()
	s.stalls = n
	if s.stallCh == nil {
		s.stallCh = make(chan struct{})
	}
	s.mu.Unlock()
}

// Gate makes every later transaction wait at DATA until Admit lets it through, and then accepts it: a
// relay exactly as slow as the test makes it, one message at a time.
func (s *Server) Gate() {
	s.mu.Lock()
	s.gated = true
	if s.stallCh == nil {
		s.stallCh = make(chan struct{})
	}
	s.mu.Unlock()
}

// Admit lets n gated transactions through: those waiting first, then the next ones to arrive.
func (s *Server) Admit(n int) {
	for range n {
		s.gate <- struct{}{}
	}
}

// Waiting counts the transactions waiting at the gate.
func (s *Server) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

// Release lets stalled transactions, and those waiting at the gate, go on (they then fail: the client
// has usually given up), and opens the gate for good.
func (s *Server) Release() {
	s.mu.Lock()
	if s.stallCh != nil {
		close(s.stallCh)
		s.stallCh = nil
	}
	s.gated = false
	s.mu.Unlock()
}

// Mails returns what was accepted so far.
func (s *Server) Mails() []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Mail(nil), s.mails...)
}

// Sessions counts DATA commands seen (accepted, failed, refused, stalled or waiting at the gate).
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions
}

// Wait waits until n messages were accepted in total, or fails the test.
func (s *Server) Wait(t testing.TB, n int, within time.Duration) []Mail {
	t.Helper()
	deadline := time.After(within)
	for {
		if m := s.Mails(); len(m) >= n {
			return m
		}
		select {
		case <-s.received:
		case <-deadline:
			t.Fatalf("smtp: %d messages after %s, want %d", len(s.Mails()), within, n)
		}
	}
}

type backend struct{ s *Server }

func (b backend) NewSession(*smtp.Conn) (smtp.Session, error) { return &session{s: b.s}, nil }

type session struct {
	s    *Server
	mail Mail
	auth bool
}

func (se *session) AuthMechanisms() []string {
	if se.s.user == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (se *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != se.s.user || pass != se.s.password {
			return errors.New("invalid credentials")
		}
		se.auth, se.mail.User = true, user
		return nil
	}), nil
}

func (se *session) Mail(from string, _ *smtp.MailOptions) error {
	if se.s.user != "" && !se.auth {
		return smtp.ErrAuthRequired
	}
	se.mail.From = from
	return nil
}

func (se *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	se.mail.To = append(se.mail.To, to)
	return nil
}

func (se *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s := se.s
	s.mu.Lock()
	s.sessions++
	if s.failNext > 0 {
		s.failNext--
		s.mu.Unlock()
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
	}
	if s.refuse > 0 {
		s.refuse--
		s.mu.Unlock()
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "message refused"}
	}
	if s.stalls > 0 && s.stallCh != nil {
		s.stalls--
		ch := s.stallCh
		s.mu.Unlock()
		<-ch
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "stalled"}
	}
	if s.gated {
		s.waiting++
		ch := s.stallCh
		s.mu.Unlock()
		released := false
		select {
		case <-s.gate:
		case <-ch:
			released = true
		}
		s.mu.Lock()
		s.waiting--
		if released {
			s.mu.Unlock()
			return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "stalled"}
		}
	}
	s.mu.Unlock()
	m := se.mail
	m.Data = string(b)
	s.mu.Lock()
	s.mails = append(s.mails, m)
	s.mu.Unlock()
	s.received <- struct{}{}
	return nil
}

func (se *session) Reset()        { se.mail = Mail{User: se.mail.User} }
func (se *session) Logout() error { return nil }

func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}
