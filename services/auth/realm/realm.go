// Package realm is the provider as one version of the configuration makes it: the issuer and its paths,
// the registered clients, the fosite provider composed over the token store, and the passkeys' relying
// party. Source rebuilds it when the configuration is reloaded, so clients and lifetimes change without
// a restart; every area of the provider reads the realm of its request from Source.Current.
package realm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/handler/openid"
	"github.com/ory/fosite/token/jwt"

	"github.com/formsservice/formsservice/services/auth/authmail"
	"github.com/formsservice/formsservice/services/auth/keys"
	"github.com/formsservice/formsservice/services/auth/passkey"
	"github.com/formsservice/formsservice/services/auth/store"
	"github.com/formsservice/formsservice/services/platform/clientip"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Realm is everything derived from one version of the configuration.
type Realm struct {
	Config   *config.Config // the configuration this realm was built from
	seen     *config.Config // the configuration in effect when it was last checked (differs after a failed reload)
	Issuer   string
	BasePath string // the issuer's path ("" at the root): the page's forms post below it
	Secure   bool   // the issuer is https: cookies get Secure and the __Host- prefix
	Provider fosite.OAuth2Provider
	Strategy oauth2.CoreStrategy // the provider's: the token endpoint's prefetch names records by it (D43)
	Clients  map[string]*Client
	Origins  map[string]bool // origins of every client's redirect URIs (CORS)
	Proxies  *clientip.Proxies
	// RP is the WebAuthn relying party; nil when passkeys are off (or the issuer is an IP address).
	RP *passkey.RelyingParty
}

// Auth is the realm's auth configuration.
func (rt *Realm) Auth() *config.Auth { return &rt.Config.Auth }

// ClientIDs lists the registered clients, for a refusal that names an unknown one.
func (rt *Realm) ClientIDs() []string { return slices.Sorted(maps.Keys(rt.Clients)) }

// PostLogoutURIs lists the client's registered post-logout redirect URIs as configured.
func (rt *Realm) PostLogoutURIs(clientID string) []string {
	for _, c := range rt.Config.Auth.Clients {
		if c.ClientID == clientID {
			return c.PostLogoutRedirectURIs
		}
	}
	return nil
}

// KnownClient is id when it names a registered client, else "" (an event never carries what a caller
// made up).
func (rt *Realm) KnownClient(id string) string {
	if _, ok := rt.Clients[id]; ok {
		return id
	}
	return ""
}

// AppClient is the registered client id names, or nil (an unknown ID, or the account page's own).
func (rt *Realm) AppClient(id string) *Client {
	if cl := rt.Clients[id]; cl != nil && !cl.Account {
		return cl
	}
	return nil
}

// ProductName names the service in authenticator apps and mails: the configured product name, else
// the issuer's host.
func (rt *Realm) ProductName() string { return authmail.ProductName(rt.Config.Auth) }

// Options are what a realm is built with besides the configuration.
type Options struct {
	Config config.Source
	Keys   *keys.Set
	Store  *store.Store
	Log    *slog.Logger
}

// Source holds the realm of the configuration in effect.
type Source struct {
	o       Options
	signer  *keys.Signer
	mu      sync.Mutex // serialises rebuilding the realm after a configuration change
	current atomic.Pointer[Realm]
}

// NewSource builds the realm of the current configuration.
func NewSource(o Options) (*Source, error) {
	s := &Source{o: o, signer: o.Keys.Signer()}
	rt, err := s.build(o.Config.Current())
	if err != nil {
		return nil, err
	}
	s.current.Store(rt)
	return s, nil
}

// Current returns the realm for the configuration in effect, rebuilding it after a reload. A
// configuration that cannot be built (an unreadable client secret) is logged and the previous realm kept.
func (s *Source) Current() *Realm {
	cfg := s.o.Config.Current()
	if rt := s.current.Load(); rt.seen == cfg {
		return rt
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rt := s.current.Load()
	if rt.seen == cfg {
		return rt
	}
	next, err := s.build(cfg)
	if err != nil {
		s.o.Log.Error("auth configuration not applied; keeping the previous one", "err", err)
		// Remember the failure for this config version so that it is not retried on every request.
		kept := *rt
		kept.seen = cfg
		s.current.Store(&kept)
		return &kept
	}
	s.current.Store(next)
	return next
}

// Client is the token store's look-up of a client (store.Options.Client).
func (s *Source) Client(_ context.Context, id string) (fosite.Client, error) {
	if c, ok := s.Current().Clients[id]; ok {
		return fositeClient(c), nil
	}
	return nil, fosite.ErrNotFound
}

func (s *Source) build(cfg *config.Config) (*Realm, error) {
	a := cfg.Auth
	issuer := strings.TrimSuffix(a.Issuer, "/")
	if issuer == "" {
		return nil, errors.New("auth: no issuer (set publicURL or auth.issuer)")
	}
	secret, rotated, err := s.o.Keys.HMACSecrets()
	if err != nil {
		return nil, err
	}
	iu, err := url.Parse(issuer)
	if err != nil {
		return nil, fmt.Errorf("auth: issuer: %w", err)
	}
	rt := &Realm{Config: cfg, seen: cfg, Issuer: issuer, BasePath: strings.TrimSuffix(iu.Path, "/"), Secure: iu.Scheme == "https",
		Clients: map[string]*Client{}, Origins: map[string]bool{}, Proxies: clientip.ParseProxies(cfg.TrustedProxies, cfg.ForwardingHeaders...)}
	for _, c := range a.Clients {
		cl, err := newClient(c)
		if err != nil {
			return nil, err
		}
		rt.Clients[c.ClientID] = cl
		for o := range cl.RedirectOrigins {
			rt.Origins[o] = true
		}
	}
	if rt.RP, err = relyingParty(issuer, a.Passkeys); err != nil {
		return nil, err
	}
	if err := addAccountClient(rt); err != nil {
		return nil, err
	}
	if err := addConsoleClient(rt); err != nil {
		return nil, err
	}
	rt.Provider, rt.Strategy = s.compose(a, issuer, secret, rotated)
	return rt, nil
}

// compose builds the fosite provider of a configuration: authorization code with PKCE (S256 only, every
// client), refresh tokens, client credentials (confidential clients allowed it), OpenID Connect,
// introspection and revocation, on the token store. Clients authenticate with a secret or, with
// private_key_jwt, an assertion whose aud is TokenURL and whose jti the store accepts once.
func (s *Source) compose(a config.Auth, issuer string, secret []byte, rotated [][]byte) (fosite.OAuth2Provider, oauth2.CoreStrategy) {
	fc := &fosite.Config{
		AccessTokenLifespan:            a.AccessTokenLifetime.D(),
		RefreshTokenLifespan:           a.RefreshTokenLifetime.D(),
		AuthorizeCodeLifespan:          a.CodeLifetime.D(),
		IDTokenLifespan:                a.IDTokenLifetime.D(),
		IDTokenIssuer:                  issuer,
		AccessTokenIssuer:              issuer,
		TokenURL:                       issuer + "/oauth2/token",
		ScopeStrategy:                  fosite.ExactScopeStrategy,
		AudienceMatchingStrategy:       exactAudiences,
		EnforcePKCE:                    true, // every client, confidential ones too (RFC 9700 2.1.1)
		EnablePKCEPlainChallengeMethod: false,
		AllowedPromptValues:            SupportedPrompts,
		RefreshTokenScopes:             []string{"offline_access"},
		MinParameterEntropy:            fosite.MinParameterEntropy,
		JWTScopeClaimKey:               jwt.JWTScopeFieldString,
		ClientSecretsHasher:            sha256Hasher{},
		GlobalSecret:                   secret,
		RotatedGlobalSecrets:           rotated,
		SendDebugMessagesToClients:     false,
	}
	core := &store.Strategy{JWT: &oauth2.DefaultJWTStrategy{
		Signer:          s.signer,
		HMACSHAStrategy: compose.NewOAuth2HMACStrategy(fc),
		Config:          fc,
	}}
	strategy := &compose.CommonStrategy{
		CoreStrategy:               core,
		OpenIDConnectTokenStrategy: &openid.DefaultStrategy{Signer: s.signer, Config: fc},
		Signer:                     s.signer,
	}
	provider := compose.Compose(fc, s.o.Store, strategy,
		compose.OAuth2AuthorizeExplicitFactory,
		compose.OAuth2RefreshTokenGrantFactory,
		compose.OAuth2ClientCredentialsGrantFactory,
		compose.OpenIDConnectExplicitFactory,
		compose.OpenIDConnectRefreshFactory,
		compose.OAuth2TokenIntrospectionFactory,
		compose.OAuth2TokenRevocationFactory,
		compose.OAuth2PKCEFactory,
	)
	fc.TokenEndpointHandlers = skipOthersGrants(fc.TokenEndpointHandlers)
	if f, ok := provider.(*fosite.Fosite); ok {
		f.Config = assertionAudiences{Config: fc, issuer: issuer}
	}
	return provider, core
}

// assertionAudiences is the provider's configuration as fosite's client authentication reads it: a
// private_key_jwt assertion may name the token endpoint (OpenID Connect Core 9, what fosite checks) or
// the issuer (RFC 7523 3: "identifies the authorization server"; the issuer alone is what the newer
// guidance asks clients to send, against audience injection) as its aud.
type assertionAudiences struct {
	*fosite.Config
	issuer string
}

func (a assertionAudiences) GetTokenURLs(ctx context.Context) []string {
	return []string{a.Config.TokenURL, a.issuer}
}

// exactAudiences is fosite's audience check, at authorize and at every refresh: each requested (or,
// at a refresh, granted) audience must be one of the client's exactly, as the resource parameter is
// (checkAuthorizeParams). fosite's default accepts any sub-path of an allowed URI (a client allowed
// https://api.example/ would get a token for https://api.example/admin/billing). A refusal is RFC 8707's
// invalid_target.
func exactAudiences(allowed, requested []string) error {
	for _, a := range requested {
		if !slices.Contains(allowed, a) {
			return ErrInvalidTarget.WithHintf("The audience %q is not an API this client may request tokens for.", a)
		}
	}
	return nil
}

// ErrInvalidTarget is RFC 8707's error for a resource the client may not ask for.
var ErrInvalidTarget = &fosite.RFC6749Error{ErrorField: "invalid_target", DescriptionField: "The requested resource is invalid, missing, unknown, or malformed.", CodeField: 400}

// SupportedPrompts are the prompt values the provider honours: none (never shows the page) and login
// (always shows it). consent and select_account are refused (there is no consent screen and a browser
// holds one session), and discovery lists only these.
var SupportedPrompts = []string{"none", "login"}

// relyingParty is the passkeys' relying party for the configuration, or nil when passkeys are off or
// cannot work: an issuer on an IP address (http://127.0.0.1:8080) has no RP ID.
func relyingParty(issuer string, c config.AuthPasskeys) (*passkey.RelyingParty, error) {
	if !c.On() {
		return nil, nil
	}
	rp, err := passkey.NewRelyingParty(issuer, c.RPName, c.Timeout.D())
	if errors.Is(err, passkey.ErrNoRelyingParty) {
		return nil, nil
	}
	return rp, err
}
