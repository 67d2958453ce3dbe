// Package forms is the forms service: POST /contact and POST /waitlist for a product's web site, with
// origin checks and CORS, a 16 KB body limit, validation, per-IP rate limits, a spam honeypot, idempotent
// retries, atomic waitlist uniqueness and durable storage in Redis (package store), and a worker that
// delivers stored contact messages to the operating team by SMTP and webhook (package delivery). This
// package is the HTTP intake: its routes, the checks in their order, validation and the answers.
package forms

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/forms/delivery"
	"github.com/formsservice/formsservice/services/forms/optin"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/clientip"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/mail"
	"github.com/formsservice/formsservice/services/platform/objectstore"
	"github.com/formsservice/formsservice/services/platform/refusal"
)

// Options are the service's dependencies; New takes nothing from globals.
type Options struct {
	Config config.Source
	Redis  redis.UniversalClient
	Logger *slog.Logger
	// Registerer receives the service's metrics (the process's shared registry).
	Registerer prometheus.Registerer
	// ConsumerName names this replica's delivery consumer; default hostname-<random hex>.
	ConsumerName string
	// StoreTimeout bounds one submission's Redis work, so that a slow or dead store answers 502 in under
	// two seconds. Default 1.5s.
	StoreTimeout time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// DurabilityTicks, when set, paces the durability checks instead of a ticker of store.CheckEvery
	// (a test sends on it to make a check happen, and waits for Service.DurabilityChecks to move).
	DurabilityTicks <-chan time.Time
	// EmbeddedStore says the store is the dev server's in-memory one: it keeps nothing across a restart
	// whatever its settings, so its durability is not checked.
	EmbeddedStore bool
	// DevMail, in the dev server only, takes contact messages as mail while forms.delivery names no
	// relay (delivery.Options.DevMail).
	DevMail *delivery.DevMail
	// Mail sends the waitlist's confirmation mails; default the relay of the configuration in force
	// (mail.Live).
	Mail mail.Sender
	// Dev is the all-in-one dev server: refused requests are explained at info level (refusals.go).
	Dev bool
	// S3Env is where the object store of forms.files finds its endpoint and credentials (the AWS_*
	// variables, as the backups read them); default os.Getenv.
	S3Env objectstore.Env
}

// Service implements server.Service and server.Runner (the delivery worker).
type Service struct {
	cfg          config.Source
	rdb          redis.UniversalClient
	store        *store.Store
	delivery     *delivery.Worker
	forms        *delivery.Forms // the declared forms' delivery
	optin        *optin.OptIn
	log          *slog.Logger
	m            *metrics
	now          func() time.Time
	storeTimeout time.Duration
	ticks        <-chan time.Time
	refusals     *refusal.Recorder
	s3env        objectstore.Env

	compiled   atomic.Pointer[liveConfig]
	lastErrLog atomic.Int64 // unix nanoseconds of the last logged store error
	lastBotLog atomic.Int64 // and of the last logged bot-check failure
}

// liveConfig is what the request path needs from the configuration, compiled once per configuration
// (the Source swaps the pointer on reload) rather than once per request.
type liveConfig struct {
	cfg       *config.Config
	origins   *originMatcher
	sites     *siteMatcher
	proxies   *clientip.Proxies
	rateLimit int
	// formOrigins are the declared forms' own origins (patterns as in allowedOrigins), by form id; a
	// form without origins takes every allowed origin.
	formOrigins map[string]*originMatcher
	// formBots are the declared forms' own bot checks, by form id (a form without one takes its
	// posting site's); botErrs the ones whose secret could not be read (New refuses to start on them).
	formBots map[string]*botGate
	botErrs  []error
	spam     spamRules  // the forms' spam rules (spamcheck.go)
	files    *liveFiles // forms.files (upload.go); nil without it
}

// New builds the service.
func New(o Options) (*Service, error) {
	if o.Config == nil || o.Redis == nil {
		return nil, errors.New("forms: Config and Redis are required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	if o.StoreTimeout == 0 {
		o.StoreTimeout = 1500 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	// The worker is built first: it refuses to start on delivery targets it cannot use.
	worker, err := delivery.New(delivery.Options{Config: o.Config, Redis: o.Redis, Logger: o.Logger,
		Registerer: o.Registerer, ConsumerName: o.ConsumerName, Now: o.Now, DevMail: o.DevMail})
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	st, err := store.New(o.Redis, store.Options{Logger: o.Logger, Registerer: o.Registerer, Off: o.EmbeddedStore,
		Level: func() config.Durability { return o.Config.Current().Forms.Durability }, Redis: o.Config.Current().Redis})
	if err != nil {
		return nil, err
	}
	if o.Mail == nil {
		o.Mail = mail.Live(o.Config, nil)
	}
	refusals, err := refusal.New(refusal.Options{Service: "forms", Logger: o.Logger, Registerer: o.Registerer, Dev: o.Dev, Reasons: refusalReasons})
	if err != nil {
		return nil, err
	}
	s := &Service{
		refusals:     refusals,
		cfg:          o.Config,
		rdb:          o.Redis,
		store:        st,
		ticks:        o.DurabilityTicks,
		delivery:     worker,
		log:          o.Logger,
		m:            m,
		now:          o.Now,
		storeTimeout: o.StoreTimeout,
		s3env:        o.S3Env,
	}
	if s.s3env == nil {
		s.s3env = os.Getenv
	}
	s.optin, err = optin.New(optin.Options{Config: o.Config, Redis: o.Redis, Mail: o.Mail, Logger: o.Logger,
		Registerer: o.Registerer, Consumer: consumerName(o.ConsumerName), Now: o.Now, SiteName: s.siteName})
	if err != nil {
		return nil, err
	}
	if s.forms, err = worker.Forms(o.Mail); err != nil {
		return nil, err
	}
	if err := s.forms.Check(o.Config.Current()); err != nil {
		return nil, err
	}
	// A site or declared form whose bot-check secret cannot be read stops the start, as a webhook URL
	// file does; after a reload it fails closed (502) until the file is fixed.
	if err := errors.Join(s.live().botErrs...); err != nil {
		return nil, err
	}
	return s, nil
}

// Name labels metrics and logs.
func (s *Service) Name() string { return "forms" }

// Ready reports the process, not the store (D55): a store that is down or cannot keep the configured
// durability is answered per request with the documented 502 and CORS headers, which a pod taken out
// of its Service could not give (the browser would get the ingress's 503, without CORS, on every pod
// at once). The store's state is StoreState, shown by the health service, the metrics and
// FormsServiceDurabilityUnmet.
func (s *Service) Ready(context.Context) error { return nil }

// StoreState reports whether the store answers and can keep the configured durability: nil when
// submissions are taken, else why not (a *store.Unmet names the reasons).
func (s *Service) StoreState(ctx context.Context) error {
	return s.store.Ready(ctx, s.cfg.Current().Forms.Durability)
}

// Run is the background work: the store's durability checks, the delivery workers (the contact
// messages' and the declared forms'), the double opt-in's mailer and sweep, the declared forms'
// catalogue for the admin API, and the deletion of erased submissions' files. It returns when ctx ends.
func (s *Service) Run(ctx context.Context) error {
	ticks := s.ticks
	if ticks == nil {
		t := time.NewTicker(store.CheckEvery)
		defer t.Stop()
		ticks = t.C
	}
	guarded := make(chan struct{})
	go func() { defer close(guarded); s.store.Guard().Run(ctx, ticks) }()
	done := make(chan error, 2)
	go func() { done <- s.optin.Run(ctx) }()
	go func() { done <- s.forms.Run(ctx) }()
	published := make(chan struct{})
	go func() { defer close(published); s.publishCatalog(ctx) }() // catalog.go
	swept := make(chan struct{})
	go func() { defer close(swept); s.sweepFiles(ctx) }() // upload.go
	err := s.delivery.Run(ctx)
	err = errors.Join(err, <-done, <-done)
	<-guarded
	<-published
	<-swept
	return err
}

// DurabilityChecks counts the store's completed durability checks (tests wait for one).
func (s *Service) DurabilityChecks() int64 { return s.store.Guard().Checks() }

// siteName is the name forms.sites gives origin's site, or "".
func (s *Service) siteName(origin string) string {
	if st := s.live().sites.find(origin); st != nil {
		return st.Name
	}
	return ""
}

// live returns the compiled form of the current configuration.
func (s *Service) live() *liveConfig {
	cfg := s.cfg.Current()
	if lc := s.compiled.Load(); lc != nil && lc.cfg == cfg {
		return lc
	}
	lc := &liveConfig{
		cfg:       cfg,
		origins:   newOriginMatcher(cfg.AllowedOrigins),
		sites:     newSiteMatcher(cfg.Forms.Sites),
		proxies:   clientip.ParseProxies(cfg.TrustedProxies, cfg.ForwardingHeaders...),
		rateLimit: cfg.Forms.RateLimit(),
		files:     compileFiles(cfg.Forms.Files, s.s3env),
	}
	lc.botErrs = slices.Clone(lc.sites.errs)
	for i := range cfg.Forms.Declared {
		f := &cfg.Forms.Declared[i]
		if g := compileBot(f.BotCheck, "forms.declared "+f.ID); g != nil {
			if lc.formBots == nil {
				lc.formBots = map[string]*botGate{}
			}
			lc.formBots[f.ID] = g
			if g.err != nil {
				lc.botErrs = append(lc.botErrs, g.err)
			}
		}
		if len(f.Origins) > 0 {
			if lc.formOrigins == nil {
				lc.formOrigins = map[string]*originMatcher{}
			}
			lc.formOrigins[f.ID] = newOriginMatcher(f.Origins)
		}
	}
	s.compiled.Store(lc)
	return lc
}

// logStoreError logs storage failures at most once a second: during an outage every request fails the
// same way, and the metric counts them all.
func (s *Service) logStoreError(ep endpoint, err error) {
	if errors.As(err, new(*store.Unmet)) {
		return // the store's guard logs each change of its verdict, with what to change
	}
	now := time.Now().UnixNano()
	last := s.lastErrLog.Load()
	if now-last < int64(time.Second) || !s.lastErrLog.CompareAndSwap(last, now) {
		return
	}
	s.log.Warn("storing a submission failed; answering 502", "endpoint", ep.String(), "err", err)
}

// consumerName names this replica in the outbox's consumer group: the configured name, else the host's
// with a random suffix (two processes on one host are two consumers).
func consumerName(name string) string {
	if name != "" {
		return name
	}
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return host + "-" + hex.EncodeToString(b[:])
}
