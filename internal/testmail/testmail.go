// Package testmail runs Mailpit, a real SMTP server with an HTTP API, as a process for tests: on a port
// the kernel picks, with STARTTLS or implicit TLS and SMTP AUTH when asked, and helpers to wait for the
// mail sent to an address and read its parts, headers, raw source and links.
//
// Mailpit is built from the Go module proxy by `make deps-mail` (hack/install-mailpit.sh, cached as
// bin/mailpit-<version>); a test fails with that command when it is missing, and is skipped under
// `go test -short` (make test-fast). docs/architecture.md (D10) says why Mailpit.
//
// No port is guessed (D8): Mailpit binds SMTP on 127.0.0.1:0 but logs ":0", so Start reads the port it
// got from the kernel's socket table (testproc.WaitListeningSockets); its HTTP API listens on a Unix
// socket in a folder of the test's.
package testmail

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/mail"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/internal/testwait"
)

// Version is the Mailpit release the tests run (hack/install-mailpit.sh builds it).
const Version = "v1.33.1"

// TLSMode says how the SMTP port speaks TLS.
type TLSMode int

const (
	// Plain: no TLS offered (AUTH then needs AllowInsecureAuth).
	Plain TLSMode = iota
	// StartTLS: STARTTLS offered; with RequireTLS, required before MAIL.
	StartTLS
	// ImplicitTLS: the port speaks TLS from the first byte (SMTPS, port 465 style).
	ImplicitTLS
)

// Options configure Start.
type Options struct {
	TLS TLSMode
	// RequireTLS (with StartTLS) refuses a session that did not upgrade.
	RequireTLS bool
	// User and Password require SMTP AUTH with these credentials.
	User, Password string
	// AllowInsecureAuth lets AUTH happen without TLS (Mailpit refuses it otherwise).
	AllowInsecureAuth bool
	// AllowedRecipients, a regular expression, makes Mailpit answer RCPT of any other address with
	// "550 5.1.0 mailbox unavailable": a real permanent refusal.
	AllowedRecipients string
}

// Server is one Mailpit process.
type Server struct {
	// SMTPAddr is the SMTP listener, 127.0.0.1:port.
	SMTPAddr string
	// ClientTLS trusts the server's certificate (for 127.0.0.1 and localhost), when TLS is on.
	ClientTLS *tls.Config
	// CAFile is that certificate as a PEM file, for a configuration's caFile.
	CAFile string

	proc *testproc.Process
	api  *http.Client
}

// Start runs Mailpit until the test ends and returns once its SMTP port listens and its API is ready.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	exe := Binary(t)
	// A Unix socket path must stay under 108 bytes; a test's TempDir can be longer.
	sockDir, err := os.MkdirTemp("", "mailpit-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(sockDir) })
	dir := t.TempDir()
	sock := filepath.Join(sockDir, "api.sock")
	args := []string{
		"--smtp", "127.0.0.1:0",
		"--listen", "unix:" + sock + ":0600",
		"--database", filepath.Join(dir, "mailpit.db"),
		"--disable-version-check", "--smtp-disable-rdns", "--enable-chaos",
		"--max", "0", // keep every message
	}
	s := &Server{}
	if o.TLS != Plain {
		cert, key, pool := selfSigned(t, dir)
		args = append(args, "--smtp-tls-cert", cert, "--smtp-tls-key", key)
		if o.TLS == ImplicitTLS {
			args = append(args, "--smtp-require-tls")
		} else if o.RequireTLS {
			args = append(args, "--smtp-require-starttls")
		}
		s.ClientTLS = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
		s.CAFile = cert
	}
	if o.User != "" {
		f := filepath.Join(dir, "smtp-auth")
		if err := os.WriteFile(f, []byte(o.User+":"+o.Password+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--smtp-auth-file", f)
	}
	if o.AllowInsecureAuth {
		args = append(args, "--smtp-auth-allow-insecure")
	}
	if o.AllowedRecipients != "" {
		args = append(args, "--smtp-allowed-recipients", o.AllowedRecipients)
	}
	s.proc = testproc.Start(t, nil, exe, args...)
	s.api = &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}},
	}
	// The one TCP socket is SMTP (the API is on the Unix socket; POP3 stays off without its auth file).
	s.SMTPAddr = s.proc.WaitListeningSockets(t, 1, 30*time.Second)[0]
	testwait.Until(t, 30*time.Second, "Mailpit's /readyz", func() error {
		if exited, err := s.proc.Exited(); exited {
			t.Fatalf("mailpit exited: %v\n%s", err, s.proc.Output())
		}
		_, err := s.get("/readyz")
		return err
	})
	return s
}

// Binary returns the Mailpit executable: $MAILPIT, or bin/mailpit-<Version>, which `make deps-mail`
// builds. It skips the test under -short.
func Binary(t testing.TB) string {
	t.Helper()
	return testproc.Tool{Env: "MAILPIT", Cached: "mailpit-" + Version, Make: "deps-mail"}.Path(t)
}

// Summary is one stored message as Mailpit lists it.
type Summary struct {
	ID        string          `json:"ID"`
	MessageID string          `json:"MessageID"`
	From      *mail.Address   `json:"From"`
	To        []*mail.Address `json:"To"`
	Subject   string          `json:"Subject"`
	Username  string          `json:"Username"` // the SMTP AUTH user, if any
}

// Mail is one stored message in full.
type Mail struct {
	Summary
	ReplyTo []*mail.Address `json:"ReplyTo"`
	Text    string          `json:"Text"`
	HTML    string          `json:"HTML"`
	// ListUnsubscribe is Mailpit's reading of List-Unsubscribe and List-Unsubscribe-Post.
	ListUnsubscribe struct {
		Header     string   `json:"Header"`
		Links      []string `json:"Links"`
		Errors     string   `json:"Errors"`
		HeaderPost string   `json:"HeaderPost"`
	} `json:"ListUnsubscribe"`
	// Headers are the message's headers, unfolded, not decoded.
	Headers map[string][]string `json:"-"`
	// Raw is the message exactly as received (after the SMTP dot-unstuffing).
	Raw string `json:"-"`
}

// Messages lists every stored message, newest first.
func (s *Server) Messages(t testing.TB) []Summary {
	t.Helper()
	var page struct {
		Messages []Summary `json:"messages"`
	}
	s.getJSON(t, "/api/v1/messages?limit=1000", &page)
	return page.Messages
}

// To lists the stored messages with addr among their To recipients, newest first.
func (s *Server) To(t testing.TB, addr string) []Summary {
	t.Helper()
	var out []Summary
	for _, m := range s.Messages(t) {
		if slices.ContainsFunc(m.To, func(a *mail.Address) bool { return strings.EqualFold(a.Address, addr) }) {
			out = append(out, m)
		}
	}
	return out
}

// WaitTo waits until n messages to addr are stored and returns them, newest first.
func (s *Server) WaitTo(t testing.TB, addr string, n int, within time.Duration) []Summary {
	t.Helper()
	var got []Summary
	testwait.For(t, within, fmt.Sprintf("%d mail(s) to %s", n, addr), func() bool {
		got = s.To(t, addr)
		return len(got) >= n
	})
	return got
}

// Latest waits for a message to addr and returns the newest in full.
func (s *Server) Latest(t testing.TB, addr string, within time.Duration) Mail {
	t.Helper()
	return s.Get(t, s.WaitTo(t, addr, 1, within)[0].ID)
}

// Get returns a stored message in full: parts, headers and raw source.
func (s *Server) Get(t testing.TB, id string) Mail {
	t.Helper()
	var m Mail
	s.getJSON(t, "/api/v1/message/"+id, &m)
	s.getJSON(t, "/api/v1/message/"+id+"/headers", &m.Headers)
	raw, err := s.get("/api/v1/message/" + id + "/raw")
	if err != nil {
		t.Fatal(err)
	}
	m.Raw = string(raw)
	return m
}

// Header is the first value of a header (case-insensitive name), "" when absent.
func (m Mail) Header(name string) string {
	if v := m.Headers[textprotoKey(name)]; len(v) > 0 {
		return v[0]
	}
	for k, v := range m.Headers {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

func textprotoKey(s string) string { return http.CanonicalHeaderKey(s) }

var (
	hrefRE = regexp.MustCompile(`(?i)href\s*=\s*"([^"]+)"`)
	urlRE  = regexp.MustCompile(`https?://[^\s<>"')\]]+`)
)

// Links are the http(s) links of the message: the HTML part's hrefs, then the URLs in the text part,
// each once, in order of appearance.
func (m Mail) Links() []string {
	var out []string
	add := func(u string) {
		u = strings.ReplaceAll(u, "&amp;", "&")
		if (strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")) && !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	for _, sm := range hrefRE.FindAllStringSubmatch(m.HTML, -1) {
		add(sm[1])
	}
	for _, u := range urlRE.FindAllString(m.Text, -1) {
		add(strings.TrimRight(u, ".,;:!?"))
	}
	return out
}

// Chaos makes Mailpit answer the next MAIL FROM (sender), RCPT TO (recipient) or AUTH with code, with
// the given probability in percent (100: always; 0: never). Codes run 400 to 599.
type Chaos struct {
	Code        int
	Probability int
}

// SetChaos sets the failures Mailpit injects at MAIL FROM, RCPT TO and AUTH (a zero Chaos turns one off).
func (s *Server) SetChaos(t testing.TB, sender, recipient, auth Chaos) {
	t.Helper()
	trig := func(c Chaos) map[string]int { return map[string]int{"ErrorCode": c.Code, "Probability": c.Probability} }
	body, _ := json.Marshal(map[string]any{"Sender": trig(sender), "Recipient": trig(recipient), "Authentication": trig(auth)})
	req, _ := http.NewRequest(http.MethodPut, "http://mailpit/api/v1/chaos", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := s.api.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if b, _ := io.ReadAll(res.Body); res.StatusCode != http.StatusOK {
		t.Fatalf("PUT /api/v1/chaos: %d %s", res.StatusCode, b)
	}
}

// DeleteAll removes every stored message.
func (s *Server) DeleteAll(t testing.TB) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, "http://mailpit/api/v1/messages", strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	res, err := s.api.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("DELETE /api/v1/messages: %d", res.StatusCode)
	}
}

// Output is what Mailpit logged so far (its SMTP dialogue is in it at --verbose; failures show it).
func (s *Server) Output() string { return s.proc.Output() }

func (s *Server) get(path string) ([]byte, error) {
	res, err := s.api.Get("http://mailpit" + path)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", path, res.StatusCode, bytes.TrimSpace(b))
	}
	return b, nil
}

func (s *Server) getJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := s.get(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, b)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and localhost and its key as PEM files into dir.
func selfSigned(t testing.TB, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "testmail"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "smtp.crt"), filepath.Join(dir, "smtp.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(leaf)
	return certFile, keyFile, pool
}
