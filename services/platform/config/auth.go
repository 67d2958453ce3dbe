package config

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Auth configures the OAuth 2.0 / OpenID Connect provider.
type Auth struct {
	// Issuer defaults to PublicURL.
	Issuer  string        `json:"issuer,omitempty"`
	Clients []OAuthClient `json:"clients,omitempty"`
	// SigningKeyFile holds the current signing key (PEM, EC P-256); PreviousSigningKeyFile, when set,
	// is served in the JWKS only, so that tokens signed before a rotation still verify;
	// NextSigningKeyFile, when set, is served in the JWKS before it signs anything, so that verifiers
	// that cache the JWKS know it when it is promoted to current (docs/auth.md, "Rotating the signing
	// key"). The dev server generates an ephemeral key when SigningKeyFile is empty; every other command
	// requires it.
	SigningKeyFile         string `json:"signingKeyFile,omitempty"`
	PreviousSigningKeyFile string `json:"previousSigningKeyFile,omitempty"`
	NextSigningKeyFile     string `json:"nextSigningKeyFile,omitempty"`
	// Lifetimes; defaults access 15m, refresh 720h (30 days), code 60s, id_token 1h, sign-in session
	// (the SSO cookie that lets a second authorize skip the form) 24h.
	AccessTokenLifetime  Duration `json:"accessTokenLifetime,omitempty"`
	RefreshTokenLifetime Duration `json:"refreshTokenLifetime,omitempty"`
	CodeLifetime         Duration `json:"codeLifetime,omitempty"`
	IDTokenLifetime      Duration `json:"idTokenLifetime,omitempty"`
	SessionLifetime      Duration `json:"sessionLifetime,omitempty"`
	// FamilyLifetime is the absolute lifetime of a grant (a refresh-token family) from the sign-in that
	// started it, however often it is refreshed; refreshTokenLifetime is the idle lifetime beside it.
	// Default 720h (30 days).
	FamilyLifetime Duration `json:"familyLifetime,omitempty"`
	// SessionIdleTimeout ends a sign-in session not used for that long (ASVS 3.3.2); each use starts
	// it again, never past sessionLifetime. Default 30m; at sessionLifetime or more there is none.
	SessionIdleTimeout Duration `json:"sessionIdleTimeout,omitempty"`
	// SelfSignup lets people create an account on the hosted page.
	SelfSignup bool `json:"selfSignup,omitempty"`
	// AskToReplaceWeakPasswords, on by default, asks whoever signs in with a password that fails the
	// rules for new passwords (set before them) to replace it (D54). The dev server turns it off: its
	// fixture user's password is fixed (D5) and is not one to keep.
	AskToReplaceWeakPasswords *bool `json:"askToReplaceWeakPasswords,omitempty"`
	// VerificationLinkLifetime is how long an e-mail verification link works (default 24h);
	// ResetLinkLifetime how long a password reset link works (default 15m). Each works once.
	VerificationLinkLifetime Duration `json:"verificationLinkLifetime,omitempty"`
	ResetLinkLifetime        Duration `json:"resetLinkLifetime,omitempty"`
	// MFA configures the second factor (TOTP, recovery codes): its throttle, lifetimes and key.
	MFA MFA `json:"mfa,omitempty"`
	// PasswordHash tunes argon2id; the defaults are OWASP's minimum (19 MiB, 2 passes, 1 lane).
	PasswordHash PasswordHash `json:"passwordHash,omitempty"`
	// Throttle bounds failed sign-ins per account and per client IP.
	Throttle Throttle `json:"throttle,omitempty"`
	// MaxGrantsPerUser bounds how many grants (refresh-token families) one user holds; beyond it the
	// oldest grant ends. Default 1000.
	MaxGrantsPerUser int `json:"maxGrantsPerUser,omitempty"`
	// RateLimit bounds requests to /oauth2/authorize and /oauth2/token per client address and per user.
	RateLimit AuthRateLimit `json:"rateLimit,omitempty"`
	// Passkeys configures signing in with passkeys (WebAuthn); see docs/auth.md, "Passkeys".
	Passkeys AuthPasskeys `json:"passkeys,omitempty"`
	// Audit bounds the audit trail kept in Redis (the log stream has every event regardless).
	Audit Audit `json:"audit,omitempty"`
	// Branding is the product's name, logo, accent colour and stylesheet on the hosted pages (branding.go).
	Branding Branding `json:"branding,omitempty"`
	// Admin configures who may use the provider's own admin API (/admin/v1/…; docs/auth.md, "The admin
	// API"): the access token must be for the audience <issuer>/admin and carry the area's scope, and a
	// person's token must also be of a member of Group.
	Admin AuthAdmin `json:"admin,omitempty"`
	// Console serves the admin console at <issuer>/console/ (docs/console.md, D65).
	Console AuthConsole `json:"console,omitempty"`
	// Connectors are the upstream OpenID Connect providers people may sign in with (connectors.go).
	Connectors []Connector `json:"connectors,omitempty"`
	// Notify mails an account's owner of a sign-in from a browser never seen for the account and of a
	// lockout of its sign-in budgets (docs/auth.md "Notices to the owner", D66).
	Notify AuthNotify `json:"notify,omitempty"`
}

// AuthNotify configures the notices to an account's owner (D66): NewBrowser and Lockout turn each on
// (both on when unset). Each kind is mailed at most MailsPerAccount times per account within Window
// (defaults 5 and 24h), beyond that dropped and counted; the links they carry work once, for
// LinkLifetime (default 24h: a notice is read later than a mail one asked for).
type AuthNotify struct {
	NewBrowser      *bool    `json:"newBrowser,omitempty"`
	Lockout         *bool    `json:"lockout,omitempty"`
	MailsPerAccount int      `json:"mailsPerAccount,omitempty"`
	Window          Duration `json:"window,omitempty"`
	LinkLifetime    Duration `json:"linkLifetime,omitempty"`
}

// NewBrowserOn reports whether a sign-in from a new browser is mailed (true when unset).
func (n AuthNotify) NewBrowserOn() bool { return n.NewBrowser == nil || *n.NewBrowser }

// LockoutOn reports whether a lockout is mailed (true when unset).
func (n AuthNotify) LockoutOn() bool { return n.Lockout == nil || *n.Lockout }

// AuthAdmin configures the admin API's access check (docs/decisions D50).
type AuthAdmin struct {
	// Group is the group (users' groups, D37) whose members' tokens may use the admin API; default
	// formsservice-admins. A machine's token (client_credentials) needs no group: its scopes are its role.
	Group string `json:"group,omitempty"`
}

// AuthConsole configures the admin console (docs/decisions D65): a web app at <issuer>/console/ that
// signs in through the hosted page as the provider's own public client formsservice-console and calls
// the admin API as the person signed in (who must be in auth.admin.group).
type AuthConsole struct {
	// Enabled serves the console and registers its client; default false (on in the dev server).
	Enabled *bool `json:"enabled,omitempty"`
}

// On reports whether the console is served.
func (c AuthConsole) On() bool { return c.Enabled != nil && *c.Enabled }

// DefaultAdminGroup is the admin API's group when auth.admin.group is not set.
const DefaultAdminGroup = "formsservice-admins"

// Audit bounds the audit trail kept in Redis: events older than Retention, and the oldest beyond
// MaxEntries, are trimmed at every write. Defaults 720h (30 days) and 100000 (about 30 MB).
type Audit struct {
	Retention  Duration `json:"retention,omitempty"`
	MaxEntries int64    `json:"maxEntries,omitempty"`
	// Webhook, when set, sends every stored event to a receiver such as a SIEM (D67).
	Webhook *AuditWebhook `json:"webhook,omitempty"`
}

// AuditWebhook is the audit trail's sink: every event of both streams, in batches, as signed Standard
// Webhooks calls, at least once (docs/auth.md "Audit sink", D67).
type AuditWebhook struct {
	// URL is the receiver: https (http only to a loopback address).
	URL string `json:"url"`
	// SecretFile names a file (a mounted Secret) holding the Standard Webhooks signing secret, "whsec_"
	// and the base64 of 24 to 64 random bytes. Required: a receiver must be able to tell our events
	// from forged ones.
	SecretFile string `json:"secretFile"`
	// PreviousSecretFile, during a rotation, names the secret SecretFile replaces: calls carry both
	// signatures until it is removed.
	PreviousSecretFile string `json:"previousSecretFile,omitempty"`
	// BatchSize is the most events one call carries (default 100, at most 1000).
	BatchSize int `json:"batchSize,omitempty"`
	// Timeout bounds one call (default 10s).
	Timeout Duration `json:"timeout,omitempty"`
}

// The audit sink's defaults and bounds.
const (
	DefaultAuditBatchSize = 100
	MaxAuditBatchSize     = 1000
)

func (w *AuditWebhook) applyDefaults() {
	if w.BatchSize == 0 {
		w.BatchSize = DefaultAuditBatchSize
	}
	setDuration(&w.Timeout, 10*time.Second)
}

// validate checks the sink's settings. Messages never repeat the URL: it may carry a token.
func (w AuditWebhook) validate() []error {
	const at = "auth.audit.webhook"
	var errs []error
	if err := CheckWebhookURL(w.URL); err != nil {
		errs = append(errs, fmt.Errorf("%s.url: %w", at, err))
	} else if u, _ := url.Parse(w.URL); u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		// The events name users, clients and addresses: they travel encrypted.
		errs = append(errs, fmt.Errorf("%s.url: must be https (http only to localhost and loopback addresses)", at))
	} else if u.User != nil || u.Fragment != "" {
		errs = append(errs, fmt.Errorf("%s.url: no user information or fragment (put a token in the path or query, or sign with secretFile)", at))
	}
	for _, f := range []struct{ key, path string }{{"secretFile", w.SecretFile}, {"previousSecretFile", w.PreviousSecretFile}} {
		if f.path != "" && (strings.TrimSpace(f.path) != f.path || strings.ContainsRune(f.path, 0)) {
			errs = append(errs, fmt.Errorf("%s.%s: %q is not a usable file name (leading or trailing spaces, or a NUL)", at, f.key, f.path))
		}
	}
	if w.SecretFile == "" {
		errs = append(errs, fmt.Errorf("%s.secretFile: required (a file holding the whsec_ signing secret): a receiver must be able to tell the events from forged ones", at))
	}
	if w.BatchSize < 1 || w.BatchSize > MaxAuditBatchSize {
		errs = append(errs, fmt.Errorf("%s.batchSize: %d: want 1 to %d", at, w.BatchSize, MaxAuditBatchSize))
	}
	if w.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("%s.timeout: must be positive", at))
	}
	return errs
}

// AuthRateLimit bounds /oauth2/authorize and /oauth2/token, each on its own budget, per client address
// (PerIP) and per user (PerUser: the signed-in user at authorize, the grant's user at token) within
// Window; beyond it the answer is 429 with Retry-After. Defaults 1200, 300 and 1m (20 and 5 a second).
type AuthRateLimit struct {
	PerIP   int      `json:"perIP,omitempty"`
	PerUser int      `json:"perUser,omitempty"`
	Window  Duration `json:"window,omitempty"`
}

// PasswordHash holds the argon2id parameters for new hashes (existing hashes keep theirs and are
// upgraded at the next successful sign-in) and the size of the hashing pool.
type PasswordHash struct {
	// MemoryKiB per hash; default 19456 (19 MiB).
	MemoryKiB uint32 `json:"memoryKiB,omitempty"`
	// Iterations (passes); default 2.
	Iterations uint32 `json:"iterations,omitempty"`
	// Parallelism (lanes); default 1.
	Parallelism uint8 `json:"parallelism,omitempty"`
	// Concurrency is how many hashes run at once; a burst beyond it waits (bounded) instead of
	// allocating MemoryKiB each. Default: the number of CPUs the process may use.
	Concurrency int `json:"concurrency,omitempty"`
}

// Throttle bounds failed sign-ins within Window with three budgets (docs/auth.md "Throttling"): each
// browser that signed in to the account before (it holds a device cookie) has DeviceFailures of its
// own; every other browser shares AccountFailures per account, and its client address has IPFailures.
// After DelayAfter failures of a browser or of an account's unknown browsers each further attempt
// waits, 1 s doubling up to MaxDelay; a used-up budget answers "try again in N s" until its window
// ends. Device cookies last DeviceLifetime. Defaults 10, 10, 50, 15m, 3, 1m and 4320h (180 days);
// DelayAfter at or above the limits means no delays. Sign-ups (every one with valid fields, new address
// or taken) are bounded per client address (SignupsPerIP) and per e-mail address (SignupsPerAddress)
// within SignupWindow: defaults 10, 3 and 1h. The mails a person asks for on the hosted page (a
// verification link again, a password reset; each journey its own budgets) are bounded per client
// address (MailsPerIP) and per e-mail address (MailsPerAddress) within MailWindow: defaults 10, 3 and 1h.
type Throttle struct {
	AccountFailures int      `json:"accountFailures,omitempty"`
	IPFailures      int      `json:"ipFailures,omitempty"`
	Window          Duration `json:"window,omitempty"`
	DeviceFailures  int      `json:"deviceFailures,omitempty"`
	DelayAfter      int      `json:"delayAfter,omitempty"`
	MaxDelay        Duration `json:"maxDelay,omitempty"`
	DeviceLifetime  Duration `json:"deviceLifetime,omitempty"`

	SignupsPerIP      int      `json:"signupsPerIP,omitempty"`
	SignupsPerAddress int      `json:"signupsPerAddress,omitempty"`
	SignupWindow      Duration `json:"signupWindow,omitempty"`

	MailsPerIP      int      `json:"mailsPerIP,omitempty"`
	MailsPerAddress int      `json:"mailsPerAddress,omitempty"`
	MailWindow      Duration `json:"mailWindow,omitempty"`
}

// OAuthClient is a registered client (a relying party).
type OAuthClient struct {
	ClientID               string   `json:"clientID"`
	RedirectURIs           []string `json:"redirectURIs"`
	PostLogoutRedirectURIs []string `json:"postLogoutRedirectURIs,omitempty"`
	Scopes                 []string `json:"scopes,omitempty"`
	// SecretFile makes the client confidential; without it the client is public and must use PKCE S256.
	SecretFile string `json:"secretFile,omitempty"`
	// Name is shown on the sign-in page ("Sign in to continue to Name"); default: the client ID.
	Name string `json:"name,omitempty"`
	// Audiences are the APIs (resource servers, each named by an absolute URI) this client's access
	// tokens may be for: the access token's aud. A request may narrow them with RFC 8707 resource (or
	// audience) parameters; without one, the token is for all of them. Empty: the aud is the client ID,
	// as for a client that calls no API of its own.
	Audiences []string `json:"audiences,omitempty"`
	// RequireMFA makes a second factor part of every sign-in to this client: a user without one sets it
	// up (an authenticator app) before the client gets its code; a browser signed in with a password
	// alone is asked for a code.
	RequireMFA bool `json:"requireMFA,omitempty"`
	// RequireVerifiedEmail refuses sign-in to this client to accounts whose e-mail address is not
	// verified; the page offers to send the verification link again.
	RequireVerifiedEmail bool `json:"requireVerifiedEmail,omitempty"`
	// Resources are the APIs (absolute URIs, as in other clients' audiences) this client serves as a
	// resource server: with its secret it may introspect the access tokens whose aud names one of them
	// or its client ID. Any other token (another API's, another client's refresh token) introspects as
	// inactive.
	Resources []string `json:"resources,omitempty"`
	// Branding overrides auth.branding, field by field, on this client's sign-in pages.
	Branding *Branding `json:"branding,omitempty"`
	// GrantTypes are the grants the client may use at the token endpoint: authorization_code,
	// refresh_token (with authorization_code) and client_credentials (RFC 6749 4.4: a machine acting on
	// its own behalf; confidential clients only). Default authorization_code and refresh_token. A client
	// without authorization_code needs no redirectURIs.
	GrantTypes []string `json:"grantTypes,omitempty"`
	// TokenEndpointAuthMethod is how a confidential client proves itself at the token endpoint: empty
	// (a client secret, HTTP Basic or in the form, when secretFile is set; none for a public client) or
	// private_key_jwt (RFC 7523, OpenID Connect Core 9: an assertion signed with one of the client's
	// keys, jwks or jwksFile).
	TokenEndpointAuthMethod string `json:"tokenEndpointAuthMethod,omitempty"`
	// TokenEndpointAuthSigningAlg is the one algorithm its assertions are signed with (RS256, RS384,
	// RS512, PS256, PS384, PS512, ES256, ES384, ES512); default: the algorithm of its first key (RS256
	// for an RSA key, ES256/ES384/ES512 by the EC key's curve).
	TokenEndpointAuthSigningAlg string `json:"tokenEndpointAuthSigningAlg,omitempty"`
	// JWKS is the client's public keys inline (a JSON Web Key Set, RFC 7517); JWKSFile names a file
	// holding one (read at start and on every reload, like secretFile). Keys from both count. Keys are
	// never fetched from a URL.
	JWKS     json.RawMessage `json:"jwks,omitempty"`
	JWKSFile string          `json:"jwksFile,omitempty"`
	// BackchannelLogoutURI is where the client hears that a person's sign-in ended (OpenID Connect
	// Back-Channel Logout 1.0): a logout token is POSTed to it when a browser session the client had a
	// grant in logs out, and when the person is signed out everywhere (a new or reset password, a
	// disabled account). https (http only for localhost and loopback addresses), no fragment.
	BackchannelLogoutURI string `json:"backchannelLogoutURI,omitempty"`
	// BackchannelLogoutSessionRequired: every logout token to this client names the session (sid); a
	// sign-out everywhere sends one per session the client's grants started in.
	BackchannelLogoutSessionRequired bool `json:"backchannelLogoutSessionRequired,omitempty"`
	// AccessTokenGroups puts the groups claim into the client's access tokens (JWT, RFC 9068), for an
	// API that authorises by group without calling userinfo; only with the groups scope granted, so the
	// client must list groups in its scopes.
	AccessTokenGroups bool `json:"accessTokenGroups,omitempty"`
	// Connectors lists the auth.connectors whose buttons this client's sign-in page shows, in order
	// (empty: none); connector_id in the authorization request goes straight to one of them.
	Connectors []string `json:"connectors,omitempty"`
}

// The grant types a client may be allowed (OAuthClient.GrantTypes).
const (
	GrantAuthorizationCode = "authorization_code"
	GrantRefreshToken      = "refresh_token"
	GrantClientCredentials = "client_credentials"
)

// AuthPrivateKeyJWT is the private_key_jwt client authentication method (OAuthClient.TokenEndpointAuthMethod).
const AuthPrivateKeyJWT = "private_key_jwt"

// Allows reports whether the client may use grant (after defaults: every client lists its grants).
func (c OAuthClient) Allows(grant string) bool { return slices.Contains(c.GrantTypes, grant) }

// Confidential reports whether the client authenticates at the token endpoint (a secret or keys).
func (c OAuthClient) Confidential() bool {
	return c.SecretFile != "" || c.TokenEndpointAuthMethod == AuthPrivateKeyJWT
}

// Defaults of the auth section, also used by tools that build an Auth by hand.
const (
	DefaultArgon2MemoryKiB   = 19456
	DefaultArgon2Iterations  = 2
	DefaultArgon2Parallelism = 1
)

func (a *Auth) applyDefaults(c *Config) {
	if a.Issuer == "" {
		a.Issuer = c.PublicURL
	}
	setDuration(&a.AccessTokenLifetime, 15*time.Minute)
	setDuration(&a.RefreshTokenLifetime, 30*24*time.Hour)
	setDuration(&a.CodeLifetime, 60*time.Second)
	setDuration(&a.IDTokenLifetime, time.Hour)
	setDuration(&a.SessionLifetime, 24*time.Hour)
	setDuration(&a.FamilyLifetime, 30*24*time.Hour)
	setDuration(&a.SessionIdleTimeout, 30*time.Minute)
	a.MFA.applyDefaults()
	if a.PasswordHash.MemoryKiB == 0 {
		a.PasswordHash.MemoryKiB = DefaultArgon2MemoryKiB
	}
	if a.PasswordHash.Iterations == 0 {
		a.PasswordHash.Iterations = DefaultArgon2Iterations
	}
	if a.PasswordHash.Parallelism == 0 {
		a.PasswordHash.Parallelism = DefaultArgon2Parallelism
	}
	if a.Throttle.AccountFailures == 0 {
		a.Throttle.AccountFailures = 10
	}
	if a.Throttle.IPFailures == 0 {
		a.Throttle.IPFailures = 50
	}
	setDuration(&a.Throttle.Window, 15*time.Minute)
	if a.Throttle.DeviceFailures == 0 {
		a.Throttle.DeviceFailures = 10
	}
	if a.Throttle.DelayAfter == 0 {
		a.Throttle.DelayAfter = 3
	}
	setDuration(&a.Throttle.MaxDelay, time.Minute)
	setDuration(&a.Throttle.DeviceLifetime, 180*24*time.Hour)
	if a.Throttle.SignupsPerIP == 0 {
		a.Throttle.SignupsPerIP = 10
	}
	if a.Throttle.SignupsPerAddress == 0 {
		a.Throttle.SignupsPerAddress = 3
	}
	setDuration(&a.Throttle.SignupWindow, time.Hour)
	if a.Throttle.MailsPerIP == 0 {
		a.Throttle.MailsPerIP = 10
	}
	if a.Throttle.MailsPerAddress == 0 {
		a.Throttle.MailsPerAddress = 3
	}
	setDuration(&a.Throttle.MailWindow, time.Hour)
	setDuration(&a.VerificationLinkLifetime, 24*time.Hour)
	setDuration(&a.ResetLinkLifetime, 15*time.Minute)
	if a.Notify.MailsPerAccount == 0 {
		a.Notify.MailsPerAccount = 5
	}
	setDuration(&a.Notify.Window, 24*time.Hour)
	setDuration(&a.Notify.LinkLifetime, 24*time.Hour)
	if a.MaxGrantsPerUser == 0 {
		a.MaxGrantsPerUser = 1000
	}
	if a.RateLimit.PerIP == 0 {
		a.RateLimit.PerIP = 1200
	}
	if a.RateLimit.PerUser == 0 {
		a.RateLimit.PerUser = 300
	}
	setDuration(&a.RateLimit.Window, time.Minute)
	a.Passkeys.applyDefaults()
	if a.Admin.Group == "" {
		a.Admin.Group = DefaultAdminGroup
	}
	setDuration(&a.Audit.Retention, 30*24*time.Hour)
	if a.Audit.MaxEntries == 0 {
		a.Audit.MaxEntries = 100000
	}
	if a.Audit.Webhook != nil {
		a.Audit.Webhook.applyDefaults()
	}
	for i := range a.Connectors {
		a.Connectors[i].applyDefaults()
	}
	for i := range a.Clients {
		if len(a.Clients[i].Scopes) == 0 {
			a.Clients[i].Scopes = []string{"openid", "profile", "email", "offline_access"}
		}
		if len(a.Clients[i].GrantTypes) == 0 {
			a.Clients[i].GrantTypes = []string{GrantAuthorizationCode, GrantRefreshToken}
		}
	}
}

func setDuration(d *Duration, def time.Duration) {
	if *d == 0 {
		*d = Duration(def)
	}
}

func (a Auth) validate() []error {
	var errs []error
	if a.Issuer != "" {
		if u, err := url.Parse(a.Issuer); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			errs = append(errs, fmt.Errorf("auth.issuer %q: want an http(s) URL without query or fragment", a.Issuer))
		} else if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
			// Under http cookies lose Secure and __Host-, and every token travels in clear text.
			errs = append(errs, fmt.Errorf("auth.issuer %q: must be https (http only for localhost and loopback addresses)", a.Issuer))
		}
	}
	// A slice, not a map: the messages come in the same order every time.
	for _, d := range []struct {
		name string
		d    Duration
	}{{"accessTokenLifetime", a.AccessTokenLifetime}, {"refreshTokenLifetime", a.RefreshTokenLifetime},
		{"codeLifetime", a.CodeLifetime}, {"idTokenLifetime", a.IDTokenLifetime}, {"sessionLifetime", a.SessionLifetime}, {"familyLifetime", a.FamilyLifetime}, {"sessionIdleTimeout", a.SessionIdleTimeout},
		{"throttle.window", a.Throttle.Window}, {"throttle.maxDelay", a.Throttle.MaxDelay}, {"throttle.deviceLifetime", a.Throttle.DeviceLifetime}, {"throttle.signupWindow", a.Throttle.SignupWindow}, {"throttle.mailWindow", a.Throttle.MailWindow},
		{"verificationLinkLifetime", a.VerificationLinkLifetime}, {"resetLinkLifetime", a.ResetLinkLifetime},
		{"rateLimit.window", a.RateLimit.Window}, {"audit.retention", a.Audit.Retention}, {"notify.window", a.Notify.Window}, {"notify.linkLifetime", a.Notify.LinkLifetime}} {
		if d.d < 0 {
			errs = append(errs, fmt.Errorf("auth.%s: must not be negative", d.name))
		}
	}
	if a.PasswordHash.MemoryKiB > 4<<20 {
		errs = append(errs, fmt.Errorf("auth.passwordHash.memoryKiB: at most 4 GiB"))
	}
	if a.PasswordHash.Concurrency < 0 || a.Throttle.AccountFailures < 0 || a.Throttle.IPFailures < 0 || a.Throttle.DeviceFailures < 0 || a.Throttle.DelayAfter < 0 || a.Throttle.SignupsPerIP < 0 || a.Throttle.SignupsPerAddress < 0 || a.Throttle.MailsPerIP < 0 || a.Throttle.MailsPerAddress < 0 || a.RateLimit.PerIP < 0 || a.RateLimit.PerUser < 0 || a.MaxGrantsPerUser < 0 {
		errs = append(errs, fmt.Errorf("auth: passwordHash.concurrency and throttle limits must not be negative"))
	}
	errs = append(errs, a.Passkeys.validate()...)
	errs = append(errs, a.Branding.validate("auth.branding")...)
	if a.Notify.MailsPerAccount < 0 {
		errs = append(errs, fmt.Errorf("auth.notify.mailsPerAccount: must not be negative"))
	}
	if a.Audit.MaxEntries < 0 {
		errs = append(errs, fmt.Errorf("auth.audit.maxEntries: must not be negative"))
	}
	if w := a.Audit.Webhook; w != nil {
		errs = append(errs, w.validate()...)
	}
	seen := map[string]bool{}
	for _, cl := range a.Clients {
		if cl.ClientID == "" {
			errs = append(errs, fmt.Errorf("auth.clients: clientID is required"))
			continue
		}
		if seen[cl.ClientID] {
			errs = append(errs, fmt.Errorf("auth.clients: duplicate clientID %q", cl.ClientID))
		}
		seen[cl.ClientID] = true
		if cl.Branding != nil {
			errs = append(errs, cl.Branding.validate("auth.clients["+cl.ClientID+"].branding")...)
		}
		if len(cl.RedirectURIs) == 0 && (len(cl.GrantTypes) == 0 || cl.Allows(GrantAuthorizationCode)) {
			errs = append(errs, fmt.Errorf("auth.clients[%s]: at least one redirectURI is required (a client without the authorization_code grant needs none)", cl.ClientID))
		}
		errs = append(errs, cl.validateMachine()...)
		for key, list := range map[string][]string{"audiences": cl.Audiences, "resources": cl.Resources} {
			for _, a := range list {
				if u, err := url.Parse(a); err != nil || !u.IsAbs() || u.Host == "" || u.Fragment != "" {
					errs = append(errs, fmt.Errorf("auth.clients[%s].%s: %q: want an absolute URI without fragment (RFC 8707)", cl.ClientID, key, a))
				}
			}
		}
		for _, list := range [][]string{cl.RedirectURIs, cl.PostLogoutRedirectURIs} {
			for _, r := range list {
				if err := validateRedirectURI(r); err != nil {
					errs = append(errs, fmt.Errorf("auth.clients[%s]: %w", cl.ClientID, err))
				}
			}
		}
		errs = append(errs, cl.validateLogoutAndGroups()...)
	}
	errs = append(errs, a.MFA.validate()...)
	errs = append(errs, a.validateConnectors()...)
	return errs
}

// validateLogoutAndGroups checks the back-channel logout URI (as a redirect URI is checked: the
// provider POSTs logout tokens to it) and that a client with accessTokenGroups may get the groups scope.
func (c OAuthClient) validateLogoutAndGroups() []error {
	var errs []error
	if c.BackchannelLogoutURI != "" {
		if err := validateRedirectURI(c.BackchannelLogoutURI); err != nil {
			errs = append(errs, fmt.Errorf("auth.clients[%s].backchannelLogoutURI: %w", c.ClientID, err))
		}
	} else if c.BackchannelLogoutSessionRequired {
		errs = append(errs, fmt.Errorf("auth.clients[%s]: backchannelLogoutSessionRequired needs a backchannelLogoutURI", c.ClientID))
	}
	if c.AccessTokenGroups && !slices.Contains(c.Scopes, "groups") {
		errs = append(errs, fmt.Errorf("auth.clients[%s]: accessTokenGroups needs groups in the client's scopes (the claim goes only into tokens granted the groups scope)", c.ClientID))
	}
	return errs
}

// validateRedirectURI accepts an absolute http(s) URL without a fragment; plain http only for
// loopback and localhost (OAuth 2.0 Security BCP).
func validateRedirectURI(r string) error {
	u, err := url.Parse(r)
	if err != nil || u.Host == "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("redirect URI %q: want an absolute URL without user info or fragment", r)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if loopbackHost(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("redirect URI %q: http is allowed only for localhost and loopback addresses", r)
	}
	return fmt.Errorf("redirect URI %q: scheme must be https (or http for localhost)", r)
}

// loopbackHost: localhost, a *.localhost name, or a loopback address (127.0.0.0/8, ::1).
func loopbackHost(h string) bool {
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// AskToReplaceWeak reports AskToReplaceWeakPasswords, true when unset.
func (a *Auth) AskToReplaceWeak() bool {
	return a.AskToReplaceWeakPasswords == nil || *a.AskToReplaceWeakPasswords
}
