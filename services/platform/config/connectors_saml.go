package config

import (
	"fmt"
	"net/url"
	"slices"
	"time"
)

// TypeSAML is a SAML 2.0 identity provider (D76): Okta, Entra ID, ADFS, Shibboleth, Keycloak.
const TypeSAML = "saml"

// SAMLConnector is the sub-object saml: of a connector of type saml (docs/auth.md, "SAML 2.0"). We are
// the service provider (SP); the IdP is described by its metadata. Our SP key and certificate are read
// from files (Secrets), never written here.
type SAMLConnector struct {
	// MetadataURL is where the IdP publishes its metadata (https, or http for loopback addresses); it is
	// fetched at the first sign-in and again after MetadataRefresh. Exactly one of MetadataURL and
	// MetadataFile.
	MetadataURL string `json:"metadataURL,omitempty"`
	// MetadataFile is the IdP's metadata in a file (read again when the configuration is).
	MetadataFile string `json:"metadataFile,omitempty"`
	// MetadataCertificateFile is the IdP's certificate (PEM) its metadata must be signed with: when set,
	// metadata (fetched or from the file) without an enveloped XML signature by exactly this
	// certificate over its root element is refused, and only what the signature covers is read.
	MetadataCertificateFile string `json:"metadataCertificateFile,omitempty"`
	// MetadataRefresh is how long fetched metadata is used before it is fetched again (default 24h).
	MetadataRefresh Duration `json:"metadataRefresh,omitempty"`
	// EntityID is our SP's entity ID (default: our metadata URL, <issuer>/oauth2/saml/<id>/metadata).
	EntityID string `json:"entityID,omitempty"`
	// KeyFile and CertificateFile are our SP's signing key (PEM, RSA or ECDSA) and certificate (PEM):
	// published in our metadata, and signing the AuthnRequests (SignAuthnRequests).
	KeyFile         string `json:"keyFile,omitempty"`
	CertificateFile string `json:"certificateFile,omitempty"`
	// SignAuthnRequests signs every AuthnRequest, and our metadata says so (AuthnRequestsSigned). Without
	// it they are signed when the IdP's metadata asks for it (WantAuthnRequestsSigned); set it for an
	// IdP that requires signed requests without saying so in its metadata.
	SignAuthnRequests bool `json:"signAuthnRequests,omitempty"`
	// SingleLogout (D89) sends a signed LogoutRequest to the IdP when a person who signed in through it
	// signs out here, and takes the IdP's LogoutRequests at our SingleLogoutService. Unset: on when
	// the IdP's metadata names an HTTP-Redirect SingleLogoutService; false: never.
	SingleLogout *bool `json:"singleLogout,omitempty"`
	// NameIDFormat asked for: persistent (the default), emailAddress, unspecified or transient (only
	// with attributes.subject: a transient NameID changes at every sign-in).
	NameIDFormat string `json:"nameIDFormat,omitempty"`
	// Attributes names the assertion's attributes that carry the person's details.
	Attributes SAMLAttributes `json:"attributes,omitempty"`
	// ClockSkew is how far the IdP's clock may be from ours in the assertion's times (default 30s, at
	// most 3m).
	ClockSkew Duration `json:"clockSkew,omitempty"`
}

// SAMLAttributes names the attributes (by Name or FriendlyName) a SAML connector maps (defaults in
// brackets): Subject [none: the NameID], Email [email], Name [name], Groups [none: not read].
type SAMLAttributes struct {
	Subject string `json:"subject,omitempty"`
	Email   string `json:"email,omitempty"`
	Name    string `json:"name,omitempty"`
	Groups  string `json:"groups,omitempty"`
}

// The NameID formats a SAML connector may ask for, by their short names.
var samlNameIDFormats = map[string]string{
	"persistent":   "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent",
	"emailAddress": "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress",
	"unspecified":  "urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified",
	"transient":    "urn:oasis:names:tc:SAML:2.0:nameid-format:transient",
}

// SAMLNameIDFormat is the URN of a short NameID format name ("" for an unknown one).
func SAMLNameIDFormat(short string) string { return samlNameIDFormats[short] }

// The bounds of a SAML connector's clock skew: the service-provider library (crewjam/saml) allows
// three minutes itself, and our check is the stricter one.
const (
	SAMLDefaultClockSkew = 30 * time.Second
	SAMLMaxClockSkew     = 3 * time.Minute
	SAMLDefaultRefresh   = 24 * time.Hour
)

// SAMLMetadataPath and SAMLACSPath are a SAML connector's routes below the issuer.
func SAMLMetadataPath(id string) string { return "/oauth2/saml/" + id + "/metadata" }
func SAMLACSPath(id string) string      { return "/oauth2/saml/" + id + "/acs" }

// SAMLSLOPath is a SAML connector's SingleLogoutService below the issuer (D89).
func SAMLSLOPath(id string) string { return "/oauth2/saml/" + id + "/slo" }

// SingleLogoutWanted says whether single logout may be used with the connector's IdP: not when
// singleLogout is false (D89).
func (s *SAMLConnector) SingleLogoutWanted() bool { return s.SingleLogout == nil || *s.SingleLogout }

func (c *Connector) applySAMLDefaults() {
	if c.Name == "" {
		c.Name = c.ID
	}
	if c.GroupsPrefix == "" {
		c.GroupsPrefix = c.ID + ":"
	}
	s := c.SAML
	if s == nil {
		return // refused by validateSAML
	}
	if s.NameIDFormat == "" {
		s.NameIDFormat = "persistent"
	}
	if s.Attributes.Email == "" {
		s.Attributes.Email = "email"
	}
	if s.Attributes.Name == "" {
		s.Attributes.Name = "name"
	}
	if s.ClockSkew == 0 {
		s.ClockSkew = Duration(SAMLDefaultClockSkew)
	}
	if s.MetadataRefresh == 0 {
		s.MetadataRefresh = Duration(SAMLDefaultRefresh)
	}
}

// validateSAML checks a saml connector: its IdP's metadata, our key and certificate files, and none of
// the fields of the other types.
func (c Connector) validateSAML(at string) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(at+": "+format, args...)) }
	if c.ClientID != "" || c.ClientSecretFile != "" || c.Issuer != "" || c.Tenant != "" || len(c.Scopes) > 0 ||
		len(c.SigningAlgs) > 0 || c.Claims != (ConnectorClaims{}) || c.BaseURL != "" || len(c.Orgs) > 0 || c.Preset != PresetGeneric {
		bad("clientID, clientSecretFile, preset, issuer, tenant, scopes, signingAlgs, claims, baseURL and orgs are for types oidc and github; a saml connector is described by saml:")
	}
	s := c.SAML
	if s == nil {
		bad("saml: is required for type saml (the IdP's metadata, our key and certificate)")
		return errs
	}
	switch {
	case (s.MetadataURL == "") == (s.MetadataFile == ""):
		bad("saml: exactly one of metadataURL and metadataFile (the IdP's metadata)")
	case s.MetadataURL != "":
		if u, err := url.Parse(s.MetadataURL); err != nil || u.Host == "" || u.User != nil || u.Fragment != "" {
			bad("saml.metadataURL %q: the IdP's metadata URL (https, or http for localhost), without user info or fragment", s.MetadataURL)
		} else if u.Scheme != "https" && !(u.Scheme == "http" && loopbackHost(u.Hostname())) {
			bad("saml.metadataURL %q: must be https (http only for localhost and loopback addresses)", s.MetadataURL)
		}
	}
	if s.MetadataRefresh.D() < time.Minute {
		bad("saml.metadataRefresh: at least 1m")
	}
	if s.KeyFile == "" || s.CertificateFile == "" {
		bad("saml.keyFile and saml.certificateFile are required (our SP's signing key and certificate, PEM files)")
	}
	if s.EntityID != "" {
		if u, err := url.Parse(s.EntityID); err != nil || u.Scheme == "" || len(s.EntityID) > 1024 {
			bad("saml.entityID %q: an absolute URI (a URL or a URN), at most 1024 characters", s.EntityID)
		}
	}
	if SAMLNameIDFormat(s.NameIDFormat) == "" {
		names := make([]string, 0, len(samlNameIDFormats))
		for k := range samlNameIDFormats {
			names = append(names, k)
		}
		slices.Sort(names)
		bad("saml.nameIDFormat %q: one of %v", s.NameIDFormat, names)
	} else if s.NameIDFormat == "transient" && s.Attributes.Subject == "" {
		bad("saml.nameIDFormat transient changes at every sign-in: name a stable attribute in saml.attributes.subject")
	}
	if s.ClockSkew.D() < 0 || s.ClockSkew.D() > SAMLMaxClockSkew {
		bad("saml.clockSkew %s: between 0s and %s", s.ClockSkew.D(), SAMLMaxClockSkew)
	}
	return errs
}
