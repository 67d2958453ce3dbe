package auth_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testsaml"
	"github.com/formsservice/formsservice/services/platform/config"
)

// A SAML connector configured with the IdP's certificate for its metadata (saml.metadataCertificateFile)
// signs people in through the crewjam IdP when the metadata is signed by it: the assertion's
// signature is then checked with the IdP certificates of the signed metadata, end to end. The same
// metadata changed after signing (the IdP's single sign-on URL pointed elsewhere) offers no sign-in:
// the page says so (502), and nobody is sent to the other URL.
func TestFederation_SAMLSignedMetadata(t *testing.T) {
	f := startSAML(t, []testsaml.User{{Login: "newcomer", Email: "newcomer@example.com", Name: "New Comer"}})
	signed, certFile := f.idp.SignedMetadata(t)
	key, cert := testsaml.KeyPair(t)
	connector := func(metadata []byte) {
		t.Helper()
		file := filepath.Join(t.TempDir(), "idp.xml")
		if err := os.WriteFile(file, metadata, 0o600); err != nil {
			t.Fatal(err)
		}
		yes := true
		f.setConnector(t, config.Connector{ID: "corp", Name: "Corp", Type: config.TypeSAML, TrustEmailVerified: &yes, SAML: &config.SAMLConnector{
			MetadataFile: file, MetadataCertificateFile: certFile, KeyFile: key, CertificateFile: cert,
			Attributes: config.SAMLAttributes{Email: "mail", Name: "cn"}}})
		f.idp.RegisterSP(t, "formsservice", f.base+"/oauth2/saml/corp/metadata") // our new key
	}

	connector(signed)
	tk := f.tokensVia("newcomer")
	if c := idClaims(t, tk.IDToken); c["email"] != "newcomer@example.com" {
		t.Fatalf("claims %v", c)
	}

	connector(bytes.ReplaceAll(signed, []byte(f.idp.URL+"/sso"), []byte("https://idp.attacker.example/sso")))
	b := newBrowser(t)
	page := b.get(f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()))
	res := b.get(f.base + connectorLink(t, page.body, "corp"))
	if res.StatusCode != http.StatusBadGateway || !strings.Contains(res.body, "Signing in with Corp did not work") || strings.Contains(res.Header.Get("Location"), "attacker") {
		t.Fatalf("metadata changed after signing: want 502 and no redirect, got %d %s\n%.500s", res.StatusCode, res.Header.Get("Location"), res.body)
	}
}
