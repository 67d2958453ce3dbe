// Package auth is the OAuth 2.0 / OpenID Connect provider: ory/fosite (authorization code with PKCE,
// refresh tokens, OpenID Connect, revocation, introspection) on the Redis storage of package store, with
// the hosted sign-in page of package page, mounted in Fiber through its net/http adaptor. Every endpoint
// is listed in routes.go.
package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/handler/openid"
	"github.com/ory/fosite/token/jwt"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/device"
	"github.com/formsservice/formsservice/services/auth/keys"
	"github.com/formsservice/formsservice/services/auth/link"
	"github.com/formsservice/formsservice/services/auth/mfa"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/passkey"
	"github.com/formsservice/formsservice/services/auth/sso"
	"github.com/formsservice/formsservice/services/auth/store"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"

	"github.com/formsservice/formsservice/services/platform/clientip"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/mail"
	"github.com/formsservice/formsservice/services/platform/refusal"
	"github.com/formsservice/formsservice/services/platform/secretfile"
)

// Options are the service's dependencies.
type Options struct {
	Config config.Source
	Redis  redis.UniversalClient
	Logger *slog.Logger
	// Registerer receives the service's metrics (nil: a private one).
	Registerer prometheus.Registerer
	// Keys sign every token; see keys.Load and keys.Generate.
	Keys *keys.Set
	// AuditLog is the audit trail's log stream (audit.NewLog, at info whatever the log level); nil:
	// Logger with stream=audit.
	AuditLog *slog.Logger
	// Mail sends the service's mail (nil: the relay of the configuration in force, mail.Live).
	Mail mail.Sender
	// SignupMail sends what a sign-up leads to (nil: the sign-up mails, through Mail).
	SignupMail SignupMail
	// Now is the clock of the sign-in throttle, device cookies, audit events and second-factor codes
	// (default time.Now).
	Now func() time.Time
	// Dev is the all-in-one dev server: refused sign-in links are explained at info level, and on the
	// error page (refusals.go).
	Dev bool
}

// Service is the auth service.
type Service struct {
	cfg      config.Source
	rdb      redis.UniversalClient
	log      *slog.Logger
	keys     *keys.Set
	signer   *keys.Signer
	store    *store.Store
	users    *users.Store
	sessions *sso.Store
	throttle *throttle.Limiter
	passkeys *passkey.Store
	pages    *page.Renderer
	account  *page.AccountRenderer
	mfa      *mfa.Store
	links    *link.Store // the mailed journeys' links (journeys.go)
	mail     mail.Sender // the account notices ("your password was changed")
	metrics  *metrics
	jwks     []byte
	refusals *refusal.Recorder
	audit    *audit.Recorder
	// signupMail tells an address's owner what a sign-up did (signupmail.go).
	signupMail SignupMail
	now        func() time.Time
	// deviceKeys sign device cookies (package device); derived from the signing key.
	deviceKeys device.Keys

	mu      sync.Mutex // serialises rebuilding the runtime after a config change
	current atomic.Pointer[runtime]
}

// runtime is everything derived from one version of the configuration; it is rebuilt when the
// configuration is reloaded, so clients and lifetimes change without a restart.
type runtime struct {
	cfg      *config.Config // the configuration this runtime was built from
	seen     *config.Config // the configuration in effect when it was last checked (differs after a failed reload)
	issuer   string
	basePath string // the issuer's path ("" at the root): the page's forms post below it
	secure   bool   // the issuer is https: cookies get Secure and the __Host- prefix
	provider fosite.OAuth2Provider
	strategy oauth2.CoreStrategy // the provider's: the token endpoint's prefetch names records by it (D43)
	clients  map[string]*client
	origins  map[string]bool // origins of every client's redirect URIs (CORS)
	proxies  *clientip.Proxies
	// rp is the WebAuthn relying party; nil when passkeys are off (or the issuer is an IP address).
	rp *passkey.RelyingParty
	// discovery is the encoded /.well-known/openid-configuration document.
	discovery []byte
}

// client is a registered client as fosite sees it, plus what the page and logout need.
type client struct {
	*fosite.DefaultClient
	name            string
	postLogout      map[string]bool
	redirectOrigins map[string]bool
	requireMFA      bool // a second factor in every sign-in to this client
	requireVerified bool // only accounts with a verified e-mail address sign in to this client (verify.go)
	// account marks the provider's own account page (account_client.go), which signs in through the
	// hosted page like a client but gets no code.
	account bool
	// resources are the APIs this client serves as a resource server (config resources): introspection
	// discloses the access tokens for them.
	resources []string
	branding  *config.Branding // over the platform's on this client's pages (nil: none)
}

// New builds the service. The configuration is read now and again whenever it changes.
func New(o Options) (*Service, error) {
	if o.Keys == nil {
		return nil, errors.New("auth: no signing keys")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	cfg := o.Config.Current()
	sealer, err := mfa.LoadSealer(cfg.Auth.MFA.SecretKeyFile)
	if err != nil {
		return nil, err
	}
	ph := cfg.Auth.PasswordHash
	hasher := users.NewHasher(users.ParamsFrom(ph), ph.Concurrency)
	s := &Service{
		cfg:      o.Config,
		rdb:      o.Redis,
		log:      o.Logger,
		keys:     o.Keys,
		signer:   o.Keys.Signer(),
		users:    users.NewStore(o.Redis, hasher),
		sessions: sso.New(o.Redis).WithIdle(func() time.Duration { return o.Config.Current().Auth.SessionIdleTimeout.D() }),
		throttle: throttle.New(o.Redis, o.Now),
		passkeys: passkey.NewStore(o.Redis, nil),
		pages:    page.New(),
		account:  page.NewAccount(),
		mfa:      mfa.NewStore(o.Redis, sealer, o.Now),
		jwks:     o.Keys.JWKS(),
		now:      o.Now,
	}
	if o.Mail == nil {
		o.Mail = mail.Live(o.Config, nil)
	}
	s.mail = o.Mail
	if s.signupMail = o.SignupMail; s.signupMail == nil {
		s.signupMail = mailSignup{sender: o.Mail}
	}
	if s.deviceKeys.Current, s.deviceKeys.Previous, err = o.Keys.Secrets(device.Purpose); err != nil {
		return nil, err
	}
	var lk link.Keys
	if lk.Current, lk.Others, err = o.Keys.Secrets(link.Purpose); err != nil {
		return nil, err
	}
	s.links = link.New(o.Redis, lk, o.Now)
	if s.metrics, err = newMetrics(o.Registerer); err != nil {
		return nil, err
	}
	if o.AuditLog == nil {
		o.AuditLog = o.Logger.With("stream", "audit")
	}
	trail := audit.NewStore(o.Redis, func() audit.Limits { return auditLimits(s.rt().cfg.Auth) })
	if s.audit, err = audit.New(audit.Options{Store: trail, Log: o.AuditLog, Registerer: o.Registerer, Now: o.Now}); err != nil {
		return nil, err
	}
	s.refusals, err = refusal.New(refusal.Options{Service: "auth", Logger: o.Logger, Registerer: o.Registerer, Dev: o.Dev, Reasons: refusalReasons})
	if err != nil {
		return nil, err
	}
	s.store = store.New(store.Options{
		Redis:      o.Redis,
		Client:     s.getClient,
		NewSession: newSession,
		Lifetimes: func() store.Lifetimes {
			// The runtime's configuration, which fosite's lifetimes came from too (after a reload that
			// could not be applied, the latest configuration is not the one in effect).
			a := s.rt().cfg.Auth
			return store.Lifetimes{Code: a.CodeLifetime.D(), Access: a.AccessTokenLifetime.D(), Refresh: a.RefreshTokenLifetime.D(),
				Family: a.FamilyLifetime.D(), MaxFamilies: a.MaxGrantsPerUser}
		},
		OnReplay: s.replayed,
	})
	rt, err := s.build(cfg)
	if err != nil {
		return nil, err
	}
	s.current.Store(rt)
	return s, nil
}

// Run implements server.Runner: it writes the audit trail's queued events to Redis until ctx ends.
func (s *Service) Run(ctx context.Context) error { return s.audit.Run(ctx) }

// Audit returns the service's audit recorder.
func (s *Service) Audit() *audit.Recorder { return s.audit }

// Name implements server.Service.
func (s *Service) Name() string { return "auth" }

// Ready implements server.Service: the store answers.
func (s *Service) Ready(ctx context.Context) error { return s.store.Ready(ctx) }

// Users returns the user store (the dev server creates its fixture user through it).
func (s *Service) Users() *users.Store { return s.users }

// Store returns the token store.
func (s *Service) Store() *store.Store { return s.store }

// rt returns the runtime for the configuration in effect, rebuilding it after a reload. A configuration
// that cannot be built (an unreadable client secret) is logged and the previous runtime kept.
func (s *Service) rt() *runtime {
	cfg := s.cfg.Current()
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
		s.log.Error("auth configuration not applied; keeping the previous one", "err", err)
		// Remember the failure for this config version so that it is not retried on every request.
		kept := *rt
		kept.seen = cfg
		s.current.Store(&kept)
		return &kept
	}
	s.current.Store(next)
	return next
}

func (s *Service) getClient(_ context.Context, id string) (fosite.Client, error) {
	if c, ok := s.rt().clients[id]; ok {
		return c, nil
	}
	return nil, fosite.ErrNotFound
}

func (s *Service) build(cfg *config.Config) (*runtime, error) {
	a := cfg.Auth
	issuer := strings.TrimSuffix(a.Issuer, "/")
	if issuer == "" {
		return nil, errors.New("auth: no issuer (set publicURL or auth.issuer)")
	}
	secret, rotated, err := s.keys.HMACSecrets()
	if err != nil {
		return nil, err
	}
	iu, err := url.Parse(issuer)
	if err != nil {
		return nil, fmt.Errorf("auth: issuer: %w", err)
	}
	rt := &runtime{cfg: cfg, seen: cfg, issuer: issuer, basePath: strings.TrimSuffix(iu.Path, "/"), secure: iu.Scheme == "https",
		clients: map[string]*client{}, origins: map[string]bool{}, proxies: clientip.ParseProxies(cfg.TrustedProxies, cfg.ForwardingHeaders...)}
	for _, c := range a.Clients {
		cl, err := newClient(c)
		if err != nil {
			return nil, err
		}
		rt.clients[c.ClientID] = cl
		for o := range cl.redirectOrigins {
			rt.origins[o] = true
		}
	}
	if rt.discovery, err = discoveryDoc(issuer, rt.clients); err != nil {
		return nil, err
	}
	if rt.rp, err = relyingParty(issuer, a.Passkeys); err != nil {
		return nil, err
	}
	if err := addAccountClient(rt); err != nil { // after discovery: the account page is no client of anyone's
		return nil, err
	}
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
		AllowedPromptValues:            supportedPrompts,
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
	rt.strategy = core
	strategy := &compose.CommonStrategy{
		CoreStrategy:               core,
		OpenIDConnectTokenStrategy: &openid.DefaultStrategy{Signer: s.signer, Config: fc},
		Signer:                     s.signer,
	}
	rt.provider = compose.Compose(fc, s.store, strategy,
		compose.OAuth2AuthorizeExplicitFactory,
		compose.OAuth2RefreshTokenGrantFactory,
		compose.OpenIDConnectExplicitFactory,
		compose.OpenIDConnectRefreshFactory,
		compose.OAuth2TokenIntrospectionFactory,
		compose.OAuth2TokenRevocationFactory,
		compose.OAuth2PKCEFactory,
	)
	fc.TokenEndpointHandlers = skipOthersGrants(fc.TokenEndpointHandlers)
	return rt, nil
}

// exactAudiences is fosite's audience check, at authorize and at every refresh: each requested (or,
// at a refresh, granted) audience must be one of the client's exactly, as the resource parameter is
// (checkAuthorizeParams). fosite's default accepts any sub-path of an allowed URI (a client allowed
// https://api.example/ would get a token for https://api.example/admin/billing). A refusal is RFC 8707's
// invalid_target.
func exactAudiences(allowed, requested []string) error {
	for _, a := range requested {
		if !slices.Contains(allowed, a) {
			return errInvalidTarget.WithHintf("The audience %q is not an API this client may request tokens for.", a)
		}
	}
	return nil
}

// supportedPrompts are the prompt values the provider honours: none (never shows the page) and login
// (always shows it). consent and select_account are refused (there is no consent screen and a browser
// holds one session), and discovery lists only these.
var supportedPrompts = []string{"none", "login"}

// newClient turns a configured client into a fosite client. A client with a secret file is
// confidential; the secret is kept as its SHA-256 only.
func newClient(c config.OAuthClient) (*client, error) {
	dc := &fosite.DefaultClient{
		ID:            c.ClientID,
		RedirectURIs:  c.RedirectURIs,
		GrantTypes:    []string{"authorization_code", "refresh_token"},
		ResponseTypes: []string{"code"},
		Scopes:        c.Scopes,
		Audience:      []string{c.ClientID},
		Public:        c.SecretFile == "",
	}
	if len(c.Audiences) > 0 {
		dc.Audience = slices.Clone(c.Audiences) // the APIs its access tokens may be for
	}
	if c.SecretFile != "" {
		secret, err := secretfile.Read(c.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("auth.clients[%s]: %w", c.ClientID, err)
		}
		if len(secret) < 16 {
			return nil, fmt.Errorf("auth.clients[%s]: secret: at least 16 characters", c.ClientID)
		}
		h := sha256.Sum256([]byte(secret))
		dc.Secret = h[:]
	}
	cl := &client{DefaultClient: dc, name: c.Name, postLogout: map[string]bool{}, redirectOrigins: map[string]bool{}, requireMFA: c.RequireMFA,
		requireVerified: c.RequireVerifiedEmail, resources: c.Resources, branding: c.Branding}
	if cl.name == "" {
		cl.name = c.ClientID
	}
	for _, u := range c.PostLogoutRedirectURIs {
		cl.postLogout[u] = true
	}
	for _, r := range c.RedirectURIs {
		if o := originOf(r); o != "" {
			cl.redirectOrigins[o] = true
		}
	}
	return cl, nil
}

// originOf returns scheme://host[:port] of an absolute URL, lower case as browsers send it.
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

// sha256Hasher compares client secrets by SHA-256 in constant time. Client secrets are long random
// strings, so a slow password hash (fosite's default bcrypt) would only cost CPU on every token request.
type sha256Hasher struct{}

func (sha256Hasher) Compare(_ context.Context, hash, data []byte) error {
	h := sha256.Sum256(data)
	if subtle.ConstantTimeCompare(hash, h[:]) != 1 {
		return errors.New("secret mismatch")
	}
	return nil
}

func (sha256Hasher) Hash(_ context.Context, data []byte) ([]byte, error) {
	h := sha256.Sum256(data)
	return h[:], nil
}
