// Package testsaml runs a real SAML 2.0 identity provider for the SAML connector's tests (D76):
// crewjam/saml's samlidp server (its IdentityProvider with a user store, a login page and sessions), in
// process on a loopback port the kernel picks. It is no mock: it signs its assertions with its own key,
// publishes its metadata, registers our SP from our metadata URL through its admin API, and answers
// AuthnRequests as any IdP does. Tests may alter an assertion before it is signed (Tamper), as a
// misconfigured or hostile IdP would.
package testsaml

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"html/template"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/beevik/etree"
	"github.com/crewjam/saml"
	"github.com/crewjam/saml/logger"
	"github.com/crewjam/saml/samlidp"
	dsig "github.com/russellhaering/goxmldsig"
	"golang.org/x/crypto/bcrypt"
)

// Password is every user's password at the IdP.
const Password = "idp-password-0123"

// User is a person at the IdP: Login is what they type; the NameID is their Email (samlidp's rule);
// the assertion carries mail, cn and eduPersonAffiliation (the groups).
type User struct {
	Login, Email, Name string
	Groups             []string
}

// IdP is the running identity provider.
type IdP struct {
	URL         string // its base URL
	MetadataURL string
	Server      *samlidp.Server

	mu     sync.Mutex
	tamper func(*saml.Assertion)
}

// loginForm is the IdP's login page: samlidp's fields, with labels, a language and a title.
var loginForm = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>Test IdP: sign in</title></head>
<body><main><h1>Test IdP</h1>{{if .Toast}}<p role="alert">{{.Toast}}</p>{{end}}
<form method="post" action="{{.URL}}">
<p><label for="user">User</label> <input id="user" type="text" name="user" autocomplete="username"></p>
<p><label for="password">Password</label> <input id="password" type="password" name="password" autocomplete="current-password"></p>
<input type="hidden" name="SAMLRequest" value="{{.SAMLRequest}}">
<input type="hidden" name="RelayState" value="{{.RelayState}}">
<p><button type="submit">Log in</button></p>
</form></main></body></html>`))

// Start runs an IdP with the users until the test ends, at http://127.0.0.1:<port>.
func Start(t testing.TB, users []User) *IdP { return StartAt(t, "127.0.0.1", users) }

// StartAt runs the IdP listening on 127.0.0.1, its URLs naming host: "localhost" makes it another
// site than a provider at 127.0.0.1, so a browser posts its answer cross-site, as a real IdP's.
func StartAt(t testing.TB, host string, users []User) *IdP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	base, _ := url.Parse("http://" + net.JoinHostPort(host, port))
	key, cert := newKeyPair(t, "test-idp")
	srv, err := samlidp.New(samlidp.Options{URL: *base, Key: key, Certificate: cert, Store: &samlidp.MemoryStore{},
		Logger: logger.DefaultLogger, LoginFormTemplate: loginForm})
	if err != nil {
		t.Fatal(err)
	}
	p := &IdP{URL: base.String(), MetadataURL: base.String() + "/metadata", Server: srv}
	srv.IDP.AssertionMaker = tamperingMaker{p}
	for _, u := range users {
		hash, err := bcrypt.GenerateFromPassword([]byte(Password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Store.Put("/users/"+u.Login, samlidp.User{Name: u.Login, HashedPassword: hash, Email: u.Email,
			CommonName: u.Name, Groups: u.Groups}); err != nil {
			t.Fatal(err)
		}
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return p
}

// RegisterSP registers the service provider whose metadata is at metadataURL (as an administrator
// uploads it to Okta or Keycloak), through the IdP's admin API.
func (p *IdP) RegisterSP(t testing.TB, name, metadataURL string) {
	p.register(t, name, metadataURL, false)
}

// RegisterSPPlaintext registers the service provider without the encryption key its metadata
// publishes: the IdP then sends its assertions unencrypted (as an IdP configured so does), which a
// test may strip of their signatures.
func (p *IdP) RegisterSPPlaintext(t testing.TB, name, metadataURL string) {
	p.register(t, name, metadataURL, true)
}

func (p *IdP) register(t testing.TB, name, metadataURL string, plaintext bool) {
	t.Helper()
	res, err := http.Get(metadataURL)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("our SP metadata: %d %s", res.StatusCode, md)
	}
	if plaintext {
		doc := etree.NewDocument()
		if err := doc.ReadFromBytes(md); err != nil {
			t.Fatal(err)
		}
		for _, kd := range doc.FindElements("//KeyDescriptor[@use='encryption']") {
			kd.Parent().RemoveChild(kd)
		}
		if md, err = doc.WriteToBytes(); err != nil {
			t.Fatal(err)
		}
	}
	req, _ := http.NewRequest(http.MethodPut, p.URL+"/services/"+name, bytes.NewReader(md))
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		t.Fatalf("the IdP refused our SP metadata: %d %s", res.StatusCode, body)
	}
}

// Tamper makes f alter every assertion the IdP makes until it is called with nil; the IdP signs the
// altered assertion.
func (p *IdP) Tamper(f func(*saml.Assertion)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tamper = f
}

type tamperingMaker struct{ p *IdP }

func (m tamperingMaker) MakeAssertion(req *saml.IdpAuthnRequest, session *saml.Session) error {
	if err := (saml.DefaultAssertionMaker{}).MakeAssertion(req, session); err != nil {
		return err
	}
	m.p.mu.Lock()
	f := m.p.tamper
	m.p.mu.Unlock()
	if f != nil {
		f(req.Assertion)
	}
	return nil
}

// KeyPair writes a fresh RSA key and a self-signed certificate (PEM) for our SP into a temporary
// folder and returns their paths.
func KeyPair(t testing.TB) (keyFile, certFile string) {
	t.Helper()
	key, cert := newKeyPair(t, "formsservice-sp")
	dir := t.TempDir()
	keyFile, certFile = filepath.Join(dir, "tls.key"), filepath.Join(dir, "tls.crt")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return keyFile, certFile
}

func newKeyPair(t testing.TB, cn string) (*rsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert
}

// SignedMetadata is the IdP's metadata with an enveloped XML signature by the IdP's own key, as an IdP
// that signs its metadata publishes it, and a PEM file of the IdP's certificate that checks it.
func (p *IdP) SignedMetadata(t testing.TB) (metadata []byte, certFile string) {
	t.Helper()
	res, err := http.Get(p.MetadataURL)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the IdP's metadata: %d, %v", res.StatusCode, err)
	}
	key, ok := p.Server.IDP.Key.(crypto.Signer)
	if !ok {
		t.Fatal("the IdP's key cannot sign")
	}
	certFile = filepath.Join(t.TempDir(), "idp-certificate.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.Server.IDP.Certificate.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return SignMetadata(t, b, key, p.Server.IDP.Certificate), certFile
}

// SignMetadata signs the metadata b with an enveloped XML signature over its root element (goxmldsig,
// as IdPs sign theirs) by key, with its certificate cert in KeyInfo.
func SignMetadata(t testing.TB, b []byte, key crypto.Signer, cert *x509.Certificate) []byte {
	t.Helper()
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(b); err != nil {
		t.Fatal(err)
	}
	sc, err := dsig.NewSigningContext(key, [][]byte{cert.Raw})
	if err != nil {
		t.Fatal(err)
	}
	signed, err := sc.SignEnveloped(doc.Root())
	if err != nil {
		t.Fatal(err)
	}
	doc.SetRoot(signed)
	out, err := doc.WriteToBytes()
	if err != nil {
		t.Fatal(err)
	}
	return out
}
