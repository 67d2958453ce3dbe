package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations a user may set on a FormsService.
const (
	// RotateSigningKeyAnnotation starts a rotation of the token signing key when its value changes (any
	// value, for example a date): the operator publishes a new key in the JWKS, promotes it once every
	// auth pod serves it and the JWKS caches have expired, and keeps the previous key verifying until the
	// tokens signed with it have expired (docs/operator.md, "Signing keys").
	RotateSigningKeyAnnotation = "platform.formsservice.io/rotate-signing-key"
	// SigningKeyIDAnnotation is written by the operator: the key ID (RFC 7638 thumbprint) of the current
	// signing key it last saw in the signing-key Secret. It is the record that the FormsService has a
	// key, so that a Secret that vanishes is reported (Stalled, SigningKeyVanished) instead of being
	// replaced by a new key that signs everyone out.
	SigningKeyIDAnnotation = "platform.formsservice.io/signing-key-id"
	// ReplaceVanishedSigningKeyAnnotation, set by a person to the key ID a SigningKeyVanished condition
	// names, lets the operator generate a new key in place of the vanished one: every signed-in user
	// must sign in again and no refresh token from before refreshes. A value that names another key
	// does nothing, so an annotation left behind never answers a later loss.
	ReplaceVanishedSigningKeyAnnotation = "platform.formsservice.io/replace-vanished-signing-key"
	// RemoveManagedRedisAnnotation, set by a person to the UID of the managed Redis's StatefulSet that a
	// ManagedRedisRetained condition names, lets the operator delete the managed Redis of a FormsService
	// whose spec.redis.addresses names another store (D72). Until then that Redis keeps running, unused.
	// A value that names another StatefulSet (another resource's, or a store since created again) does
	// nothing, so an annotation copied or left behind never removes a store nobody looked at.
	RemoveManagedRedisAnnotation = "platform.formsservice.io/remove-managed-redis"
)

// Phases of a signing-key rotation (status.signingKey.phase).
const (
	// SigningKeyStable: one key signs; no rotation is under way.
	SigningKeyStable = "Stable"
	// SigningKeyPublishing: the next key is in the Secret and the auth configuration; the auth pods are
	// rolling to serve it in their JWKS.
	SigningKeyPublishing = "Publishing"
	// SigningKeyPublished: every auth pod serves the next key; the operator waits until every JWKS a
	// verifier may have cached before lists it (promoteAfter).
	SigningKeyPublished = "Published"
	// SigningKeyPromoting: the next key became current; the auth pods are rolling to sign with it.
	SigningKeyPromoting = "Promoting"
	// SigningKeyRetiring: every auth pod signs with the new key; the previous one still verifies until
	// the tokens signed with it have expired (previousRetiresAt).
	SigningKeyRetiring = "Retiring"
	// SigningKeyExternal: the keys come from spec.auth.signingKeySecretRef; the operator does not
	// rotate them.
	SigningKeyExternal = "External"
)

// Condition types reported in status.conditions.
const (
	// ConditionReady is True when every service has its desired replicas available, and the managed Redis
	// serves: its one pod, or two of the highly available set's three.
	ConditionReady = "Ready"
	// ConditionRedisHighAvailability, only with spec.redis.managed.highAvailability, is True when all three
	// Redis pods are available and False when the set runs with fewer (it then survives no further loss).
	ConditionRedisHighAvailability = "RedisHighAvailability"
	// ConditionProgressing is True while a Deployment or the Redis StatefulSet is rolling out.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when the operator cannot make the platform match the resource (a missing
	// Secret, a failed rollout, an object the API server refused).
	ConditionDegraded = "Degraded"
	// ConditionManagedRedisRetained, present only while spec.redis.addresses names another store and the
	// managed Redis of before still runs, is True: the operator keeps that Redis, unused, until
	// RemoveManagedRedisAnnotation names it (D72). It never affects Ready or Degraded.
	ConditionManagedRedisRetained = "ManagedRedisRetained"
)

// Origin is a browser origin allowed to post to the forms: scheme://host[:port] in lower case with
// nothing after it, or https://*.example.com[:port] for every subdomain of a domain.
//
// +kubebuilder:validation:MinLength=8
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:XValidation:rule="self.matches('^https?://([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*|[[][0-9a-f:.]+[]])(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$') || self.matches('^https://[*][.][a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)+(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?$')",message="an origin is scheme://host[:port] in lower case with no path and no trailing slash (https://app.example.com), or https://*.example.com for every subdomain"
type Origin string

// RedirectURI is an OAuth redirect URI, matched exactly. It must use https, except on the loopback host.
//
// +kubebuilder:validation:MinLength=10
// +kubebuilder:validation:MaxLength=512
// +kubebuilder:validation:XValidation:rule="self.matches('^https://[^/?#@ ]+([/?][^# ]*)?$') || self.matches('^http://(localhost|127[.]0[.]0[.]1|[[]::1[]])(:[0-9]{1,5})?([/?][^# ]*)?$')",message="a redirect URI must use https (http is allowed only for localhost, 127.0.0.1 and [::1]) and must not contain a fragment or spaces"
type RedirectURI string

// Audience is an API (a resource server) that access tokens may be issued for: an absolute URI without a
// fragment (RFC 8707), such as https://api.example.com.
//
// +kubebuilder:validation:MinLength=8
// +kubebuilder:validation:MaxLength=512
// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z][a-z0-9+.-]*://[^/?#@ ]+([/?][^# ]*)?$')",message="an audience is an absolute URI with a host and without a fragment or spaces (https://api.example.com)"
type Audience string

// Scope is an OAuth scope a client may request.
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=64
// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.:/-]+$`
type Scope string

// HostPort is host:port, e.g. redis.example.internal:6379 or [fd00::1]:6379.
//
// +kubebuilder:validation:MaxLength=260
// +kubebuilder:validation:XValidation:rule="self.matches('^([A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?|[[][0-9A-Fa-f:.]+[]]):[0-9]{1,5}$')",message="must be host:port, like redis.example.internal:6379"
type HostPort string

// SecretReference names a Secret in the FormsService's namespace.
type SecretReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// SigningKeyRetention is what happens to the generated signing-key Secret when its FormsService goes.
type SigningKeyRetention string

// Signing-key retention policies (spec.auth.signingKeyRetention).
const (
	// SigningKeyRetain keeps the signing-key Secret when the FormsService is deleted (the default).
	SigningKeyRetain SigningKeyRetention = "Retain"
	// SigningKeyDelete deletes it with the FormsService (an owner reference).
	SigningKeyDelete SigningKeyRetention = "Delete"
)

// SecretKeySelector names one key of a Secret in the FormsService's namespace.
type SecretKeySelector struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key in the Secret's data.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

// FormsServiceSpec is what a platform team declares.
//
// +kubebuilder:validation:XValidation:rule="has(self.publicURL) || has(self.ingress) || has(self.gateway)",message="set publicURL, ingress.host or gateway.host: the OAuth issuer needs the platform's public base URL"
// +kubebuilder:validation:XValidation:rule="!has(self.restoreFrom) || has(oldSelf.restoreFrom)",message="restoreFrom is set only when the FormsService is created: restore into a running platform with formsservice restore"
// +kubebuilder:validation:XValidation:rule="!has(self.oauthClients) || self.oauthClients.all(c, !has(c.connectors) || c.connectors.all(id, has(self.auth) && has(self.auth.connectors) && self.auth.connectors.exists(k, k.id == id)))",message="an oauthClients[].connectors entry must be the id of one of spec.auth.connectors"
// +kubebuilder:validation:XValidation:rule="!has(self.forms) || !has(self.forms.declared) || self.forms.declared.all(f, !has(f.origins) || f.origins.all(o, has(self.allowedOrigins) && o in self.allowedOrigins))",message="a declared form's origins must be some of allowedOrigins, spelled exactly as there (a form's origins narrow them)"
type FormsServiceSpec struct {
	// Image runs every service (`formsservice forms|auth|health`). Defaults to the operator's own
	// service image (its --service-image flag).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`
	// ImagePullPolicy of the service containers.
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// ImagePullSecrets for a private registry.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// RunAsUser pins the user (and group and fsGroup) of the forms, auth and health pods. Unset: the
	// image's own user (65532 in the formsservice image) and no fsGroup, so a platform that assigns the
	// user itself (OpenShift's restricted-v2 gives each namespace a range and refuses others) can run
	// them. The managed Redis has its own (redis.managed.runAsUser).
	// +optional
	// +kubebuilder:validation:Minimum=1
	RunAsUser *int64 `json:"runAsUser,omitempty"`

	// PublicURL is the base URL the platform is reached at and the OAuth issuer, e.g.
	// https://id.example.com. Defaults to https://<ingress.host>.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^https?://[^/?#@ ]+$')",message="publicURL is scheme://host[:port] with no path, like https://id.example.com"
	PublicURL string `json:"publicURL,omitempty"`

	// LogLevel of every service.
	// +optional
	// +kubebuilder:default=info
	// +kubebuilder:validation:Enum=debug;info;warn;error
	LogLevel string `json:"logLevel,omitempty"`

	// AllowedOrigins may post to /contact and /waitlist (browsers send their Origin header; others get
	// 403). A change reaches the running services without a restart.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	AllowedOrigins []Origin `json:"allowedOrigins,omitempty"`

	// OAuthClients are the web apps that sign people in with this platform. A change reaches the running
	// auth service without a restart.
	// +optional
	// +listType=map
	// +listMapKey=clientID
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:XValidation:rule="self.all(c, self.exists_one(d, d.clientID == c.clientID))",message="clientID values must be unique"
	OAuthClients []OAuthClient `json:"oauthClients,omitempty"`

	// TrustedProxies are the CIDRs of the ingress controller (or load balancer) whose X-Forwarded-For
	// header is believed. Without them every request appears to come from the ingress, and the per-IP
	// rate limits and sign-in throttling apply to everyone at once.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:items:Pattern=`^[0-9a-fA-F:.]+(/[0-9]{1,3})?$`
	TrustedProxies []string `json:"trustedProxies,omitempty"`

	// Redis is the store. Leave addresses empty to have the operator run a single Redis with persistence.
	// +optional
	// +kubebuilder:default={}
	Redis RedisSpec `json:"redis,omitempty"`

	// Forms configures the forms service (POST /contact, POST /waitlist).
	// +optional
	// +kubebuilder:default={}
	Forms FormsSpec `json:"forms,omitempty"`

	// Auth configures the OAuth 2.0 / OpenID Connect provider.
	// +optional
	// +kubebuilder:default={}
	Auth AuthSpec `json:"auth,omitempty"`

	// Health configures the platform health service (GET /health).
	// +optional
	// +kubebuilder:default={}
	Health HealthSpec `json:"health,omitempty"`

	// Ingress routes /contact and /waitlist to forms, /oauth2 and /.well-known to auth and /health to
	// health. Without it the operator creates no Ingress (bring your own routing to the Services).
	// +optional
	Ingress *IngressSpec `json:"ingress,omitempty"`

	// Gateway routes the same paths as Ingress with Gateway API HTTPRoutes attached to the Gateway(s) it
	// names (gateway_types.go); an alternative to ingress, or both during a migration.
	// +optional
	Gateway *GatewaySpec `json:"gateway,omitempty"`

	// Monitoring asks for Prometheus Operator ServiceMonitors for the three services (see
	// monitoring_types.go); the operator copes when the Prometheus Operator is not installed.
	// +optional
	Monitoring *MonitoringSpec `json:"monitoring,omitempty"`

	// TopologySpread spreads the services' pods across zones and nodes (production_types.go). Default:
	// both ScheduleAnyway with maxSkew 1.
	// +optional
	TopologySpread *TopologySpreadSpec `json:"topologySpread,omitempty"`

	// NetworkPolicy asks for NetworkPolicies around the services (production_types.go). Without it only
	// the managed Redis has one.
	// +optional
	NetworkPolicy *NetworkPolicySpec `json:"networkPolicy,omitempty"`

	// NodeSelector and Tolerations apply to every pod the operator runs.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Console serves the admin console at <issuer>/console/ (console_types.go); off by default.
	// +optional
	Console *ConsoleSpec `json:"console,omitempty"`

	// Backup makes backups of the store on a schedule and on request (backup_types.go).
	// +optional
	Backup *BackupSpec `json:"backup,omitempty"`
	// RestoreFrom fills the new platform's (empty) store from a backup before the services start
	// (backup_types.go).
	// +optional
	RestoreFrom *RestoreSource `json:"restoreFrom,omitempty"`
	// UpdatePolicy says when an operator upgrade may move the services to its image (update_types.go).
	// +optional
	UpdatePolicy *UpdatePolicy `json:"updatePolicy,omitempty"`
}

// OAuthClient is a registered relying party, or a machine client (client_credentials).
//
// +kubebuilder:validation:XValidation:rule="(has(self.grantTypes) && !('authorization_code' in self.grantTypes)) || (has(self.redirectURIs) && size(self.redirectURIs) > 0)",message="at least one redirect URI is required unless grantTypes leaves out authorization_code",fieldPath=".redirectURIs"
// +kubebuilder:validation:XValidation:rule="!has(self.grantTypes) || !('refresh_token' in self.grantTypes) || 'authorization_code' in self.grantTypes",message="grantTypes: refresh_token comes with authorization_code"
// +kubebuilder:validation:XValidation:rule="!has(self.grantTypes) || !('client_credentials' in self.grantTypes) || has(self.secretRef) || has(self.tokenEndpointAuthMethod)",message="grantTypes: client_credentials needs a confidential client (secretRef, or tokenEndpointAuthMethod private_key_jwt with jwks)"
// +kubebuilder:validation:XValidation:rule="!has(self.tokenEndpointAuthMethod) || (has(self.jwks) && !has(self.secretRef))",message="tokenEndpointAuthMethod private_key_jwt needs jwks and no secretRef"
// +kubebuilder:validation:XValidation:rule="has(self.tokenEndpointAuthMethod) || (!has(self.jwks) && !has(self.tokenEndpointAuthSigningAlg))",message="jwks and tokenEndpointAuthSigningAlg need tokenEndpointAuthMethod private_key_jwt"
// +kubebuilder:validation:XValidation:rule="!has(self.backchannelLogoutSessionRequired) || !self.backchannelLogoutSessionRequired || has(self.backchannelLogoutURI)",message="backchannelLogoutSessionRequired needs a backchannelLogoutURI"
// +kubebuilder:validation:XValidation:rule="!has(self.accessTokenGroups) || !self.accessTokenGroups || (has(self.scopes) && 'groups' in self.scopes)",message="accessTokenGroups needs groups in the client's scopes"
type OAuthClient struct {
	// ClientID identifies the client in authorize and token requests.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._-]*$`
	ClientID string `json:"clientID"`
	// RedirectURIs are matched exactly. Required unless grantTypes leaves out authorization_code (a
	// machine client of client_credentials alone has none).
	// +optional
	// +kubebuilder:validation:MaxItems=20
	// +listType=set
	RedirectURIs []RedirectURI `json:"redirectURIs,omitempty"`
	// PostLogoutRedirectURIs are where /oauth2/logout may send the browser back to.
	// +optional
	// +kubebuilder:validation:MaxItems=20
	// +listType=set
	PostLogoutRedirectURIs []RedirectURI `json:"postLogoutRedirectURIs,omitempty"`
	// Scopes the client may request. Default: openid profile email offline_access. Add groups for the
	// groups claim (the user's groups, set with `formsservice users groups`).
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	Scopes []Scope `json:"scopes,omitempty"`
	// Name is shown on the sign-in page ("Sign in to continue to Name"). Default: the client ID.
	// +optional
	// +kubebuilder:validation:MaxLength=80
	Name string `json:"name,omitempty"`
	// Audiences are the APIs this client's access tokens may be for (the access token's aud); a request
	// may narrow them with RFC 8707 resource parameters. Empty: the aud is the client ID.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	Audiences []Audience `json:"audiences,omitempty"`
	// Resources are the APIs this client serves as a resource server: with its secret it may introspect
	// the access tokens whose aud names one of them (or its client ID); other tokens introspect as
	// inactive.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	Resources []Audience `json:"resources,omitempty"`
	// SecretRef makes the client confidential (it authenticates at the token endpoint with this secret).
	// Without it the client is public and must use PKCE with S256, as browser apps do.
	// +optional
	SecretRef *SecretKeySelector `json:"secretRef,omitempty"`
	// RequireMFA makes a second factor (a TOTP code, a recovery code, or a passkey) part of every
	// sign-in to this client: a user without one enrols it on the way.
	// +optional
	RequireMFA bool `json:"requireMFA,omitempty"`
	// RequireVerifiedEmail refuses sign-in to this client to accounts whose e-mail address is not
	// verified yet; the sign-in page offers to send the confirmation link again.
	// +optional
	RequireVerifiedEmail bool `json:"requireVerifiedEmail,omitempty"`
	// Branding overrides spec.auth.branding, field by field, on this client's sign-in pages.
	// +optional
	Branding *BrandingSpec `json:"branding,omitempty"`
	// GrantTypes are the grants the client may use: authorization_code, refresh_token (with
	// authorization_code) and client_credentials (a machine's own tokens; confidential clients only).
	// Default authorization_code and refresh_token.
	// +optional
	// +kubebuilder:validation:MaxItems=3
	// +listType=set
	GrantTypes []GrantType `json:"grantTypes,omitempty"`
	// TokenEndpointAuthMethod private_key_jwt makes the client authenticate with assertions signed by
	// one of its keys (jwks) instead of a secret (RFC 7523). Empty: a secret with secretRef, none without.
	// +optional
	// +kubebuilder:validation:Enum=private_key_jwt
	TokenEndpointAuthMethod string `json:"tokenEndpointAuthMethod,omitempty"`
	// TokenEndpointAuthSigningAlg is the one algorithm its assertions use; default that of its first key.
	// +optional
	// +kubebuilder:validation:Enum=RS256;RS384;RS512;PS256;PS384;PS512;ES256;ES384;ES512
	TokenEndpointAuthSigningAlg string `json:"tokenEndpointAuthSigningAlg,omitempty"`
	// JWKS is the client's public keys, a JSON Web Key Set as JSON text ({"keys": [...]}): RSA (2048 bits
	// or more) or EC keys, public halves only. Keys are never fetched from a URL.
	// +optional
	// +kubebuilder:validation:MaxLength=16384
	JWKS string `json:"jwks,omitempty"`
	// BackchannelLogoutURI is where the client hears that a person's sign-in ended (OpenID Connect
	// Back-Channel Logout 1.0): the provider POSTs a logout token to it when a browser session the client
	// had a grant in logs out, and when the person is signed out everywhere (a new or reset password, a
	// disabled account). https (http only on the loopback host), no fragment.
	// +optional
	BackchannelLogoutURI RedirectURI `json:"backchannelLogoutURI,omitempty"`
	// BackchannelLogoutSessionRequired makes every logout token to this client name the session (sid).
	// +optional
	BackchannelLogoutSessionRequired bool `json:"backchannelLogoutSessionRequired,omitempty"`
	// AccessTokenGroups puts the groups claim into this client's access tokens (with the groups scope
	// granted; the client must list groups in scopes), for an API that authorises by group.
	// +optional
	AccessTokenGroups bool `json:"accessTokenGroups,omitempty"`
	// Connectors are the ids of spec.auth.connectors whose buttons this client's sign-in page shows, in
	// this order; the client may also send connector_id=<id> to go straight to one. Empty: none.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=32
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9][a-z0-9-]*$`
	Connectors []string `json:"connectors,omitempty"`
}

// GrantType is a grant a client may use at the token endpoint.
// +kubebuilder:validation:Enum=authorization_code;refresh_token;client_credentials
type GrantType string

// RedisMode says how the addresses are used.
// +kubebuilder:validation:Enum=Standalone;Sentinel;Cluster
type RedisMode string

// Redis modes.
const (
	RedisStandalone RedisMode = "Standalone"
	RedisSentinel   RedisMode = "Sentinel"
	RedisCluster    RedisMode = "Cluster"
)

// RedisSpec points at an external Redis, or (addresses empty) asks the operator to run one.
//
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'Sentinel' || (has(self.masterName) && has(self.addresses) && size(self.addresses) > 0)",message="Sentinel mode needs addresses (the sentinels) and masterName"
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode == 'Standalone' || (has(self.addresses) && size(self.addresses) > 0)",message="Sentinel and Cluster modes need addresses; leave mode Standalone to have the operator run Redis"
// +kubebuilder:validation:XValidation:rule="(has(self.mode) && self.mode != 'Standalone') || !has(self.addresses) || size(self.addresses) <= 1",message="Standalone mode takes one address; use mode Cluster or Sentinel for several"
// +kubebuilder:validation:XValidation:rule="(has(self.addresses) && size(self.addresses) > 0) || (!has(self.passwordSecretRef) && !has(self.username) && !has(self.tls) && !has(self.caSecretRef))",message="passwordSecretRef, username and tls apply to an external Redis (addresses), and so does caSecretRef; the managed Redis gets a generated password"
// +kubebuilder:validation:XValidation:rule="!has(self.managed) || !has(self.addresses) || size(self.addresses) == 0",message="managed applies only when addresses is empty"
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'Cluster' || !has(self.db) || self.db == 0",message="a Redis Cluster has only db 0"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.managed) || !has(oldSelf.managed.highAvailability) || !oldSelf.managed.highAvailability || (has(self.addresses) && size(self.addresses) > 0) || (has(self.managed) && has(self.managed.highAvailability) && self.managed.highAvailability)",message="managed.highAvailability cannot be turned off: pod 0 may be a replica by then; move to your own Redis (addresses) instead"
// +kubebuilder:validation:XValidation:rule="!has(self.managed) || has(oldSelf.managed) || !has(self.managed.storageSize) || quantity(string(self.managed.storageSize)).compareTo(quantity('1Gi')) >= 0",message="storageSize may grow, never shrink: the volume has the default 1Gi"
// +kubebuilder:validation:XValidation:rule="has(self.managed) || !has(oldSelf.managed) || !has(oldSelf.managed.storageSize) || quantity(string(oldSelf.managed.storageSize)).compareTo(quantity('1Gi')) <= 0 || (has(self.addresses) && size(self.addresses) > 0)",message="storageSize cannot be removed: the volume is larger than the default 1Gi and never shrinks"
type RedisSpec struct {
	// Addresses of an external Redis as host:port: one server (Standalone), the sentinels (Sentinel) or
	// seed nodes (Cluster). Empty: the operator runs a single Redis StatefulSet with a volume and
	// append-only persistence.
	// +optional
	// +kubebuilder:validation:MaxItems=12
	// +listType=atomic
	Addresses []HostPort `json:"addresses,omitempty"`
	// Mode of the external Redis.
	// +optional
	// +kubebuilder:default=Standalone
	Mode RedisMode `json:"mode,omitempty"`
	// MasterName is the Sentinel master set name.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	MasterName string `json:"masterName,omitempty"`
	// Username for Redis ACLs.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Username string `json:"username,omitempty"`
	// PasswordSecretRef holds the Redis password. The services read it from a mounted file.
	// +optional
	PasswordSecretRef *SecretKeySelector `json:"passwordSecretRef,omitempty"`
	// DB number (Standalone and Sentinel).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=15
	DB int32 `json:"db,omitempty"`
	// TLS connects with TLS (system roots, or caSecretRef's).
	// +optional
	TLS bool `json:"tls,omitempty"`
	// CASecretRef holds a PEM bundle of the certificate authorities the Redis server's certificate must
	// chain to (a private CA, as Redis operators and cloud services issue), instead of the system's.
	// Mounted into every service; setting it turns TLS on.
	// +optional
	CASecretRef *SecretKeySelector `json:"caSecretRef,omitempty"`
	// Managed tunes the Redis the operator runs when addresses is empty.
	// +optional
	Managed *ManagedRedisSpec `json:"managed,omitempty"`
}

// ManagedRedisSpec tunes the single Redis the operator runs.
//
// +kubebuilder:validation:XValidation:rule="!has(self.storageSize) || has(oldSelf.storageSize) || quantity(string(self.storageSize)).compareTo(quantity('1Gi')) >= 0",message="storageSize may grow, never shrink: the volume has the default 1Gi"
// +kubebuilder:validation:XValidation:rule="has(self.storageSize) || !has(oldSelf.storageSize) || quantity(string(oldSelf.storageSize)).compareTo(quantity('1Gi')) <= 0",message="storageSize cannot be removed: the volume is larger than the default 1Gi and never shrinks"
type ManagedRedisSpec struct {
	// Image of Redis.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`
	// StorageSize of the PersistentVolumeClaim; default 1Gi. It may grow, never shrink: the operator
	// expands the claim (its storage class must allow volume expansion) and re-creates the StatefulSet
	// around the running pod (docs/operator.md, "Volume expansion").
	// +optional
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity(string(oldSelf))) >= 0",message="storageSize may grow, never shrink"
	StorageSize *resource.Quantity `json:"storageSize,omitempty"`
	// StorageClassName of the PersistentVolumeClaim (empty: the cluster's default class).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="storageClassName cannot change after creation"
	// +kubebuilder:validation:MaxLength=253
	StorageClassName *string `json:"storageClassName,omitempty"`
	// Resources of the Redis container (a CPU limit is allowed; none by default).
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// RunAsUser is the user (and group and fsGroup) Redis runs as. Unset: the operator's
	// --redis-run-as-user (999, the valkey user of the default image). 0 sets none: the image's user, or
	// the one the platform assigns (OpenShift's restricted-v2 refuses a fixed user outside the
	// namespace's range).
	// +optional
	// +kubebuilder:validation:Minimum=0
	RunAsUser *int64 `json:"runAsUser,omitempty"`
	// HighAvailability runs three Redis pods instead of one: a primary and two replicas, each beside a
	// Sentinel (quorum 2 of 3) that promotes a replica when the primary is lost. The services connect
	// through the sentinels, and the forms default to durability primary (a 201 is on a replica too).
	// Turning it on keeps the data (pod 0 starts as the primary); it cannot be turned off
	// (docs/operator.md, "High availability").
	// +optional
	HighAvailability bool `json:"highAvailability,omitempty"`
	// PodAntiAffinity keeps the highly available Redis's pods on different nodes (kubernetes.io/hostname):
	// Preferred (the default) asks the scheduler to, Required makes it a rule, so that two pods never
	// share a node, and on a cluster with fewer than three schedulable nodes the pods beyond them stay
	// Pending (RedisHighAvailability False). Only with highAvailability (docs/operator.md, "High
	// availability").
	// +optional
	// +kubebuilder:default=Preferred
	PodAntiAffinity RedisPodAntiAffinity `json:"podAntiAffinity,omitempty"`
}

// RedisPodAntiAffinity says how hard the scheduler must keep the highly available Redis's pods apart.
// +kubebuilder:validation:Enum=Preferred;Required
type RedisPodAntiAffinity string

// Pod anti-affinities of the highly available Redis.
const (
	// RedisAntiAffinityPreferred prefers a node without another Redis pod, and takes one with when it must.
	RedisAntiAffinityPreferred RedisPodAntiAffinity = "Preferred"
	// RedisAntiAffinityRequired leaves a Redis pod Pending rather than put it beside another.
	RedisAntiAffinityRequired RedisPodAntiAffinity = "Required"
)

// Workload is what every service Deployment shares.
type Workload struct {
	// Replicas of the service's Deployment.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:XValidation:rule="self >= 0 && self <= 50",message="replicas must be between 0 and 50"
	Replicas *int32 `json:"replicas,omitempty"`
	// Resources of the service container. Default: requests 50m CPU and 64Mi memory, limit 256Mi
	// (auth: 128Mi and 512Mi: argon2id password hashing takes 19 MiB per sign-in in flight). A CPU
	// limit may be set (limits.cpu); there is none by default.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// PodAnnotations are added to the service's pods.
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`
	// Autoscaling gives the service a HorizontalPodAutoscaler; replicas is then ignored (see
	// production_types.go).
	// +optional
	Autoscaling *AutoscalingSpec `json:"autoscaling,omitempty"`
}

// FormsSpec configures the forms service.
// +kubebuilder:validation:XValidation:rule="has(self.files) || !has(self.declared) || !self.declared.exists(d, d.fields.exists(f, f.type == 'file'))",message="a file field needs spec.forms.files (the bucket its bytes go to)"
type FormsSpec struct {
	Workload `json:",inline"`
	// RateLimitPerMinute is how many submissions one client IP may make per endpoint per minute, shared
	// across replicas. Default 60; 0 turns the limit off.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	RateLimitPerMinute *int32 `json:"rateLimitPerMinute,omitempty"`
	// Delivery sends each stored contact message to the operating team (mail and/or webhook). Without
	// it messages are only stored (read them with `formsservice export contact`).
	// +optional
	Delivery *DeliverySpec `json:"delivery,omitempty"`
	// DataPolicy says what the forms service promises about the data it takes: how durable an
	// acknowledgement is, how long a contact message's delivery is tried, how long messages are kept,
	// and how webhook calls are signed.
	// +optional
	DataPolicy *FormsDataPolicy `json:"dataPolicy,omitempty"`
	// DoubleOptIn makes waitlist sign-ups confirmed ones (forms_optin_types.go).
	// +optional
	DoubleOptIn *DoubleOptInSpec `json:"doubleOptIn,omitempty"`
	// Sites configure, per allowed origin, plain HTML form posts, a bot check and the consent version
	// (forms_optin_types.go).
	// +optional
	// +listType=map
	// +listMapKey=origin
	// +kubebuilder:validation:MaxItems=50
	Sites []FormsSite `json:"sites,omitempty"`
	// Declared are the team's own forms, each posted to /f/<id> (forms_declared_types.go; docs/forms.md,
	// "Your own forms"). At most 100, ids unique.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=100
	Declared []DeclaredForm `json:"declared,omitempty"`
	// Spam is what /contact and every declared form do with spam (forms_spam_types.go); a declared
	// form's own spam replaces it for that form. Default: kept in a spam folder, scored from 4.
	// +optional
	Spam *FormSpamSpec `json:"spam,omitempty"`
	// Files is the bucket where the declared forms' file fields put their bytes (forms_declared_types.go;
	// docs/forms.md "Files", D77). A form with a file field needs it.
	// +optional
	Files *FormFilesSpec `json:"files,omitempty"`
}

// FormsDataPolicy holds the forms service's durability, delivery-limit, retention and webhook-signing
// settings (docs/forms.md).
// +kubebuilder:validation:XValidation:rule="!has(self.webhookPreviousSigningSecretRef) || has(self.webhookSigningSecretRef)",message="webhookPreviousSigningSecretRef is set only during a rotation, beside webhookSigningSecretRef (the new secret)"
type FormsDataPolicy struct {
	// Durability is what a 201 survives: process (the Redis process: memory and append-only file),
	// machine (a crash of the Redis machine: fsync before the answer), primary (the loss of the
	// primary: a replica acknowledged the write, and the primary keeps an append-only file), replicated
	// (a replica acknowledged the write, no append-only file required: a crash of the primary where the
	// platform fails over, as a managed Redis with replicas does) or unchecked (nothing is required or
	// waited for: the team accepts losing acknowledged submissions; a metric and an info alert say so).
	// Default machine with the managed Redis, primary with its highAvailability, process otherwise.
	// +optional
	// +kubebuilder:validation:Enum=process;machine;primary;replicated;unchecked
	Durability string `json:"durability,omitempty"`
	// ContactRetention erases contact messages (and dead letters) older than this, never one still
	// waiting for delivery. Unset keeps them until `formsservice forget` erases them.
	// +optional
	ContactRetention *metav1.Duration `json:"contactRetention,omitempty"`
	// WaitlistRetention erases waitlist entries signed up longer ago than this, whatever their state.
	// Unset keeps them until `formsservice forget` erases them.
	// +optional
	WaitlistRetention *metav1.Duration `json:"waitlistRetention,omitempty"`
	// DeliveryMaxAttempts ends the retries of a contact message: after this many failed attempts it
	// becomes a dead letter (`formsservice deliveries`). Default 20.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	DeliveryMaxAttempts *int32 `json:"deliveryMaxAttempts,omitempty"`
	// DeliveryMaxAge makes a contact message that fails an attempt once it is this old a dead letter.
	// Default 72h.
	// +optional
	DeliveryMaxAge *metav1.Duration `json:"deliveryMaxAge,omitempty"`
	// WebhookSigningSecretRef names the Secret key holding the Standard Webhooks signing secret
	// ("whsec_" + base64 of 24 to 64 random bytes); webhook calls then carry webhook-signature.
	// +optional
	WebhookSigningSecretRef *SecretKeySelector `json:"webhookSigningSecretRef,omitempty"`
	// WebhookPreviousSigningSecretRef, during a rotation of the signing secret, names the Secret key
	// holding the secret that WebhookSigningSecretRef replaces: calls then carry a signature with each,
	// so receivers verify with either while they move to the new one (docs/forms.md). Remove it once
	// every receiver has the new secret.
	// +optional
	WebhookPreviousSigningSecretRef *SecretKeySelector `json:"webhookPreviousSigningSecretRef,omitempty"`
}

// DeliverySpec lists where contact messages go.
type DeliverySpec struct {
	// +optional
	SMTP *SMTPDelivery `json:"smtp,omitempty"`
	// +optional
	Webhook *WebhookDelivery `json:"webhook,omitempty"`
}

// SMTPDelivery sends contact messages through a mail relay.
type SMTPDelivery struct {
	// Address of the relay, host:port.
	Address HostPort `json:"address"`
	// From is the sender address.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=254
	From string `json:"from"`
	// To are the recipients.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=254
	To []string `json:"to"`
	// Username for AUTH PLAIN, with the password in PasswordSecretRef.
	// +optional
	// +kubebuilder:validation:MaxLength=254
	Username string `json:"username,omitempty"`
	// +optional
	PasswordSecretRef *SecretKeySelector `json:"passwordSecretRef,omitempty"`
	// StartTLS requires STARTTLS before authenticating or sending. A relay off the loopback address gets
	// STARTTLS whether or not this is set: the services send nothing in clear text off loopback.
	// +optional
	StartTLS bool `json:"startTLS,omitempty"`
	// Subject prefixes the mail subject. Default "[contact]".
	// +optional
	// +kubebuilder:validation:MaxLength=80
	Subject string `json:"subject,omitempty"`
}

// WebhookDelivery posts each contact message as JSON (with a Slack-compatible "text" field).
//
// The address of an incoming webhook is a credential: whoever has it can post to the channel. Put it in
// a Secret and name it with urlSecretRef; the operator mounts that key into the forms pods and the
// address never appears in the FormsService or the ConfigMap. url, the address in plain text, still
// works; when both are set, urlSecretRef is used.
// +kubebuilder:validation:XValidation:rule="has(self.urlSecretRef) || has(self.url)",message="set webhook urlSecretRef (a Secret key holding the webhook URL) or url"
type WebhookDelivery struct {
	// URLSecretRef names the Secret key holding the webhook URL (an http or https URL; surrounding white
	// space is ignored). Preferred over url. A changed Secret rolls the forms pods.
	// +optional
	URLSecretRef *SecretKeySelector `json:"urlSecretRef,omitempty"`
	// URL receives the POST. It is stored in plain text in the FormsService and the rendered ConfigMap:
	// prefer urlSecretRef. Ignored when urlSecretRef is set.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^https?://[^/?#@ ]+([/?][^ ]*)?$')",message="webhook url must be an http or https URL"
	URL string `json:"url,omitempty"`
}

// AuthSpec configures the OAuth 2.0 / OpenID Connect provider.
//
// +kubebuilder:validation:XValidation:rule="!has(self.signingKeySecretRef) || !has(self.signingKeyRotation)",message="signingKeyRotation rotates the key the operator generates: a key from signingKeySecretRef is rotated where it comes from"
// +kubebuilder:validation:XValidation:rule="!has(self.signingKeySecretRef) || !has(self.signingKeyRetention) || self.signingKeyRetention == 'Retain'",message="signingKeyRetention Delete applies to the key the operator generates: the Secret of signingKeySecretRef is never deleted by the operator"
type AuthSpec struct {
	Workload `json:",inline"`
	// AdminGroup is the group whose members' tokens may use the admin API (/admin/v1/…) besides the
	// scopes, and so the admin console (spec.console); a machine's token needs none. Default
	// formsservice-admins. The rules are a group name's (users.CheckGroup): 1 to 64 ASCII letters,
	// digits and . _ - : / @ +, starting with a letter or digit.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$`
	AdminGroup string `json:"adminGroup,omitempty"`
	// SelfSignup lets people create their own account on the hosted sign-in page. Off: accounts are
	// created with `formsservice users create`.
	// +optional
	SelfSignup bool `json:"selfSignup,omitempty"`
	// AccessTokenLifetime; default 15m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="accessTokenLifetime must be between 1m and 24h"
	AccessTokenLifetime *metav1.Duration `json:"accessTokenLifetime,omitempty"`
	// RefreshTokenLifetime; default 720h (30 days).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1h') && duration(self) <= duration('8760h')",message="refreshTokenLifetime must be between 1h and 8760h (one year)"
	RefreshTokenLifetime *metav1.Duration `json:"refreshTokenLifetime,omitempty"`
	// CodeLifetime is how long an authorization code may be redeemed; default 60s.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('10m')",message="codeLifetime must be between 10s and 10m"
	CodeLifetime *metav1.Duration `json:"codeLifetime,omitempty"`
	// IDTokenLifetime; default 1h.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="idTokenLifetime must be between 1m and 24h"
	IDTokenLifetime *metav1.Duration `json:"idTokenLifetime,omitempty"`
	// SessionLifetime is how long the sign-in session (the SSO cookie that lets a second authorize
	// skip the form) lasts; default 24h.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('8760h')",message="sessionLifetime must be between 1m and 8760h"
	SessionLifetime *metav1.Duration `json:"sessionLifetime,omitempty"`
	// SessionIdleTimeout ends a sign-in session not used for that long; each use starts it again, never
	// past sessionLifetime. Default 30m; at or above sessionLifetime it is off.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('8760h')",message="sessionIdleTimeout must be between 1m and 8760h"
	SessionIdleTimeout *metav1.Duration `json:"sessionIdleTimeout,omitempty"`
	// Throttle bounds failed sign-ins per account and per client IP.
	// +optional
	Throttle *ThrottleSpec `json:"throttle,omitempty"`
	// MFA configures the second factor (TOTP and recovery codes). Which clients require one is each
	// oauthClients[].requireMFA.
	// +optional
	MFA *MFASpec `json:"mfa,omitempty"`
	// Passkeys configures signing in with passkeys (WebAuthn) and managing them on the account page.
	// +optional
	Passkeys *PasskeysSpec `json:"passkeys,omitempty"`
	// SigningKeyRotation rotates the token signing key on a schedule, beside the on-demand
	// rotate-signing-key annotation (docs/operator.md, "Signing keys").
	// +optional
	SigningKeyRotation *SigningKeyRotation `json:"signingKeyRotation,omitempty"`
	// SigningKeyRetention says what happens to the signing-key Secret the operator generated
	// (<name>-signing-key) when the FormsService is deleted. Retain (the default) keeps it: the Secret
	// carries no owner reference, so deleting the FormsService (kubectl delete, a GitOps prune, helm
	// uninstall) leaves the key, and a FormsService created again with the same name signs with it.
	// Delete gives it the FormsService as its owner, so the garbage collector deletes it with the
	// resource.
	// +optional
	// +kubebuilder:validation:Enum=Retain;Delete
	SigningKeyRetention SigningKeyRetention `json:"signingKeyRetention,omitempty"`
	// SigningKeySecretRef names a Secret the team provides (External Secrets, Vault, sealed-secrets)
	// holding signing-key.pem (EC P-256, PKCS #8 or SEC 1 PEM), and during the team's own rotation
	// next-signing-key.pem and previous-signing-key.pem. The operator then never generates, rotates,
	// owns or deletes a key: it checks the keys and mounts the Secret into the auth pods, and a change
	// of it rolls them.
	// +optional
	SigningKeySecretRef *SecretReference `json:"signingKeySecretRef,omitempty"`
	// Branding is the product's name, logo, accent colour and stylesheet on every hosted page (sign-in,
	// second step, e-mail verification and password reset, passkeys, the account page).
	// oauthClients[].branding overrides it for one client.
	// +optional
	Branding *BrandingSpec `json:"branding,omitempty"`
	// Connectors are the upstream providers people may sign in with (connectors_types.go); each client
	// lists the ones its sign-in page offers (oauthClients[].connectors).
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=32
	Connectors []ConnectorSpec `json:"connectors,omitempty"`
	// Audit says where the audit trail goes besides the log and Redis (audit_types.go).
	// +optional
	Audit *AuditSpec `json:"audit,omitempty"`
}

// BrandingSpec is how the hosted pages present the product. The accent colour may be any colour: the
// pages derive button and link colours from it that keep WCAG 2.2 AA contrast in light and dark mode.
type BrandingSpec struct {
	// ProductName is shown at the top of every page and in its title, and is the logo's alternative text.
	// +optional
	// +kubebuilder:validation:MaxLength=80
	// +kubebuilder:validation:XValidation:rule="self.matches('[^ ]') && !self.matches('[[:cntrl:]]')",message="productName must be text without control characters, not only spaces"
	ProductName string `json:"productName,omitempty"`
	// LogoURL is an https URL of the logo image (http only for localhost and loopback addresses), without
	// query or fragment; the pages' Content-Security-Policy allows exactly its origin for images.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^https://([A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?|[[][0-9A-Fa-f:.]+[]])(:[0-9]{1,5})?(/([-A-Za-z0-9._~!$&()*+=:@/]|%[0-9A-Fa-f]{2})*)?$') || self.matches('^http://(localhost|127[.]0[.]0[.]1|[[]::1[]])(:[0-9]{1,5})?(/([-A-Za-z0-9._~!$&()*+=:@/]|%[0-9A-Fa-f]{2})*)?$')",message="logoURL must be an https URL (http only for localhost, 127.0.0.1 and [::1]) without user info, query, fragment, spaces, commas, semicolons or quotes"
	LogoURL string `json:"logoURL,omitempty"`
	// AccentColor is the colour of buttons and links, #rrggbb.
	// +optional
	// +kubebuilder:validation:MaxLength=7
	// +kubebuilder:validation:XValidation:rule="self.matches('^#[0-9A-Fa-f]{6}$')",message="accentColor must be a #rrggbb colour, like #1f5fd6"
	AccentColor string `json:"accentColor,omitempty"`
	// StylesheetURL is an https URL of a stylesheet loaded after the pages' own (http only for localhost
	// and loopback addresses), without query or fragment; the pages' Content-Security-Policy allows
	// exactly its origin for styles, images and fonts.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^https://([A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?|[[][0-9A-Fa-f:.]+[]])(:[0-9]{1,5})?(/([-A-Za-z0-9._~!$&()*+=:@/]|%[0-9A-Fa-f]{2})*)?$') || self.matches('^http://(localhost|127[.]0[.]0[.]1|[[]::1[]])(:[0-9]{1,5})?(/([-A-Za-z0-9._~!$&()*+=:@/]|%[0-9A-Fa-f]{2})*)?$')",message="stylesheetURL must be an https URL (http only for localhost, 127.0.0.1 and [::1]) without user info, query, fragment, spaces, commas, semicolons or quotes"
	StylesheetURL string `json:"stylesheetURL,omitempty"`
}

// SigningKeyRotation is the signing key's rotation schedule.
type SigningKeyRotation struct {
	// Every is how long a key signs before the next rotation starts: the next key is published then, and
	// promoted once every auth pod serves it and the JWKS caches have expired. A scheduled rotation also
	// waits until the previous key has been retired (the longest token lifetime after its promotion), so
	// a rotation never drops a key that still verifies live tokens.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1h') && duration(self) <= duration('87600h')",message="every must be between 1h and 87600h (ten years)"
	Every metav1.Duration `json:"every"`
}

// MFASpec configures the second factor.
type MFASpec struct {
	// SecretKeyRef names 32 random bytes in base64 (`openssl rand -base64 32`): TOTP secrets are stored
	// sealed with it (AES-256-GCM). Without it they are stored as they are.
	// +optional
	SecretKeyRef *SecretKeySelector `json:"secretKeyRef,omitempty"`
	// Failures is how many wrong codes per user within Window lead to "try again in N s"; default 5.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Failures *int32 `json:"failures,omitempty"`
	// Window of Failures; default 15m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="mfa.window must be between 1m and 24h"
	Window *metav1.Duration `json:"window,omitempty"`
	// ChallengeLifetime is how long the second step of a sign-in waits for its code; default 5m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('30s') && duration(self) <= duration('30m')",message="mfa.challengeLifetime must be between 30s and 30m"
	ChallengeLifetime *metav1.Duration `json:"challengeLifetime,omitempty"`
	// EnrolmentLifetime is how long a secret shown for enrolment waits to be confirmed; default 15m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="mfa.enrolmentLifetime must be between 1m and 24h"
	EnrolmentLifetime *metav1.Duration `json:"enrolmentLifetime,omitempty"`
}

// PasskeysSpec configures passkeys. The relying party ID is the issuer's host name; passkeys are not
// offered on an issuer that is an IP address.
type PasskeysSpec struct {
	// Enabled offers passkeys; default true.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// RPName is the name the browser and the authenticator show ("Save a passkey for …"); default the
	// issuer's host name.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	RPName string `json:"rpName,omitempty"`
	// Timeout bounds one ceremony; default 5m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('10m')",message="passkeys.timeout must be between 1m and 10m"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// ThrottleSpec: after AccountFailures failed sign-ins for one e-mail address, or IPFailures from one
// client address, within Window, sign-in answers "try again later" until the window ends.
type ThrottleSpec struct {
	// Default 10.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	AccountFailures *int32 `json:"accountFailures,omitempty"`
	// Default 50.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	IPFailures *int32 `json:"ipFailures,omitempty"`
	// Default 15m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="throttle.window must be between 1m and 24h"
	Window *metav1.Duration `json:"window,omitempty"`
}

// HealthSpec configures the health service.
//
// +kubebuilder:validation:XValidation:rule="!has(self.warnAfter) || !has(self.timeout) || duration(self.warnAfter) < duration(self.timeout)",message="health.warnAfter must be shorter than health.timeout"
type HealthSpec struct {
	Workload `json:",inline"`
	// WarnAfter turns a slow check into "warn"; default 250ms.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('30s')",message="warnAfter must be between 0s and 30s"
	WarnAfter *metav1.Duration `json:"warnAfter,omitempty"`
	// Timeout turns a check into "fail"; default 1s, at most 30s.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('30s')",message="timeout must be between 0s and 30s"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// IngressSpec is the one Ingress in front of the platform.
type IngressSpec struct {
	// ClassName of the ingress controller (empty: the cluster's default class).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ClassName *string `json:"className,omitempty"`
	// Host serves /oauth2, /.well-known and /health (and the forms, unless formsHost is set).
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$`
	Host string `json:"host"`
	// FormsHost serves /contact and /waitlist when they live on a host of their own.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$`
	FormsHost string `json:"formsHost,omitempty"`
	// TLSSecretName holds the certificate for the host(s) (for example issued by cert-manager).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	TLSSecretName string `json:"tlsSecretName,omitempty"`
	// Annotations for the Ingress (for example cert-manager.io/cluster-issuer).
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ComponentStatus reports one workload the operator runs.
type ComponentStatus struct {
	// Name is forms, auth, health or redis.
	Name string `json:"name"`
	// Replicas desired, and how many are available and updated.
	Replicas          int32 `json:"replicas"`
	AvailableReplicas int32 `json:"availableReplicas"`
	UpdatedReplicas   int32 `json:"updatedReplicas"`
}

// FormsServiceStatus is rebuilt from the cluster on every reconcile.
type FormsServiceStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Progressing, Degraded, and the kstatus Reconciling and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// URL is the public base URL (the OAuth issuer).
	// +optional
	URL string `json:"url,omitempty"`
	// OriginCount and ClientCount are what the rendered configuration holds.
	// +optional
	OriginCount int32 `json:"originCount,omitempty"`
	// +optional
	ClientCount int32 `json:"clientCount,omitempty"`
	// Components are the workloads and their replicas.
	// +optional
	// +listType=map
	// +listMapKey=name
	Components []ComponentStatus `json:"components,omitempty"`
	// SigningKeySecret names the Secret that holds the token signing keys.
	// +optional
	SigningKeySecret string `json:"signingKeySecret,omitempty"`
	// SigningKey is where the signing key's rotation stands.
	// +optional
	SigningKey *SigningKeyStatus `json:"signingKey,omitempty"`
	// Image is the image the services run once the rollout of the current spec is done: spec.image, else
	// the operator's --service-image.
	// +optional
	Image string `json:"image,omitempty"`
	// Routes say whether the ingress controller and the Gateways took the platform's routes.
	// +optional
	// +listType=map
	// +listMapKey=kind
	// +listMapKey=name
	Routes []RouteStatus `json:"routes,omitempty"`
	// Backup reports the backups (backup_types.go).
	// +optional
	Backup *BackupStatus `json:"backup,omitempty"`
	// OperandStatus: the image rolled out and the one waiting (update_types.go).
	OperandStatus `json:",inline"`
}

// FormsService runs the formsservice platform: forms, auth and health behind one ingress, backed by Redis.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=fs,categories=formsservice
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Origins",type=integer,JSONPath=`.status.originCount`
// +kubebuilder:printcolumn:name="Clients",type=integer,JSONPath=`.status.clientCount`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.operandVersion`,priority=1
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && size(self.metadata.name) <= 40",message="name must start with a letter, hold only lower-case letters, digits and '-', and be at most 40 characters: it prefixes the names of the Services and Deployments the operator creates"
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !self.metadata.name.matches('-(redis|forms)$')",message="name must not end in -redis or -forms: FormsService x names its Redis ConfigMap x-redis-config and its forms HTTPRoute x-forms, the names FormsServices x-redis and x-forms would give their own configuration ConfigMap and HTTPRoute in the same namespace",optionalOldSelf=true
type FormsService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FormsServiceSpec   `json:"spec,omitempty"`
	Status FormsServiceStatus `json:"status,omitempty"`
}

// FormsServiceList is a list of FormsService.
//
// +kubebuilder:object:root=true
type FormsServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FormsService `json:"items"`
}
