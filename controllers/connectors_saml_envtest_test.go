package controllers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/services/platform/config"
)

// The API server and the auth service agree about SAML connectors (spec.auth.connectors[].saml, D76):
// one the CRD admits renders into a configuration the auth service loads, and each one the service
// would refuse is refused at admission, with words that name the rule.
func TestCRD_SAMLConnectorsAgreeWithTheService(t *testing.T) {
	ns := newNamespace(t)
	ref := func(key string) v1alpha1.SecretKeySelector {
		return v1alpha1.SecretKeySelector{Name: "saml-sp", Key: key}
	}
	saml := func(mutate func(c *v1alpha1.ConnectorSpec)) v1alpha1.ConnectorSpec {
		c := v1alpha1.ConnectorSpec{ID: "okta", Type: "saml", SAML: &v1alpha1.SAMLConnectorSpec{
			MetadataURL: "https://acme.okta.com/app/exk0123/sso/saml/metadata", KeyRef: ref("tls.key"), CertificateRef: ref("tls.crt")}}
		if mutate != nil {
			mutate(&c)
		}
		return c
	}
	cases := []struct {
		name string
		conn v1alpha1.ConnectorSpec
		want string // "" admitted; else a fragment of the API server's refusal
	}{
		{"the least", saml(nil), ""},
		{"every field", saml(func(c *v1alpha1.ConnectorSpec) {
			c.Name, c.TrustEmailVerified, c.GroupsPrefix = "Acme SSO", ptr.To(true), "acme:"
			s := c.SAML
			s.EntityID, s.NameIDFormat, s.SignAuthnRequests = "urn:acme:formsservice", "transient", true
			s.SingleLogout = ptr.To(false)
			s.Attributes = &v1alpha1.SAMLAttributes{Subject: "employeeNumber", Email: "mail", Name: "displayName", Groups: "memberOf"}
			s.ClockSkew, s.MetadataRefresh = &metav1.Duration{Duration: time.Minute}, &metav1.Duration{Duration: time.Hour}
			s.MetadataCertificateRef = &v1alpha1.SecretKeySelector{Name: "okta-signer", Key: "metadata.pem"}
		}), ""},
		{"a loopback http metadata URL", saml(func(c *v1alpha1.ConnectorSpec) { c.SAML.MetadataURL = "http://127.0.0.1:8080/metadata" }), ""},

		{"type saml without saml", saml(func(c *v1alpha1.ConnectorSpec) { c.SAML = nil }), "saml is required for type saml"},
		{"saml on an oidc connector", v1alpha1.ConnectorSpec{ID: "staff", Issuer: "https://sso.acme.example", ClientID: "c",
			ClientSecretRef: ref("secret"), SAML: saml(nil).SAML}, "saml is required for type saml, and only for it"},
		{"a client ID on a saml connector", saml(func(c *v1alpha1.ConnectorSpec) { c.ClientID = "x" }), "are for types oidc and github"},
		{"an issuer on a saml connector", saml(func(c *v1alpha1.ConnectorSpec) { c.Issuer = "https://sso.acme.example" }), "are for types oidc and github"},
		{"an http metadata URL", saml(func(c *v1alpha1.ConnectorSpec) { c.SAML.MetadataURL = "http://acme.okta.com/metadata" }), "metadataURL must be an https URL"},
		{"a transient NameID without a subject attribute", saml(func(c *v1alpha1.ConnectorSpec) { c.SAML.NameIDFormat = "transient" }), "a transient NameID changes"},
		{"an unknown NameID format", saml(func(c *v1alpha1.ConnectorSpec) { c.SAML.NameIDFormat = "x509" }), "spec.auth.connectors[0].saml.nameIDFormat"},
		{"a clock skew of an hour", saml(func(c *v1alpha1.ConnectorSpec) { c.SAML.ClockSkew = &metav1.Duration{Duration: time.Hour} }), "clockSkew must be between 0s and 3m"},
		{"a metadata refresh of a second", saml(func(c *v1alpha1.ConnectorSpec) { c.SAML.MetadataRefresh = &metav1.Duration{Duration: time.Second} }), "metadataRefresh must be at least 1m"},
		{"an entity ID that is no URI", saml(func(c *v1alpha1.ConnectorSpec) { c.SAML.EntityID = "our sp" }), "spec.auth.connectors[0].saml.entityID"},
	}
	for i, tc := range cases {
		fs := sampleFS(ns)
		fs.Name = fmt.Sprintf("saml%d", i)
		fs.Spec.Auth.Connectors = []v1alpha1.ConnectorSpec{tc.conn}
		agreesWithService(t, tc.name, fs, tc.want)
	}
}

// The SAML sample of docs/operator.md is admitted and renders into a configuration the auth service
// loads, with our SP's key and certificate as mounted files.
func TestConnectors_SAMLSampleIsAdmittedAndLoads(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "config", "samples", "connectors", "formsservice_saml.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fs := &v1alpha1.FormsService{}
	if err := yaml.UnmarshalStrict(b, fs); err != nil {
		t.Fatal(err)
	}
	fs.Namespace = newNamespace(t)
	if err := k8s.Create(context.Background(), fs, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	text, err := render.RenderConfig(fs, render.Auth, render.Inputs{Image: "img:1"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyDefaults()
	if s := c.Auth.Connectors[0]; s.Type != config.TypeSAML || s.SAML == nil || s.SAML.KeyFile != render.SecretPath("acme-saml-sp", "tls.key") ||
		s.SAML.Attributes.Groups != "groups" || !s.Trusts() {
		t.Errorf("rendered %+v", s)
	}
}
