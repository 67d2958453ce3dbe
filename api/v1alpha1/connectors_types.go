package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ConnectorSpec is an upstream provider people may sign in with (spec.auth.connectors[]): an OpenID
// Connect provider with discovery (type oidc: Google, Microsoft Entra ID, Okta, Keycloak, GitLab, Dex),
// GitHub (type github) or a SAML 2.0 identity provider (type saml, D76). The operator renders it into
// the auth service's auth.connectors, the secrets as mounted files (clientSecretRef, saml.keyRef and
// saml.certificateRef), never as text in the configuration. The rules here are
// the auth service's own (docs/auth.md, "Signing in with other providers"; D58, D64).
//
// +kubebuilder:validation:XValidation:rule="(has(self.type) && self.type in ['github', 'ldap', 'saml']) || has(self.issuer) || (has(self.preset) && self.preset != 'generic')",message="issuer is required for an oidc connector without the google or microsoft preset"
// +kubebuilder:validation:XValidation:rule="(has(self.type) && self.type == 'github') || !has(self.scopes) || size(self.scopes) == 0 || 'openid' in self.scopes",message="scopes must include openid"
// +kubebuilder:validation:XValidation:rule="(has(self.type) && self.type == 'github') || (!has(self.baseURL) && !has(self.orgs))",message="baseURL and orgs are for type github"
// +kubebuilder:validation:XValidation:rule="!has(self.type) || self.type != 'github' || (!has(self.issuer) && !has(self.tenant) && !has(self.signingAlgs) && !has(self.claims))",message="issuer, tenant, signingAlgs and claims are for type oidc; a github connector reads GitHub's REST API"
// +kubebuilder:validation:XValidation:rule="!has(self.type) || self.type != 'github' || !has(self.preset) || self.preset == 'generic'",message="a github connector takes no preset"
// +kubebuilder:validation:XValidation:rule="!has(self.offlineAccess) || !self.offlineAccess || !has(self.type) || self.type == 'oidc'",message="offlineAccess is for type oidc"
// +kubebuilder:validation:XValidation:rule="(has(self.type) && self.type == 'ldap') == has(self.ldap)",message="ldap is required for type ldap, and only for it",fieldPath=".ldap"
// +kubebuilder:validation:XValidation:rule="(has(self.type) && self.type == 'saml') == has(self.saml)",message="saml is required for type saml, and only for it"
// +kubebuilder:validation:XValidation:rule="(has(self.type) && self.type in ['ldap', 'saml']) || (has(self.clientID) && size(self.clientID) > 0)",message="clientID is required for oidc and github connectors",fieldPath=".clientID"
// +kubebuilder:validation:XValidation:rule="(has(self.type) && self.type in ['ldap', 'saml']) != has(self.clientSecretRef)",message="clientSecretRef is required for oidc and github connectors; an ldap connector has ldap.bindPasswordRef, a saml connector saml.keyRef",fieldPath=".clientSecretRef"
// +kubebuilder:validation:XValidation:rule="!has(self.type) || self.type != 'ldap' || (!has(self.clientID) && !has(self.issuer) && !has(self.tenant) && !has(self.scopes) && !has(self.signingAlgs) && !has(self.claims) && !has(self.baseURL) && !has(self.orgs) && (!has(self.preset) || self.preset == 'generic'))",message="clientID, issuer, tenant, preset, scopes, signingAlgs, claims, baseURL and orgs are not for type ldap; its settings are under ldap"
// +kubebuilder:validation:XValidation:rule="!has(self.type) || self.type != 'saml' || (!has(self.clientID) && !has(self.clientSecretRef) && !has(self.issuer) && !has(self.tenant) && !has(self.scopes) && !has(self.signingAlgs) && !has(self.claims) && !has(self.baseURL) && !has(self.orgs) && (!has(self.preset) || self.preset == 'generic'))",message="clientID, clientSecretRef, preset, issuer, tenant, scopes, signingAlgs, claims, baseURL and orgs are for types oidc and github; a saml connector is described by saml"
type ConnectorSpec struct {
	// ID names the connector in oauthClients[].connectors, in the connector_id parameter and in the audit
	// trail: lower-case letters, digits and '-', at most 32. It is also the key its linked accounts are
	// stored under: changing it unlinks them.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9-]*$`
	ID string `json:"id"`
	// Type is the protocol: oidc (the default), github, ldap (an LDAP directory or Active Directory, D75)
	// or saml (a SAML 2.0 identity provider, D76).
	// +optional
	// +kubebuilder:validation:Enum=oidc;github;ldap;saml
	Type string `json:"type,omitempty"`
	// Preset fills a known OpenID provider's defaults: google (issuer, name, trustEmailVerified true) or
	// microsoft (the issuer of tenant, Entra's xms_edov claim); generic (the default) fills none.
	// +optional
	// +kubebuilder:validation:Enum=generic;google;microsoft
	Preset string `json:"preset,omitempty"`
	// Name is the button's text ("Sign in with Name"); default the preset's name (GitHub for github),
	// else the ID.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name,omitempty"`
	// Issuer is the OpenID provider's issuer URL, whose /.well-known/openid-configuration is read: https
	// (http only for localhost and 127.0.0.1), no query or fragment. Required unless preset is google or
	// microsoft.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^https://([A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?|[[][0-9A-Fa-f:.]+[]])(:[0-9]{1,5})?(/([-A-Za-z0-9._~!$&()*+=:@/]|%[0-9A-Fa-f]{2})*)?$') || self.matches('^http://(localhost|127[.]0[.]0[.]1|[[]::1[]])(:[0-9]{1,5})?(/([-A-Za-z0-9._~!$&()*+=:@/]|%[0-9A-Fa-f]{2})*)?$')",message="issuer must be an https URL (http only for localhost, 127.0.0.1 and [::1]) without user info, query or fragment"
	Issuer string `json:"issuer,omitempty"`
	// Tenant is Microsoft Entra ID's tenant (preset microsoft): a tenant ID or domain, or organizations
	// (the default) or common for any tenant, whose ID tokens are checked against their own tenant.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9.-]*$`
	Tenant string `json:"tenant,omitempty"`
	// ClientID is this platform's client ID at the provider (an OAuth app's at GitHub). Required for
	// types oidc and github.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ClientID string `json:"clientID,omitempty"`
	// ClientSecretRef names the key of a Secret holding the client secret at the provider. The operator
	// mounts it into the auth pods; a missing Secret or key is Degraded (ConnectorSecretMissing).
	// Required for types oidc and github.
	// +optional
	ClientSecretRef SecretKeySelector `json:"clientSecretRef,omitzero"`
	// Scopes asked for: default openid email profile (oidc), read:user user:email read:org (github).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=256
	// +kubebuilder:validation:items:Pattern=`^[!#-\[\]-~]+$`
	Scopes []string `json:"scopes,omitempty"`
	// SigningAlgs are the only algorithms the provider's ID tokens may be signed with (oidc); default
	// RS256. Asymmetric only.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:Enum=RS256;RS384;RS512;PS256;PS384;PS512;ES256;ES384;ES512;EdDSA
	SigningAlgs []string `json:"signingAlgs,omitempty"`
	// Claims names the ID token's claims that carry the person's details (oidc).
	// +optional
	Claims *ConnectorClaims `json:"claims,omitempty"`
	// GroupsPrefix goes before each upstream group in the groups claim (default "<id>:"), so that an
	// upstream's groups never pass for the groups an operator sets.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._:/@+-]+$`
	GroupsPrefix string `json:"groupsPrefix,omitempty"`
	// TrustEmailVerified: the provider's word that an address is verified signs the person in to the
	// existing account with that address (linking them). Default true for google and github, false
	// otherwise; without it people link from the account page.
	// +optional
	TrustEmailVerified *bool `json:"trustEmailVerified,omitempty"`
	// BaseURL is GitHub's address (type github): https://github.com (the default), or a GitHub
	// Enterprise Server's, like https://github.example.com (its API at /api/v3).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^https://([A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?|[[][0-9A-Fa-f:.]+[]])(:[0-9]{1,5})?/?$') || self.matches('^http://(localhost|127[.]0[.]0[.]1|[[]::1[]])(:[0-9]{1,5})?/?$')",message="baseURL must be https://host[:port] (http only for localhost, 127.0.0.1 and [::1]) with no path"
	BaseURL string `json:"baseURL,omitempty"`
	// Orgs lets in only members of these GitHub organisations (type github); empty: any GitHub account.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=39
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$`
	Orgs []string `json:"orgs,omitempty"`
	// OfflineAccess asks the provider for a refresh token (the offline_access scope, with
	// prompt=consent; for the google preset access_type=offline instead of the scope; type oidc), with which each grant signed in through the connector is checked with
	// the provider again at its refreshes: a person the provider removed, or whose session it revoked,
	// loses the grant (docs/auth.md, "Staying correct after sign-in").
	// +optional
	OfflineAccess bool `json:"offlineAccess,omitempty"`
	// RecheckEvery is the least time between two re-checks of one grant with the provider; default 15m
	// (1s: at every refresh).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="recheckEvery must be between 1s and 24h"
	RecheckEvery *metav1.Duration `json:"recheckEvery,omitempty"`
	// OnUpstreamDown is what a refresh does when its re-check cannot reach the provider: keep (the
	// default: the grant refreshes; the audit trail says the re-check was skipped) or end (the grant
	// ends; the person signs in again).
	// +optional
	// +kubebuilder:validation:Enum=keep;end
	OnUpstreamDown string `json:"onUpstreamDown,omitempty"`
	// LDAP is the directory of a connector of type ldap (connectors_ldap_types.go).
	// +optional
	LDAP *LDAPConnectorSpec `json:"ldap,omitempty"`
	// SAML describes a SAML 2.0 identity provider (type saml only; D76).
	// +optional
	SAML *SAMLConnectorSpec `json:"saml,omitempty"`
}

// ConnectorClaims names the ID token's claims a connector maps (defaults: sub, email, email_verified
// (microsoft: xms_edov), name; groups: none, the provider's groups are not read).
type ConnectorClaims struct {
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Subject string `json:"subject,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Email string `json:"email,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=128
	EmailVerified string `json:"emailVerified,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Groups string `json:"groups,omitempty"`
}
