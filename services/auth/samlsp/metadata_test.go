package samlsp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testsaml"
	"github.com/formsservice/formsservice/services/auth/samlsp"
	"github.com/formsservice/formsservice/services/auth/upstream"
	"github.com/formsservice/formsservice/services/platform/config"
)

// countingTransport counts the requests for the IdP's metadata, and fails them while down is set.
type countingTransport struct {
	fetches atomic.Int32
	down    atomic.Bool
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.fetches.Add(1)
	if c.down.Load() {
		return nil, errors.New("the IdP is down")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// The IdP's metadata is fetched at the first sign-in, used until metadataRefresh has passed, then
// fetched again; an IdP that cannot be reached then leaves the last metadata in use (and is asked again
// a minute later), so sign-ins go on. Metadata in a file needs no fetch at all.
func TestMetadata_FetchedRefreshedAndKeptWhenTheIdPIsDown(t *testing.T) {
	idp := testsaml.Start(t, nil)
	key, cert := testsaml.KeyPair(t)
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	tr := &countingTransport{}
	c := config.Connector{ID: "corp", Type: config.TypeSAML, SAML: &config.SAMLConnector{MetadataURL: idp.MetadataURL, KeyFile: key, CertificateFile: cert}}
	cfg := config.Config{PublicURL: "https://id.acme.example", Auth: config.Auth{Connectors: []config.Connector{c}}}
	cfg.ApplyDefaults()
	conn, err := samlsp.New(cfg.Auth.Connectors[0], samlsp.Options{Issuer: cfg.PublicURL, Client: &http.Client{Transport: tr}, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	authURL := func(want int32) {
		t.Helper()
		to, err := conn.AuthURL(ctx, upstream.NewStart(), nil)
		if err != nil || !strings.HasPrefix(to, idp.URL+"/sso?SAMLRequest=") {
			t.Fatalf("AuthURL: %s, %v", to, err)
		}
		if got := tr.fetches.Load(); got != want {
			t.Fatalf("%d fetches of the metadata, want %d", got, want)
		}
	}
	authURL(1)
	now.Add(int64(23 * time.Hour))
	authURL(1)
	now.Add(int64(2 * time.Hour)) // past the 24h refresh
	authURL(2)
	tr.down.Store(true)
	now.Add(int64(25 * time.Hour))
	authURL(3) // tried, failed: the last metadata stays
	authURL(3) // not asked again at once
	now.Add(int64(2 * time.Minute))
	authURL(4)

	md, err := http.Get(idp.MetadataURL)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "idp.xml")
	b, err := io.ReadAll(md.Body)
	md.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	c.SAML = &config.SAMLConnector{MetadataFile: file, KeyFile: key, CertificateFile: cert}
	cfg.Auth.Connectors = []config.Connector{c}
	cfg.ApplyDefaults()
	fromFile, err := samlsp.New(cfg.Auth.Connectors[0], samlsp.Options{Issuer: cfg.PublicURL, Client: &http.Client{Transport: tr}, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if origin, err := fromFile.AuthOrigin(ctx); err != nil || !strings.HasPrefix(idp.URL, origin) || tr.fetches.Load() != 4 {
		t.Fatalf("metadata from a file: %s, %v, %d fetches", origin, err, tr.fetches.Load())
	}
}
