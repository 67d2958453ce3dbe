package config

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Connector is an upstream provider people may sign in with: an OpenID Connect provider (type oidc,
// D58), GitHub (type github, D64) or a SAML 2.0 identity provider (type saml, D76) (docs/auth.md, "Signing in with other providers"). Its client secret
// is read from ClientSecretFile, never written here.
type Connector struct {
	// ID names the connector in clients' connectors lists, in connector_id and in the audit trail;
	// lower-case letters, digits and '-', at most 32.
	ID string `json:"id"`
	// Type is the protocol: "oidc" (the default), "github" (OAuth 2.0 and GitHub's REST API) or "ldap"
	// (a username and password checked against a directory, D75).
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

	// BaseURL is GitHub's web address (type github only): https://github.com (the default, whose API is
	// https://api.github.com), or a GitHub Enterprise Server's, whose API is at <baseURL>/api/v3.
	BaseURL string `json:"baseURL,omitempty"`
	// Orgs lets in only members of these GitHub organisations (type github only; empty: any GitHub
	// account). The groups claim then carries only these organisations and their teams.
	Orgs []string `json:"orgs,omitempty"`

	// Staying correct after sign-in (docs/auth.md, D78): a grant made through a connector that can
	// re-check its accounts is checked with the upstream again at its refreshes.

	// OfflineAccess asks the upstream for a refresh token (the offline_access scope, type oidc; the
	// google preset sends Google's access_type=offline instead), which the re-checks at refresh use; an
	// upstream that gives one unasked is re-checked too.
	OfflineAccess bool `json:"offlineAccess,omitempty"`
	// RecheckEvery is the least time between two re-checks of one grant (default 15m, the default
	// access token lifetime; 1s re-checks at every refresh, as Dex does; at most 24h).
	RecheckEvery Duration `json:"recheckEvery,omitempty"`
	// OnUpstreamDown is what a refresh does when the re-check cannot reach the upstream: keep (the
	// default: the grant refreshes, the audit trail says the re-check was skipped) or end (the grant
	// ends: invalid_grant).
	OnUpstreamDown string `json:"onUpstreamDown,omitempty"`
	// LDAP is the directory of a connector of type ldap (connectors_ldap.go, D75).
	LDAP *LDAPConnector `json:"ldap,omitempty"`
	// SAML describes a SAML 2.0 identity provider (type saml only, D76; connectors_saml.go).
	SAML *SAMLConnector `json:"saml,omitempty"`
}

// What a refresh does when the upstream of its re-check is down (Connector.OnUpstreamDown).
const (
	UpstreamDownKeep = "keep"
	UpstreamDownEnd  = "end"
)

// DefaultRecheckEvery is RecheckEvery's default.
const DefaultRecheckEvery = Duration(15 * time.Minute)

// recheckDefaults fill the re-check's defaults (every type).
func (c *Connector) recheckDefaults() {
	if c.RecheckEvery == 0 {
		c.RecheckEvery = DefaultRecheckEvery
	}
	if c.OnUpstreamDown == "" {
		c.OnUpstreamDown = UpstreamDownKeep
	}
}

// validateRecheck checks the re-check's keys.
func (c Connector) validateRecheck(at string) []error {
	var errs []error
	if c.RecheckEvery.D() < time.Second || c.RecheckEvery.D() > 24*time.Hour {
		errs = append(errs, fmt.Errorf("%s: recheckEvery %s: between 1s and 24h", at, c.RecheckEvery.D()))
	}
	if c.OnUpstreamDown != UpstreamDownKeep && c.OnUpstreamDown != UpstreamDownEnd {
		errs = append(errs, fmt.Errorf("%s: onUpstreamDown %q: keep or end", at, c.OnUpstreamDown))
	}
	if c.OfflineAccess && c.Type != TypeOIDC {
		errs = append(errs, fmt.Errorf("%s: offlineAccess is for type oidc", at))
	}
	return errs
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

// The connector types.
const (
	TypeOIDC   = "oidc"
	TypeGitHub = "github"
)

// GitHubURL is GitHub's own web address, the default baseURL of a github connector.
const GitHubURL = "https://github.com"

// The connector presets.
const (
	PresetGeneric   = "generic"
	PresetGoogle    = "google"
	PresetMicrosoft = "microsoft"
)

// Trusts reports whether the connector's verified addresses link to existing accounts.
func (c Connector) Trusts() bool { return c.TrustEmailVerified != nil && *c.TrustEmailVerified }

// ReadsGroups reports whether signing in through the connector sets the account's groups under its
// prefix: an OpenID connector with a groups claim mapped, and every GitHub connector (organisations and
// teams).
func (c Connector) ReadsGroups() bool {
	return c.Type == TypeGitHub || c.Claims.Groups != "" || c.readsLDAPGroups() || (c.SAML != nil && c.SAML.Attributes.Groups != "")
}

// MultiTenant reports whether the connector accepts any Microsoft tenant, whose ID tokens carry their
// own tenant's issuer (the discovery document's issuer holds "{tenantid}").
func (c Connector) MultiTenant() bool {
	return c.Preset == PresetMicrosoft && (c.Tenant == "common" || c.Tenant == "organizations" || c.Tenant == "consumers")
}

var connectorID = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

func (c *Connector) applyDefaults() {
	if c.Type == "" {
		c.Type = TypeOIDC
	}
	if c.Preset == "" {
		c.Preset = PresetGeneric
	}
	c.recheckDefaults()
	yes := true
	if c.Type == TypeGitHub {
		c.applyGitHubDefaults()
		return
	}
	if c.Type == TypeLDAP {
		c.applyLDAPDefaults()
		return
	}
	if c.Type == TypeSAML {
		c.applySAMLDefaults()
		return
	}
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

// applyGitHubDefaults: GitHub's address, its name, and the scopes its REST API needs for the profile,
// the addresses (user:email) and the organisations and teams (read:org). GitHub tells which addresses
// are verified (GET /user/emails), and a verified primary one is trusted by default as Google's is.
func (c *Connector) applyGitHubDefaults() {
	yes := true
	if c.BaseURL == "" {
		c.BaseURL = GitHubURL
	}
	c.BaseURL = strings.TrimSuffix(c.BaseURL, "/")
	if c.Name == "" {
		c.Name = "GitHub"
	}
	if c.TrustEmailVerified == nil {
		c.TrustEmailVerified = &yes
	}
	if len(c.Scopes) == 0 {
		c.Scopes = []string{"read:user", "user:email", "read:org"}
	}
	if c.GroupsPrefix == "" {
		c.GroupsPrefix = c.ID + ":"
	}
}

// githubOrg is a GitHub organisation's login: letters, digits and inner hyphens, at most 39.
var githubOrg = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,37}[A-Za-z0-9])?$`)

// signingAlgs an ID token may be pinned to (asymmetric only: a client secret never signs).
var signingAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

func (c Connector) validate(at string) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(at+": "+format, args...)) }
	if !connectorID.MatchString(c.ID) {
		bad("id %q: lower-case letters, digits and '-', at most 32, starting with a letter or digit", c.ID)
	}
	if utf8.RuneCountInString(c.Name) > 64 {
		bad("name: at most 64 characters")
	}
	switch c.Type {
	case TypeLDAP:
		return append(append(errs, c.validateLDAP(at)...), c.validateRecheck(at)...)
	case TypeSAML:
		return append(append(errs, c.validateSAML(at)...), c.validateRecheck(at)...)
	}
	if c.SAML != nil {
		bad("saml: is for type saml")
	}
	if c.ClientID == "" {
		bad("clientID is required")
	}
	if c.ClientSecretFile == "" {
		bad("clientSecretFile is required (the upstream's client secret, in a file)")
	}
	if c.LDAP != nil {
		bad("ldap is for type ldap")
	}
	switch c.Type {
	case TypeOIDC:
		errs = append(errs, c.validateOIDC(at)...)
	case TypeGitHub:
		errs = append(errs, c.validateGitHub(at)...)
	default:
		bad("type %q: one of oidc, github, ldap, saml", c.Type)
	}
	errs = append(errs, c.validateRecheck(at)...)
	return errs
}

// validateGitHub checks a github connector: its address, its organisations, and none of the fields
// that only an OpenID provider has.
func (c Connector) validateGitHub(at string) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(at+": "+format, args...)) }
	if u, err := url.Parse(c.BaseURL); err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil || (u.Path != "" && u.Path != "/") {
		bad("baseURL %q: GitHub's address, like https://github.example.com (no path)", c.BaseURL)
	} else if u.Scheme != "https" && !(u.Scheme == "http" && loopbackHost(u.Hostname())) {
		bad("baseURL %q: must be https (http only for localhost and loopback addresses)", c.BaseURL)
	}
	if c.Preset != PresetGeneric {
		bad("preset %q: a github connector takes none", c.Preset)
	}
	if c.Issuer != "" || c.Tenant != "" || len(c.SigningAlgs) > 0 || c.Claims != (ConnectorClaims{}) {
		bad("issuer, tenant, signingAlgs and claims are for type oidc; a github connector reads GitHub's REST API")
	}
	if len(c.Orgs) > 100 {
		bad("orgs: at most 100")
	}
	for _, o := range c.Orgs {
		if !githubOrg.MatchString(o) {
			bad("orgs: %q is not a GitHub organisation name", o)
		}
	}
	return errs
}

// validateOIDC checks an OpenID connector.
func (c Connector) validateOIDC(at string) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(at+": "+format, args...)) }
	if c.BaseURL != "" || len(c.Orgs) > 0 {
		bad("baseURL and orgs are for type github")
	}
	if !slices.Contains([]string{PresetGeneric, PresetGoogle, PresetMicrosoft}, c.Preset) {
		bad("preset %q: one of generic, google, microsoft", c.Preset)
	}
	if u, err := url.Parse(c.Issuer); c.Issuer == "" || err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		bad("issuer %q: the upstream's issuer URL is required (https, or http for localhost), without user info, query or fragment", c.Issuer)
	} else if u.Scheme != "https" && !(u.Scheme == "http" && loopbackHost(u.Hostname())) {
		bad("issuer %q: must be https (http only for localhost and loopback addresses)", c.Issuer)
	}
	if !slices.Contains(c.Scopes, "openid") {
		bad("scopes must include openid")
	}
	for _, alg := range c.SigningAlgs {
		if !slices.Contains(signingAlgs, alg) {
			bad("signingAlgs: %q is not one of %s", alg, strings.Join(signingAlgs, ", "))
		}
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
