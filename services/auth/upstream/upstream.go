// Package upstream is the client of one upstream OpenID Connect provider (a connector, D58): its
// discovery document read once and kept, the authorization URL of a code flow with PKCE (S256), state
// and nonce, and the answer's check: the iss parameter (RFC 9207), the code exchanged, the ID token
// verified against the upstream's JWKS with the pinned algorithms, its issuer (Microsoft's per-tenant
// issuers too), audience, expiry and nonce, and the person's details read by the configured claims.
// It keeps nothing per sign-in: the caller stores state, nonce and verifier. go-oidc verifies the
// token, golang.org/x/oauth2 makes the PKCE values and exchanges the code.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/services/platform/config"
)

// Errors callers tell apart.
var (
	// ErrUnreachable: the upstream did not answer (discovery, the token endpoint, its keys); the
	// sign-in may work later.
	ErrUnreachable = errors.New("upstream: the provider did not answer")
	// ErrRefused: the upstream's answer is not one to sign in with (a wrong issuer or audience, a bad
	// signature, an expired token, a nonce that is not ours, no subject).
	ErrRefused = errors.New("upstream: the answer was refused")
	// ErrNotAllowed: the upstream vouches for the person, who is not one the connector lets in (a
	// GitHub account in none of the connector's organisations).
	ErrNotAllowed = errors.New("upstream: the provider's account is not allowed here")
)

// Identity is the person as the upstream describes them.
type Identity struct {
	Issuer        string // the ID token's iss
	Subject       string // the configured subject claim (default sub): stable per upstream account
	Email         string
	EmailVerified bool
	Name          string
	Groups        []string
	AMR           []string // the upstream's own amr values, for the audit trail
	// Recheck is what a later re-check at a refresh needs, opaque and connector-specific (an OpenID
	// provider's refresh token, an LDAP entry's DN); empty: nothing to re-check.
	Recheck string
	// Logout is what single logout needs of the sign-in, opaque and connector-specific (a SAML
	// assertion's NameID and SessionIndex, D89); kept sealed with the session, never logged.
	Logout string
}

// Connector is one upstream provider, as one version of the configuration describes it.
type Connector struct {
	cfg         config.Connector
	secret      string
	redirectURL string
	client      *http.Client

	mu       sync.Mutex
	provider *oidc.Provider
	iss9207  bool // the upstream says it sends iss in its answers (RFC 9207)
}

// New returns the connector for c with its client secret and our callback URL. client makes every
// request to the upstream (nil: one with a 10 s timeout).
func New(c config.Connector, secret, redirectURL string, client *http.Client) *Connector {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	return &Connector{cfg: c, secret: secret, redirectURL: redirectURL, client: client}
}

// Config is the connector's configuration.
func (c *Connector) Config() config.Connector { return c.cfg }

// tenantPlaceholder is what Microsoft's multi-tenant discovery documents say in place of the tenant.
const tenantPlaceholder = "{tenantid}"

// discover reads the upstream's discovery document once; a failure is retried at the next call.
func (c *Connector) discover(ctx context.Context) (*oidc.Provider, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.provider != nil {
		return c.provider, nil
	}
	// The key set fetches later with this context: it must outlive the request that discovered.
	dctx := oidc.ClientContext(context.WithoutCancel(ctx), c.client)
	if c.cfg.MultiTenant() {
		dctx = oidc.InsecureIssuerURLContext(dctx, "https://login.microsoftonline.com/"+tenantPlaceholder+"/v2.0")
	}
	p, err := oidc.NewProvider(dctx, c.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("%w: discovery of %s: %v", ErrUnreachable, c.cfg.Issuer, err)
	}
	var meta struct {
		ISS bool `json:"authorization_response_iss_parameter_supported"`
	}
	_ = p.Claims(&meta)
	c.provider, c.iss9207 = p, meta.ISS
	return p, nil
}

func (c *Connector) oauth2(p *oidc.Provider) *oauth2.Config {
	scopes := c.cfg.Scopes
	if c.cfg.OfflineAccess && !c.googleOffline() && !slices.Contains(scopes, "offline_access") {
		scopes = append(slices.Clone(scopes), "offline_access")
	}
	return &oauth2.Config{ClientID: c.cfg.ClientID, ClientSecret: c.secret, Endpoint: p.Endpoint(), RedirectURL: c.redirectURL, Scopes: scopes}
}

// googleOffline reports whether the connector asks Google for a refresh token: Google refuses the
// offline_access scope and takes access_type=offline instead.
func (c *Connector) googleOffline() bool {
	return c.cfg.OfflineAccess && c.cfg.Preset == config.PresetGoogle
}

// AuthOrigin is the origin of the upstream's authorization endpoint (a page whose form leads there
// names it in its CSP form-action).
func (c *Connector) AuthOrigin(ctx context.Context) (string, error) {
	p, err := c.discover(ctx)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(p.Endpoint().AuthURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%w: the authorization endpoint %q", ErrRefused, p.Endpoint().AuthURL)
	}
	return u.Scheme + "://" + u.Host, nil
}

// Start is the values one sign-in keeps until the upstream answers.
type Start struct {
	State, Nonce, Verifier string
}

// NewStart makes fresh values for one sign-in.
func NewStart() Start {
	return Start{State: oauth2.GenerateVerifier(), Nonce: oauth2.GenerateVerifier(), Verifier: oauth2.GenerateVerifier()}
}

// AuthURL is where to send the browser for s; extra are further parameters (login_hint, prompt).
func (c *Connector) AuthURL(ctx context.Context, s Start, extra map[string]string) (string, error) {
	p, err := c.discover(ctx)
	if err != nil {
		return "", err
	}
	opts := []oauth2.AuthCodeOption{oidc.Nonce(s.Nonce), oauth2.S256ChallengeOption(s.Verifier)}
	if c.cfg.OfflineAccess {
		// OpenID Connect Core 11: offline_access is granted only with prompt=consent. Google asks for
		// the refresh token its own way, and gives a new one only at a consent (D78).
		opts = append(opts, oauth2.SetAuthURLParam("prompt", "consent"))
		if c.googleOffline() {
			opts = append(opts, oauth2.AccessTypeOffline)
		}
	}
	for k, v := range extra {
		opts = append(opts, oauth2.SetAuthURLParam(k, v))
	}
	return c.oauth2(p).AuthCodeURL(s.State, opts...), nil
}

// Exchange checks the upstream's answer to the sign-in s (the callback's code and iss parameters),
// exchanges the code with the verifier and verifies the ID token.
func (c *Connector) Exchange(ctx context.Context, s Start, code, iss string) (*Identity, error) {
	p, err := c.discover(ctx)
	if err != nil {
		return nil, err
	}
	// RFC 9207: an upstream that sends iss must send its own; one that says it sends iss must send it
	// (a mix-up: the answer of another provider sent to this sign-in's callback).
	if iss != "" || c.iss9207 {
		if want := c.issuerFor(p); iss != want && !(c.cfg.MultiTenant() && tenantIssuer(iss)) {
			return nil, fmt.Errorf("%w: the answer's iss %q is not the connector's issuer %q (RFC 9207)", ErrRefused, iss, want)
		}
	}
	if code == "" {
		return nil, fmt.Errorf("%w: the answer has no code", ErrRefused)
	}
	tok, err := c.oauth2(p).Exchange(oidc.ClientContext(ctx, c.client), code, oauth2.VerifierOption(s.Verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return nil, fmt.Errorf("%w: the token endpoint refused the code: %s %s", ErrRefused, re.ErrorCode, re.ErrorDescription)
		}
		return nil, fmt.Errorf("%w: the token endpoint: %v", ErrUnreachable, err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, fmt.Errorf("%w: the token response has no id_token", ErrRefused)
	}
	// The provider's own key set: fetched once with the discovery's client and kept (refetched when a
	// token names a key it does not know), not once per sign-in.
	v := p.Verifier(&oidc.Config{ClientID: c.cfg.ClientID, SupportedSigningAlgs: c.cfg.SigningAlgs, SkipIssuerCheck: c.cfg.MultiTenant()})
	idt, err := v.Verify(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("%w: the ID token: %v", ErrRefused, err)
	}
	if idt.Nonce != s.Nonce {
		return nil, fmt.Errorf("%w: the ID token's nonce is not this sign-in's", ErrRefused)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return nil, fmt.Errorf("%w: the ID token's claims: %v", ErrRefused, err)
	}
	if c.cfg.MultiTenant() {
		tid, _ := claims["tid"].(string)
		if tid == "" || idt.Issuer != strings.ReplaceAll(c.issuerFor(p), tenantPlaceholder, tid) {
			return nil, fmt.Errorf("%w: the ID token's issuer %q is not its tenant's (tid %q)", ErrRefused, idt.Issuer, tid)
		}
	}
	id, err := c.identity(idt.Issuer, claims)
	if err == nil && tok.RefreshToken != "" {
		id.Recheck = recheckState{RefreshToken: tok.RefreshToken, Subject: id.Subject, Issuer: idt.Issuer}.encode()
	}
	return id, err
}

// issuerFor is the issuer the upstream's discovery document names (with {tenantid} for Microsoft's
// multi-tenant endpoints).
func (c *Connector) issuerFor(p *oidc.Provider) string {
	var meta struct {
		Issuer string `json:"issuer"`
	}
	if p.Claims(&meta) == nil && meta.Issuer != "" {
		return meta.Issuer
	}
	return c.cfg.Issuer
}

// tenantIssuer: iss is one tenant's Microsoft issuer (a multi-tenant connector's answers carry them).
func tenantIssuer(iss string) bool {
	rest, ok := strings.CutPrefix(iss, "https://login.microsoftonline.com/")
	tenant, ok2 := strings.CutSuffix(rest, "/v2.0")
	return ok && ok2 && tenant != "" && !strings.Contains(tenant, "/")
}

// identity reads the person's details from the claims by the connector's mapping.
func (c *Connector) identity(issuer string, claims map[string]any) (*Identity, error) {
	m := c.cfg.Claims
	id := &Identity{Issuer: issuer, Subject: str(claims[m.Subject]), Email: str(claims[m.Email]), Name: str(claims[m.Name])}
	if id.Subject == "" {
		return nil, fmt.Errorf("%w: the ID token has no %s", ErrRefused, m.Subject)
	}
	id.EmailVerified = truthy(claims[m.EmailVerified])
	if m.Groups != "" {
		id.Groups = strs(claims[m.Groups])
	}
	id.AMR = strs(claims["amr"])
	return id, nil
}

func str(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64: // a numeric subject
		return fmt.Sprintf("%.0f", v)
	}
	return ""
}

// truthy is a claim that says yes: true, or "true" (some upstreams send booleans as strings), or 1.
func truthy(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case string:
		return v == "true" || v == "1"
	case float64:
		return v == 1
	}
	return false
}

func strs(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
