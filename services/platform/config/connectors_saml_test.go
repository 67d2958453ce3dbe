package config

import (
	"strings"
	"testing"
	"time"
)

func samlConn(s *SAMLConnector) Connector { return Connector{ID: "okta", Type: TypeSAML, SAML: s} }

func TestSAMLConnector_DefaultsAndValidation(t *testing.T) {
	c := &Config{PublicURL: "https://auth.example.com", Auth: Auth{Connectors: []Connector{
		samlConn(&SAMLConnector{MetadataURL: "https://idp.example.com/metadata", KeyFile: "/k", CertificateFile: "/c", Attributes: SAMLAttributes{Groups: "memberOf"}}),
	}}}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	s := c.Auth.Connectors[0]
	if s.SAML.NameIDFormat != "persistent" || s.SAML.Attributes.Email != "email" || s.SAML.ClockSkew.D() != SAMLDefaultClockSkew ||
		s.SAML.MetadataRefresh.D() != 24*time.Hour || s.GroupsPrefix != "okta:" || !s.ReadsGroups() || s.Trusts() || s.Name != "okta" {
		t.Errorf("saml defaults: %+v %+v", s, s.SAML)
	}
	for name, tc := range map[string]struct {
		conn Connector
		want string
	}{
		"no saml object":     {Connector{ID: "x", Type: TypeSAML}, "saml: is required"},
		"saml on oidc":       {Connector{ID: "x", Issuer: "https://x.example.com", ClientID: "c", ClientSecretFile: "/s", SAML: &SAMLConnector{}}, "saml: is for type saml"},
		"both metadata":      {samlConn(&SAMLConnector{MetadataURL: "https://i.example.com/m", MetadataFile: "/m", KeyFile: "/k", CertificateFile: "/c"}), "exactly one of metadataURL"},
		"no metadata":        {samlConn(&SAMLConnector{KeyFile: "/k", CertificateFile: "/c"}), "exactly one of metadataURL"},
		"http metadata":      {samlConn(&SAMLConnector{MetadataURL: "http://i.example.com/m", KeyFile: "/k", CertificateFile: "/c"}), "must be https"},
		"no key":             {samlConn(&SAMLConnector{MetadataFile: "/m", CertificateFile: "/c"}), "saml.keyFile and saml.certificateFile are required"},
		"bad nameid":         {samlConn(&SAMLConnector{MetadataFile: "/m", KeyFile: "/k", CertificateFile: "/c", NameIDFormat: "x509"}), `saml.nameIDFormat "x509"`},
		"transient no attr":  {samlConn(&SAMLConnector{MetadataFile: "/m", KeyFile: "/k", CertificateFile: "/c", NameIDFormat: "transient"}), "transient changes"},
		"skew too large":     {samlConn(&SAMLConnector{MetadataFile: "/m", KeyFile: "/k", CertificateFile: "/c", ClockSkew: Duration(time.Hour)}), "saml.clockSkew 1h0m0s"},
		"relative entity id": {samlConn(&SAMLConnector{MetadataFile: "/m", KeyFile: "/k", CertificateFile: "/c", EntityID: "our-sp"}), "an absolute URI"},
		"with a client id":   {Connector{ID: "x", Type: TypeSAML, ClientID: "c", SAML: &SAMLConnector{MetadataFile: "/m", KeyFile: "/k", CertificateFile: "/c"}}, "are for types oidc and github"},
	} {
		c := &Config{PublicURL: "https://auth.example.com", Auth: Auth{Connectors: []Connector{tc.conn}}}
		c.ApplyDefaults()
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", name, err, tc.want)
		}
	}
	loop := &Config{PublicURL: "https://auth.example.com", Auth: Auth{Connectors: []Connector{
		samlConn(&SAMLConnector{MetadataURL: "http://127.0.0.1:8080/metadata", KeyFile: "/k", CertificateFile: "/c"})}}}
	loop.ApplyDefaults()
	if err := loop.Validate(); err != nil {
		t.Errorf("a loopback http metadata URL: %v", err)
	}
}

// The SAML example of docs/auth.md is a configuration this package accepts, meaning what the page says.
func TestSAMLConnector_DocsExample(t *testing.T) {
	c := docsExample(t, "### SAML 2.0\n")
	s, ok := c.Auth.ConnectorByID("okta")
	if !ok || s.Type != TypeSAML || s.SAML == nil || s.SAML.Attributes.Groups != "groups" || !s.Trusts() || s.SAML.NameIDFormat != "persistent" {
		t.Fatalf("okta: %+v", s)
	}
}
