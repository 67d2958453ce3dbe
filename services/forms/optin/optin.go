// Package optin is the double opt-in of the waitlist and of the declared forms that ask for it (forms.go) (docs/forms.md, "Confirmed sign-ups"): the mailer that
// sends each pending entry its confirmation mail from the store's outbox, the sweep that erases
// entries left unconfirmed and applies the waitlist's retention, and the pages behind the links (a GET
// that shows a button and a POST that acts, because mail scanners open links; and the RFC 8058
// one-click unsubscribe POST). The intake (package forms) stores the pending entries and mounts the
// pages in its routes.go.
package optin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// Options are the double opt-in's dependencies.
type Options struct {
	Config     config.Source
	Redis      redis.UniversalClient
	Mail       mail.Sender
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// Consumer names this replica in the outbox's consumer group.
	Consumer string
	// SiteName names the site of an origin in the mail ("" for the origin's host).
	SiteName func(origin string) string
	Now      func() time.Time
}

// Timings of the mailer and the sweep.
const (
	// retryAfter is how long a mail that failed (or whose replica died) waits before another attempt.
	retryAfter = time.Minute
	// sweepEvery is how often pending entries past their time are erased and retention applied.
	sweepEvery = time.Minute
	// readBlock bounds one wait for new mails, so that the loop also sweeps and retries.
	readBlock = 5 * time.Second
	// sendTimeout bounds one mail.
	sendTimeout = 30 * time.Second
	batch       = 16
)

// OptIn runs the double opt-in.
type OptIn struct {
	o   Options
	m   *metrics
	log *slog.Logger

	keyMu sync.Mutex
	key   []byte // the store's link key, read once

	groupReady atomic.Bool
	groups     formGroups   // the declared forms' outboxes (forms.go)
	lastSweep  atomic.Int64 // the service clock's unix nanoseconds of the last sweep
	lastErrLog atomic.Int64
}

// New builds the double opt-in; it does nothing until the configuration turns it (or the waitlist's
// retention) on.
func New(o Options) (*OptIn, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SiteName == nil {
		o.SiteName = func(string) string { return "" }
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	return &OptIn{o: o, m: m, log: o.Logger}, nil
}

// NewEntry returns a new pending entry's id and when it expires.
func (p *OptIn) NewEntry(now time.Time, d *config.DoubleOptIn) store.OptIn {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return store.OptIn{ID: hex.EncodeToString(b[:]), Until: now.Add(d.ConfirmWithin.D()), ResendAfter: d.ResendAfter.D()}
}

// signer returns the link signer, reading the store's key the first time.
func (p *OptIn) signer(ctx context.Context) (signer, error) {
	p.keyMu.Lock()
	defer p.keyMu.Unlock()
	if p.key == nil {
		key, err := store.LinkKey(ctx, p.o.Redis)
		if err != nil {
			return signer{}, err
		}
		p.key = key
	}
	return signer{key: p.key}, nil
}

// Run sends confirmation mails and sweeps until ctx ends.
func (p *OptIn) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := p.pass(ctx, readBlock); err != nil && ctx.Err() == nil {
			p.logError("the waitlist's double opt-in", err)
			select { // the store is down: try again shortly, not in a tight loop
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
	return nil
}

// Pass does one round without waiting for new mail: what Run does repeatedly (tests call it).
func (p *OptIn) Pass(ctx context.Context) error { return p.pass(ctx, -1) }

func (p *OptIn) pass(ctx context.Context, block time.Duration) error {
	cfg := p.o.Config.Current()
	f := cfg.Forms
	if now := p.o.Now(); now.UnixNano()-p.lastSweep.Load() >= int64(sweepEvery) {
		if err := p.Sweep(ctx, cfg); err != nil {
			return err
		}
		p.lastSweep.Store(now.UnixNano())
	}
	if err := p.passForms(ctx, cfg); err != nil {
		return err
	}
	if f.DoubleOptIn == nil {
		if block > 0 { // nothing to send: wait as a read would, then look at the configuration again
			select {
			case <-ctx.Done():
			case <-time.After(block):
			}
		}
		return nil
	}
	if !p.groupReady.Load() {
		if err := store.EnsureOutboxGroup(ctx, p.o.Redis); err != nil {
			return err
		}
		p.groupReady.Store(true)
	}
	again, err := store.ClaimOutbox(ctx, p.o.Redis, p.o.Consumer, retryAfter, batch)
	if err != nil {
		return err
	}
	fresh, err := store.ReadOutbox(ctx, p.o.Redis, p.o.Consumer, batch, block)
	if err != nil {
		if isNoGroup(err) { // the stream was removed (FLUSHALL, a new store): make it again next time
			p.groupReady.Store(false)
		}
		return err
	}
	for _, m := range append(again, fresh...) {
		p.send(ctx, p.o.Config.Current(), m) // the configuration in force now: the read may have waited
	}
	return nil
}

func isNoGroup(err error) bool { return err != nil && redis.HasErrorPrefix(err, "NOGROUP") }

// Sweep erases the pending entries past their time and applies the waitlist's retention.
func (p *OptIn) Sweep(ctx context.Context, cfg *config.Config) error {
	now := p.o.Now()
	n, err := store.ExpirePending(ctx, p.o.Redis, now)
	if err != nil {
		return err
	}
	p.m.expired.Add(float64(n))
	if err := p.sweepForms(ctx, now); err != nil {
		return err
	}
	if r := cfg.Forms.WaitlistRetention.D(); r > 0 {
		n, err := store.TrimWaitlist(ctx, p.o.Redis, r, now)
		if err != nil {
			return err
		}
		p.m.trimmed.Add(float64(n))
	}
	return nil
}

// send mails one entry its confirmation; a mail that fails for a while stays in the outbox and is
// tried again after retryAfter, until it is sent, refused for good, or its link would have expired.
func (p *OptIn) send(ctx context.Context, cfg *config.Config, m store.OutboxMail) {
	d := cfg.Forms.DoubleOptIn
	if d == nil {
		return // turned off while the mail waited: it stays queued for when it is on again
	}
	rec, ok, err := store.WaitlistEntry(ctx, p.o.Redis, m.Address)
	if err != nil {
		p.logError("reading a pending entry", err)
		return // stays in the outbox
	}
	now := p.o.Now()
	switch {
	case !ok || rec.State != store.StatePending:
		p.done(ctx, m, "dropped") // confirmed, unsubscribed, expired or erased meanwhile
		return
	case now.Sub(store.StreamTime(m.ID)) > d.ConfirmWithin.D():
		p.done(ctx, m, "dropped") // its link would have expired by now
		return
	}
	sg, err := p.signer(ctx)
	if err != nil {
		p.logError("reading the link key", err)
		return
	}
	until := now.Add(d.ConfirmWithin.D())
	if score, err := p.o.Redis.ZScore(ctx, store.WaitlistPending, m.Address).Result(); err == nil {
		until = time.UnixMilli(int64(score)) // the entry's own time, which the link must not outlast
	}
	base := cfg.FormsURL()
	name := p.o.SiteName(rec.Origin)
	if name == "" {
		name = hostOf(rec.Origin)
	}
	unsub := sg.unsubscribeURL(scope{}, base, rec.ID)
	msg, err := confirmation.Render("en", mail.Brand{Product: name}, confirmationData{
		Confirm: sg.confirmURL(scope{}, base, rec.ID, until), Unsubscribe: unsub, Until: until.UTC().Format("2 January 2006, 15:04 UTC")})
	if err != nil {
		p.logError("rendering a confirmation mail", err)
		p.done(ctx, m, "failed")
		return
	}
	msg.To = []string{rec.Email}
	msg.ID = "waitlist." + m.ID // the same Message-ID on every attempt of this mail
	msg.Unsubscribe = unsub
	msg.Headers = map[string]string{"Auto-Submitted": "auto-generated"}
	sendCtx, cancel := context.WithTimeout(ctx, sendTimeout)
	err = p.o.Mail.Send(sendCtx, msg)
	cancel()
	switch {
	case err == nil:
		p.done(ctx, m, "sent")
	case mail.IsPermanent(err):
		p.log.Warn("a confirmation mail was refused for good; the entry stays pending until it expires", "err", err)
		p.done(ctx, m, "failed")
	default:
		p.m.mails.WithLabelValues("retry").Inc()
		p.logError("sending a confirmation mail (it is tried again)", err)
	}
}

func (p *OptIn) done(ctx context.Context, m store.OutboxMail, result string) {
	if err := store.OutboxDone(ctx, p.o.Redis, m.ID); err != nil {
		p.logError("removing a mail from the outbox", err)
		return
	}
	p.m.mails.WithLabelValues(result).Inc()
}

// logError logs at most once a second: during an outage every mail fails the same way.
func (p *OptIn) logError(what string, err error) {
	now := time.Now().UnixNano()
	last := p.lastErrLog.Load()
	if now-last < int64(time.Second) || !p.lastErrLog.CompareAndSwap(last, now) {
		return
	}
	p.log.Warn(what+" failed", "err", err)
}

func hostOf(origin string) string {
	for _, prefix := range []string{"https://", "http://"} {
		if len(origin) > len(prefix) && origin[:len(prefix)] == prefix {
			return origin[len(prefix):]
		}
	}
	return origin
}

type metrics struct {
	mails   *prometheus.CounterVec
	links   *prometheus.CounterVec
	expired prometheus.Counter
	trimmed prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		mails: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "formsservice_forms_optin_mails_total",
			Help: "Confirmation mails (the waitlist's and the declared forms') by result: sent, retry (a temporary failure; tried again), failed (refused for good), dropped (the entry was no longer pending).",
		}, []string{"result"}),
		links: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "formsservice_forms_optin_links_total",
			Help: "Confirmation and unsubscribe links used, by action (confirm, unsubscribe) and result (done, already, gone, refused, expired, forged).",
		}, []string{"action", "result"}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "formsservice_forms_optin_expired_total",
			Help: "Pending waitlist entries and declared forms' pending submissions erased because nobody confirmed them in time.",
		}),
		trimmed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "formsservice_forms_waitlist_retention_erased_total",
			Help: "Waitlist entries erased by forms.waitlistRetention.",
		}),
	}
	for _, c := range []prometheus.Collector{m.mails, m.links, m.expired, m.trimmed} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
