package config

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Connector is an upstream OpenID Connect provider people may sign in with (docs/auth.md, "Signing in
// with other providers"; D58). Its client secret is read from ClientSecretFile, never written here.
type Connector struct {
	// ID names the connector in clients' connectors lists, in connector_id and in the audit trail;
	// lower-case letters, digits and '-', at most 32.
	ID string `json:"id"`
	// Type is the protocol; "oidc" (the default and, for now, the only one).
	Type string `json:"type,omitempty"`
	// Preset fills the defaults of a known provider: google, microsoft or generic (the default).
	Preset string `json:"preset,omitempty"`
	// Name is the button's text ("Sign in with Name"); default the preset's name, else the ID.
	Name string `json:"name,omitempty"`
	// Issuer is the upstream's issuer URL, whose /.well-known/openid-configuration is read. The google
	// preset defaults it; microsoft builds it from Tenant.
	Issuer string `json:"issuer,omitempty"`
	// Tenant is Microsoft Entra ID's tenant (a tenant ID or domain, or organizations / common for any
	// tenant: then the ID token's issuer is checked against the tenant it names, tid).
	Tenant           string `json:"tenant,omitempty"`
	ClientID         string `json:"clientID"`
	ClientSecretFile string `json:"clientSecretFile,omitempty"`
	// Scopes asked for; default openid email profile.
	Scopes []string `json:"scopes,omitempty"`
	// SigningAlgs are the only algorithms an ID token may be signed with; default RS256.
	SigningAlgs []string `json:"signingAlgs,omitempty"`
	// Claims names the ID token's claims that carry the person's details (ConnectorClaims).
	Claims ConnectorClaims `json:"claims,omitempty"`
	// GroupsPrefix goes before each upstream group in our groups claim (default "<id>:"), so that an
	// upstream's groups never pass for the groups an operator sets; read only with claims.groups.
	GroupsPrefix string `json:"groupsPrefix,omitempty"`
	// TrustEmailVerified: this upstream's word that an address is verified is enough to sign in to the
	// existing local account with that address (linking them). Without it, or when the upstream does not
	// say the address is verified, the person links the upstream account from the account page after
	// signing in here. Default true for google, false otherwise.
	TrustEmailVerified *bool `json:"trustEmailVerified,omitempty"`
}

// ConnectorClaims names the ID token claims a connector maps (defaults in brackets): Subject [sub],
// Email [email], EmailVerified [email_verified; microsoft: xms_edov], Name [name], Groups [none: the
// upstream's groups are not read].
type ConnectorClaims struct {
	Subject       string `json:"subject,omitempty"`
	Email         string `json:"email,omitempty"`
	EmailVerified string `json:"emailVerified,omitempty"`
	Name          string `json:"name,omitempty"`
	Groups        string `json:"groups,omitempty"`
}

// The connector presets.
const (
	PresetGeneric   = "generic"
	PresetGoogle    = "google"
	PresetMicrosoft = "microsoft"
)

// Trusts reports whether the connector's verified addresses link to existing accounts.
func (c Connector) Trusts() bool { return c.TrustEmailVerified != nil && *c.TrustEmailVerified }

// MultiTenant reports whether the connector accepts any Microsoft tenant, whose ID tokens carry their
// own tenant's issuer (the discovery document's issuer holds "{tenantid}").
func (c Connector) MultiTenant() bool {
	return c.Preset == PresetMicrosoft && (c.Tenant == "common" || c.Tenant == "organizations" || c.Tenant == "consumers")
}

var connectorID = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

func (c *Connector) applyDefaults() {
	if c.Type == "" {
		c.Type = "oidc"
	}
	if c.Preset == "" {
		c.Preset = PresetGeneric
	}
	yes := true
	switch c.Preset {
	case PresetGoogle:
		if c.Issuer == "" {
			c.Issuer = "https://accounts.google.com"
		}
		if c.Name == "" {
			c.Name = "Google"
		}
		if c.TrustEmailVerified == nil { // Google says email_verified, and owns gmail.com
			c.TrustEmailVerified = &yes
		}
	case PresetMicrosoft:
		if c.Tenant == "" {
			c.Tenant = "organizations"
		}
		if c.Issuer == "" {
			c.Issuer = "https://login.microsoftonline.com/" + c.Tenant + "/v2.0"
		}
		if c.Name == "" {
			c.Name = "Microsoft"
		}
		// Entra sends no email_verified; its optional claim xms_edov says the address's domain is
		// verified by the tenant (absent: not verified, no link without the account page).
		if c.Claims.EmailVerified == "" {
			c.Claims.EmailVerified = "xms_edov"
		}
	}
	if c.Name == "" {
		c.Name = c.ID
	}
	if len(c.Scopes) == 0 {
		c.Scopes = []string{"openid", "email", "profile"}
	}
	if c.GroupsPrefix == "" {
		c.GroupsPrefix = c.ID + ":"
	}
	if len(c.SigningAlgs) == 0 {
		c.SigningAlgs = []string{"RS256"}
	}
	cl := &c.Claims
	for _, d := range []struct {
		f   *string
		def string
	}{{&cl.Subject, "sub"}, {&cl.Email, "email"}, {&cl.EmailVerified, "email_verified"}, {&cl.Name, "name"}} {
		if *d.f == "" {
			*d.f = d.def
		}
	}
}

// signingAlgs an ID token may be pinned to (asymmetric only: a client secret never signs).
var signingAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

func (c Connector) validate(at string) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(at+": "+format, args...)) }
	if !connectorID.MatchString(c.ID) {
		bad("id %q: lower-case letters, digits and '-', at most 32, starting with a letter or digit", c.ID)
	}
	if c.Type != "oidc" {
		bad("type %q: only oidc is supported", c.Type)
	}
	if !slices.Contains([]string{PresetGeneric, PresetGoogle, PresetMicrosoft}, c.Preset) {
		bad("preset %q: one of generic, google, microsoft", c.Preset)
	}
	if u, err := url.Parse(c.Issuer); c.Issuer == "" || err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		bad("issuer %q: the upstream's issuer URL is required (https, or http for localhost)", c.Issuer)
	} else if u.Scheme != "https" && !(u.Scheme == "http" && loopbackHost(u.Hostname())) {
		bad("issuer %q: must be https (http only for localhost and loopback addresses)", c.Issuer)
	}
	if c.ClientID == "" {
		bad("clientID is required")
	}
	if c.ClientSecretFile == "" {
		bad("clientSecretFile is required (the upstream's client secret, in a file)")
	}
	if !slices.Contains(c.Scopes, "openid") {
		bad("scopes must include openid")
	}
	for _, alg := range c.SigningAlgs {
		if !slices.Contains(signingAlgs, alg) {
			bad("signingAlgs: %q is not one of %s", alg, strings.Join(signingAlgs, ", "))
		}
	}
	if len(c.Name) > 64 {
		bad("name: at most 64 bytes")
	}
	return errs
}

// validateConnectors checks the connectors and the clients' lists of them.
func (a Auth) validateConnectors() []error {
	var errs []error
	seen := map[string]bool{}
	for i, c := range a.Connectors {
		errs = append(errs, c.validate(fmt.Sprintf("auth.connectors[%d]", i))...)
		if seen[c.ID] {
			errs = append(errs, fmt.Errorf("auth.connectors[%d]: duplicate id %q", i, c.ID))
		}
		seen[c.ID] = true
	}
	for _, cl := range a.Clients {
		for _, id := range cl.Connectors {
			if !seen[id] {
				errs = append(errs, fmt.Errorf("auth.clients[%s].connectors: %q is not in auth.connectors", cl.ClientID, id))
			}
		}
	}
	return errs
}

// ConnectorByID is the connector with that ID.
func (a Auth) ConnectorByID(id string) (Connector, bool) {
	for _, c := range a.Connectors {
		if c.ID == id {
			return c, true
		}
	}
	return Connector{}, false
}
