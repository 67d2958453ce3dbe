// Package auth is the OAuth 2.0 / OpenID Connect provider: ory/fosite (authorization code with PKCE,
// refresh tokens, OpenID Connect, revocation, introspection) on the Redis storage of package store, with
// the hosted sign-in page of package page, mounted in Fiber through its net/http adaptor. This package is
// the composition root: it builds the kits (web, signon, bearer, federation), the domain operations (accounts) and
// the areas (oauth, signin, journeys, account, admin) from their dependencies, and lists every endpoint
// in routes.go.
package auth

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/ory/fosite"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/account"
	"github.com/formsservice/formsservice/services/auth/accounts"
	"github.com/formsservice/formsservice/services/auth/admin"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/auditsink"
	"github.com/formsservice/formsservice/services/auth/backchannel"
	"github.com/formsservice/formsservice/services/auth/bearer"
	"github.com/formsservice/formsservice/services/auth/claims"
	"github.com/formsservice/formsservice/services/auth/console"
	"github.com/formsservice/formsservice/services/auth/device"
	"github.com/formsservice/formsservice/services/auth/federation"
	"github.com/formsservice/formsservice/services/auth/journeys"
	"github.com/formsservice/formsservice/services/auth/keys"
	"github.com/formsservice/formsservice/services/auth/mfa"
	"github.com/formsservice/formsservice/services/auth/notify"
	"github.com/formsservice/formsservice/services/auth/oauth"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/passkey"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/signin"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/sso"
	"github.com/formsservice/formsservice/services/auth/store"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
	"github.com/formsservice/formsservice/services/forms/manage"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/mail"
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
	// BackchannelTimeout bounds each attempt to send a logout token to a relying party (default
	// backchannel.DefaultTimeout).
	BackchannelTimeout time.Duration
	// Dev is the all-in-one dev server: refused sign-in links are explained at info level, and on the
	// error page.
	Dev bool
	// MFAKey (32 bytes) seals TOTP secrets when the configuration names no auth.mfa.secretKeyFile: the
	// dev server's key in memory over its in-memory store, which keeps nothing either.
	MFAKey []byte
}

// SignupMail sends what a sign-up leads to (journeys.SignupMail).
type SignupMail = journeys.SignupMail

// SignupNotice is what a sign-up mail is about (journeys.SignupNotice).
type SignupNotice = journeys.SignupNotice

// ErrAlreadyVerified: SendVerification was asked for an account whose address is verified already.
var ErrAlreadyVerified = accounts.ErrAlreadyVerified

// Service is the auth service: its stores, kits and areas, wired once.
type Service struct {
	store    *store.Store
	users    *users.Store
	audit    *audit.Recorder
	trail    *audit.Store
	accounts *accounts.Ops
	web      *web.Kit
	oauth    *oauth.Handler
	signin   *signin.Handler
	saml     *signin.SAMLEndpoints // the SAML connectors' routes (D76)
	journeys *journeys.Handler
	account  *account.Handler
	admin    *admin.Handler
	console  *console.Handler // the admin console's files (D65)
	notices  *notify.Notifier // the owner's mails of a new browser and of a lockout (D66)
	// backchannel sends the logout tokens to relying parties (D60).
	backchannel *backchannel.Worker
	// sink sends the audit trail to auth.audit.webhook (D67); nil when none is configured.
	sink *auditsink.Worker
}

// New builds the service. The configuration is read now and again whenever it changes.
func New(o Options) (*Service, error) {
	if o.Keys == nil {
		return nil, errors.New("auth: no signing keys")
	}
	o = withDefaults(o)
	cfg := o.Config.Current()
	sealer, err := mfa.LoadSealer(cfg.Auth.MFA.SecretKeyFile)
	if err == nil && cfg.Auth.MFA.SecretKeyFile == "" && o.MFAKey != nil {
		if len(o.MFAKey) != 32 {
			return nil, errors.New("auth: Options.MFAKey is not 32 bytes")
		}
		sealer, err = mfa.NewSealer(o.MFAKey)
	}
	if err != nil {
		return nil, err
	}
	ph := cfg.Auth.PasswordHash
	s := &Service{users: users.NewStore(o.Redis, users.NewHasher(users.ParamsFrom(ph), ph.Concurrency))}
	var source *realm.Source // the store reads clients and lifetimes from the realm it is part of
	auth := func() config.Auth { return source.Current().Config.Auth }
	trail := audit.NewStore(o.Redis, func() audit.Limits {
		a := auth()
		return audit.Limits{Retention: a.Audit.Retention.D(), MaxEntries: a.Audit.MaxEntries}
	})
	var chain audit.ChainKeys // the security events' chain, keyed from the signing key (D52)
	if chain.Current, chain.Others, err = o.Keys.Secrets(audit.ChainPurpose); err != nil {
		return nil, err
	}
	trail.Chained(chain)
	s.trail = trail
	if s.audit, err = audit.New(audit.Options{Store: trail, Log: o.AuditLog, Registerer: o.Registerer, Now: o.Now}); err != nil {
		return nil, err
	}
	if s.sink, err = newSink(o, cfg.Auth.Audit.Webhook); err != nil {
		return nil, err
	}
	s.store = store.New(store.Options{
		Redis:      o.Redis,
		Client:     func(ctx context.Context, id string) (fosite.Client, error) { return source.Client(ctx, id) },
		NewSession: claims.NewSession,
		Lifetimes: func() store.Lifetimes {
			// The realm's configuration, which fosite's lifetimes came from too (after a reload that
			// could not be applied, the latest configuration is not the one in effect).
			a := auth()
			return store.Lifetimes{Code: a.CodeLifetime.D(), Access: a.AccessTokenLifetime.D(), Refresh: a.RefreshTokenLifetime.D(),
				Family: a.FamilyLifetime.D(), MaxFamilies: a.MaxGrantsPerUser}
		},
		OnReplay: func(ctx context.Context, kind, family string) { s.oauth.Replayed(ctx, kind, family) },
	})
	if source, err = realm.NewSource(realm.Options{Config: o.Config, Keys: o.Keys, Store: s.store, Log: o.Logger}); err != nil {
		return nil, err
	}
	if err := s.wire(o, source, mfa.NewStore(o.Redis, sealer, o.Now)); err != nil {
		return nil, err
	}
	return s, nil
}

// newSink builds the audit sink of w (read at start-up: a change of it takes a restart), or none.
func newSink(o Options, w *config.AuditWebhook) (*auditsink.Worker, error) {
	if w == nil {
		return nil, nil
	}
	so, err := auditsink.FromConfig(*w)
	if err != nil {
		return nil, err
	}
	so.Redis, so.Now, so.Log, so.Registerer = o.Redis, o.Now, o.Logger, o.Registerer
	return auditsink.New(so)
}

func withDefaults(o Options) Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Mail == nil {
		o.Mail = mail.Live(o.Config, nil)
	}
	if o.AuditLog == nil {
		o.AuditLog = o.Logger.With("stream", "audit")
	}
	return o
}

// wire builds the kits, the account operations and the areas, each with only what it uses.
func (s *Service) wire(o Options, source *realm.Source, factors *mfa.Store) error {
	limiter := throttle.New(o.Redis, o.Now)
	passkeys := passkey.NewStore(o.Redis, nil)
	sessions := sso.New(o.Redis).WithIdle(func() time.Duration { return o.Config.Current().Auth.SessionIdleTimeout.D() })
	links, err := accounts.Links(o.Redis, o.Keys, o.Now)
	if err != nil {
		return err
	}
	var dk device.Keys
	if dk.Current, dk.Previous, err = o.Keys.Secrets(device.Purpose); err != nil {
		return err
	}
	if s.web, err = web.New(web.Options{Realm: source, Pages: page.New(), Throttle: limiter, Log: o.Logger, Registerer: o.Registerer, Dev: o.Dev}); err != nil {
		return err
	}
	kit, err := signon.New(signon.Options{Users: s.users, Sessions: sessions, Store: s.store, Throttle: limiter, DeviceKeys: dk,
		Log: o.Logger, Now: o.Now, Registerer: o.Registerer})
	if err != nil {
		return err
	}
	rps, err := s.relyingParties(o, source)
	if err != nil {
		return err
	}
	s.accounts = accounts.New(accounts.Options{Config: o.Config, Redis: o.Redis, Users: s.users, Links: links, Mail: o.Mail, Now: o.Now, Log: o.Logger,
		WakeBackchannel: s.backchannel.Wake, Audit: s.audit.Record})
	var seal federation.SealKeys // the connectors' re-check states (D78), keyed from the signing key
	if seal.Current, seal.Others, err = o.Keys.Secrets(federation.RecheckPurpose); err != nil {
		return err
	}
	fed, err := federation.New(federation.Options{Redis: o.Redis, Log: o.Logger, Now: o.Now, Seal: seal})
	if err != nil {
		return err
	}
	if s.oauth, err = oauth.New(oauth.Options{Web: s.web, SignOn: kit, Store: s.store, Users: s.users, Throttle: limiter, Audit: s.audit,
		Keys: o.Keys, Log: o.Logger, Registerer: o.Registerer, Backchannel: rps, Federation: fed}); err != nil {
		return err
	}
	if s.notices, err = notify.New(notify.Options{Config: o.Config, Links: links, Throttle: limiter, Mail: o.Mail, Log: o.Logger, Now: o.Now,
		Registerer: o.Registerer}); err != nil {
		return err
	}
	s.journeys = journeys.New(journeys.Options{Web: s.web, SignOn: kit, Accounts: s.accounts, Links: links, Users: s.users, Throttle: limiter,
		Audit: s.audit, SignupMail: o.SignupMail, Mail: o.Mail, Log: o.Logger})
	s.account = account.New(account.Options{Web: s.web, SignOn: kit, Accounts: s.accounts, MFA: factors, Passkeys: passkeys, Audit: s.audit,
		Pages: page.NewAccount(), Federation: fed, Log: o.Logger, Backchannel: rps})
	s.admin = admin.New(admin.Options{Bearer: bearer.New(bearer.Options{Realm: source, Keys: o.Keys, Users: s.users, Now: o.Now}),
		Realm: source, Users: s.users, Accounts: s.accounts, Sessions: sessions, Grants: s.store, Trail: s.trail, Log: o.Logger,
		Forms: manage.New(manage.Options{Redis: o.Redis, Audit: admin.FormsAudit(s.audit.Record)})}) // the forms' store is this one (D63)
	if s.console, err = console.New(console.Options{Realm: source}); err != nil {
		return err
	}
	s.signin, err = signin.New(signin.Options{Web: s.web, SignOn: kit, Store: s.store, Users: s.users, Throttle: limiter, Passkeys: passkeys,
		MFA: factors, Audit: s.audit, Accounts: s.accounts, Journeys: s.journeys, Federation: fed, Notify: s.notices, Log: o.Logger, Registerer: o.Registerer})
	if err == nil {
		s.saml = s.signin.SAML()
	}
	return err
}

// relyingParties builds the back-channel logout worker (s.backchannel) and the notifier that queues for
// it, both reading the clients of the realm in force.
func (s *Service) relyingParties(o Options, source *realm.Source) (*backchannel.Notifier, error) {
	queue := backchannel.NewQueue(o.Redis)
	targets := func() backchannel.Targets { return backchannel.TargetsOf(source.Current().Config.Auth) }
	var err error
	s.backchannel, err = backchannel.NewWorker(backchannel.WorkerOptions{Queue: queue, Signer: o.Keys.Signer(), Targets: targets, Now: o.Now,
		Issuer: func() string { return source.Current().Issuer }, Timeout: o.BackchannelTimeout, Log: o.Logger, Registerer: o.Registerer})
	if err != nil {
		return nil, err
	}
	return backchannel.NewNotifier(queue, targets, o.Now, s.backchannel.Wake), nil
}

// Run implements server.Runner: it writes the audit trail's queued events to Redis, sends them to the
// audit sink and the logout tokens to relying parties until ctx ends; then the owner's notices in flight
// are sent (each bounded).
func (s *Service) Run(ctx context.Context) error {
	done := make(chan struct{})
	go func() { defer close(done); _ = s.backchannel.Run(ctx) }()
	sunk := make(chan struct{})
	go func() {
		defer close(sunk)
		if s.sink != nil {
			_ = s.sink.Run(ctx)
		}
	}()
	err := s.audit.Run(ctx)
	<-done
	<-sunk
	s.notices.Wait()
	return err
}

// Notices returns the notifier of the owner's mails (tests wait for its mails with Wait).
func (s *Service) Notices() *notify.Notifier { return s.notices }

// Backchannel returns the back-channel logout worker (tests drive it on their clock with RunOnce).
func (s *Service) Backchannel() *backchannel.Worker { return s.backchannel }

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

// Accounts returns the account operations (set a password, sign out everywhere, send verification).
func (s *Service) Accounts() *accounts.Ops { return s.accounts }

// SendVerification mails the account with address email the verification link (accounts.Ops).
func (s *Service) SendVerification(ctx context.Context, email, lang string) (*users.User, error) {
	return s.accounts.SendVerification(ctx, email, lang)
}

// SignOutEverywhere revokes every grant of a user and ends every sign-in session, with only Redis and
// the configuration (accounts.SignOutEverywhere).
func SignOutEverywhere(ctx context.Context, rdb redis.UniversalClient, a config.Auth, userID string) (grants, sessions int, err error) {
	return accounts.SignOutEverywhere(ctx, rdb, a, userID)
}
