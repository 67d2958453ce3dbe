package render

import (
	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/services/platform/config"
)

// samlConnector is the auth configuration's saml: of a spec's (nil for none): the same fields, our SP
// key and certificate, and the IdP's metadata certificate, as the files their Secrets are mounted at
// (UserSecretRefs, D76, D82).
func samlConnector(s *v1alpha1.SAMLConnectorSpec) *config.SAMLConnector {
	if s == nil {
		return nil
	}
	c := &config.SAMLConnector{MetadataURL: s.MetadataURL, EntityID: s.EntityID, SignAuthnRequests: s.SignAuthnRequests,
		NameIDFormat: s.NameIDFormat, KeyFile: SecretPath(s.KeyRef.Name, s.KeyRef.Key),
		CertificateFile: SecretPath(s.CertificateRef.Name, s.CertificateRef.Key)}
	if s.SingleLogout != nil {
		v := *s.SingleLogout
		c.SingleLogout = &v
	}
	if r := s.MetadataCertificateRef; r != nil {
		c.MetadataCertificateFile = SecretPath(r.Name, r.Key)
	}
	if s.MetadataRefresh != nil {
		c.MetadataRefresh = config.Duration(s.MetadataRefresh.Duration)
	}
	if s.ClockSkew != nil {
		c.ClockSkew = config.Duration(s.ClockSkew.Duration)
	}
	if a := s.Attributes; a != nil {
		c.Attributes = config.SAMLAttributes{Subject: a.Subject, Email: a.Email, Name: a.Name, Groups: a.Groups}
	}
	return c
}

// samlSecretRefs are the Secret keys a SAML connector names: our SP's key and certificate, and the
// IdP's metadata certificate, mounted into the auth pods.
func samlSecretRefs(c v1alpha1.ConnectorSpec) []SecretRef {
	s := c.SAML
	if s == nil {
		return nil
	}
	field := "spec.auth.connectors[" + c.ID + "].saml."
	refs := []SecretRef{
		{Secret: s.KeyRef.Name, Key: s.KeyRef.Key, Field: field + "keyRef", Components: []string{Auth}},
		{Secret: s.CertificateRef.Name, Key: s.CertificateRef.Key, Field: field + "certificateRef", Components: []string{Auth}},
	}
	if r := s.MetadataCertificateRef; r != nil {
		refs = append(refs, SecretRef{Secret: r.Name, Key: r.Key, Field: field + "metadataCertificateRef", Components: []string{Auth}})
	}
	return refs
}
