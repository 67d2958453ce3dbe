package samlsp_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beevik/etree"
	dsig "github.com/russellhaering/goxmldsig"

	"github.com/formsservice/formsservice/internal/testsaml"
	"github.com/formsservice/formsservice/services/auth/samlsp"
	"github.com/formsservice/formsservice/services/auth/upstream"
	"github.com/formsservice/formsservice/services/platform/config"
)

// With saml.metadataCertificateFile, the IdP's metadata counts only when signed by that certificate
// (D76's metadata, signed as Shibboleth's and Keycloak's signature-validation filters require): the
// crewjam IdP's own metadata, signed with the IdP's key, is taken from a URL and from a file; unsigned,
// signed by another key, changed after signing (the single sign-on URL pointed elsewhere), or checked
// when the certificate has expired on our clock, it is refused; and a refresh that brings metadata
// failing the check leaves the last good metadata in use.
func TestMetadata_SignedWithTheConfiguredCertificate(t *testing.T) {
	idp := testsaml.Start(t, nil)
	spKey, spCert := testsaml.KeyPair(t)
	idpKey, ok := idp.Server.IDP.Key.(crypto.Signer)
	if !ok {
		t.Fatal("the IdP's key cannot sign")
	}
	idpCert := idp.Server.IDP.Certificate
	dir := t.TempDir()
	certFile := filepath.Join(dir, "idp.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: idpCert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(idp.MetadataURL)
	if err != nil {
		t.Fatal(err)
	}
	unsigned, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || !bytes.Contains(unsigned, []byte(idp.URL+"/sso")) {
		t.Fatalf("the IdP's metadata: %v\n%.300s", err, unsigned)
	}
	signed := testsaml.SignMetadata(t, unsigned, idpKey, idpCert)
	otherKeyFile, otherCertFile := testsaml.KeyPair(t)
	other, err := tls.LoadX509KeyPair(otherCertFile, otherKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	otherCert, _ := x509.ParseCertificate(other.Certificate[0])
	byOther := testsaml.SignMetadata(t, unsigned, other.PrivateKey.(crypto.Signer), otherCert)
	sha1, err := dsig.NewSigningContext(idpKey, [][]byte{idpCert.Raw})
	if err != nil {
		t.Fatal(err)
	}
	sha1.Hash = crypto.SHA1
	if err := sha1.SetSignatureMethod(dsig.RSASHA1SignatureMethod); err != nil {
		t.Fatal(err)
	}
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(unsigned); err != nil {
		t.Fatal(err)
	}
	el, err := sha1.SignEnveloped(doc.Root())
	if err != nil {
		t.Fatal(err)
	}
	doc.SetRoot(el)
	bySHA1, err := doc.WriteToBytes()
	if err != nil {
		t.Fatal(err)
	}
	changed := bytes.ReplaceAll(signed, []byte(idp.URL+"/sso"), []byte("https://idp.attacker.example/sso"))

	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	connector := func(s *config.SAMLConnector) *samlsp.Connector {
		t.Helper()
		s.KeyFile, s.CertificateFile, s.MetadataCertificateFile = spKey, spCert, certFile
		cfg := config.Config{PublicURL: "https://id.acme.example", Auth: config.Auth{Connectors: []config.Connector{{ID: "corp", Type: config.TypeSAML, SAML: s}}}}
		cfg.ApplyDefaults()
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		c, err := samlsp.New(cfg.Auth.Connectors[0], samlsp.Options{Issuer: cfg.PublicURL, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	fromFile := func(b []byte) *samlsp.Connector {
		t.Helper()
		f := filepath.Join(t.TempDir(), "idp.xml")
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return connector(&config.SAMLConnector{MetadataFile: f})
	}
	ctx := context.Background()
	accepted := func(what string, c *samlsp.Connector) {
		t.Helper()
		if to, err := c.AuthURL(ctx, upstream.NewStart(), nil); err != nil || !strings.HasPrefix(to, idp.URL+"/sso?SAMLRequest=") {
			t.Errorf("%s: AuthURL %s, %v", what, to, err)
		}
	}
	refused := func(what string, c *samlsp.Connector) {
		t.Helper()
		to, err := c.AuthURL(ctx, upstream.NewStart(), nil)
		if !errors.Is(err, upstream.ErrRefused) || !strings.Contains(err.Error(), "not signed with the configured metadataCertificateFile") {
			t.Errorf("%s: want the metadata refused, got %s, %v", what, to, err)
		}
	}

	var serve atomic.Value
	serve.Store(signed)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/samlmetadata+xml")
		_, _ = w.Write(serve.Load().([]byte))
	}))
	t.Cleanup(srv.Close)
	fetched := connector(&config.SAMLConnector{MetadataURL: srv.URL + "/metadata"})
	accepted("signed, from a URL", fetched)
	accepted("signed, from a file", fromFile(signed))
	refused("unsigned", fromFile(unsigned))
	refused("signed by another key", fromFile(byOther))
	refused("changed after signing", fromFile(changed))
	refused("signed with SHA-1", fromFile(bySHA1))

	// A refresh that brings metadata changed after signing: refused, and the last good metadata stays.
	serve.Store(changed)
	now.Add(int64(25 * time.Hour))
	if _, err := fetched.AuthOrigin(ctx); err != nil {
		t.Fatal(err)
	}
	accepted("after a refresh refused", fetched)
	if to, _ := fetched.AuthURL(ctx, upstream.NewStart(), nil); strings.Contains(to, "attacker") {
		t.Fatalf("the changed metadata was used: %s", to)
	}
	// The certificate's validity is checked on our clock: it ended 24 h after it began.
	refused("the certificate expired", fromFile(signed))
}
