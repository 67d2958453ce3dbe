// Package notify tells an account's owner by mail of what may not have been them (D66): a sign-in from
// a browser never seen for the account, with a link "this wasn't me" (package journeys: sign out
// everywhere, then a new password), and a lockout of its sign-in budgets, with a link that lets the
// owner's browser through. Each mail is in the language of the sign-in's page, rated per account and
// kind (beyond the budget it is dropped and counted), and sent after the answer; its link is package
// link's: signed, expiring, single use, stored hashed.
package notify

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/formsservice/formsservice/services/auth/authmail"
	"github.com/formsservice/formsservice/services/auth/link"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// The purposes of the notices' links (package link).
const (
	LinkNotMe   = "notme"   // "this wasn't me", in the new-browser mail: /account/not-me
	LinkUnblock = "unblock" // the lockout mail's: /account/unblock
)

// The notices (the metric's label notice, and the rate limit's kind).
const (
	NewBrowser = "new_browser"
	Lockout    = "lockout"
)

// The metric's results.
const (
	sent    = "sent"
	dropped = "dropped" // past the account's budget of that notice
	failed  = "failed"  // the link or the mail could not be made or sent
)

// Notifier sends the notices.
type Notifier struct {
	cfg     config.Source
	links   *link.Store
	limiter *throttle.Limiter
	mail    authmail.Sender
	log     *slog.Logger
	now     func() time.Time
	count   *prometheus.CounterVec
	pending sync.WaitGroup
}

// Options are the notifier's dependencies.
type Options struct {
	Config     config.Source
	Links      *link.Store
	Throttle   *throttle.Limiter
	Mail       mail.Sender
	Log        *slog.Logger
	Now        func() time.Time
	Registerer prometheus.Registerer
}

// New builds the notifier and registers its metric.
func New(o Options) (*Notifier, error) {
	n := &Notifier{cfg: o.Config, links: o.Links, limiter: o.Throttle, mail: authmail.Sender{Mail: o.Mail}, log: o.Log, now: o.Now}
	n.count = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "formsservice_auth_notices_total",
		Help: "Notices mailed to an account's owner (notice: new_browser, lockout) by result: sent, dropped (past the account's budget, auth.notify.mailsPerAccount per auth.notify.window), failed (the link or the mail could not be made or sent).",
	}, []string{"notice", "result"})
	if err := o.Registerer.Register(n.count); err != nil {
		return nil, err
	}
	return n, nil
}

// Wait returns when every notice started so far is sent or given up (each send is bounded to 30 s):
// at shutdown, and in tests. A nil Notifier (none wired) sends nothing.
func (n *Notifier) Wait() {
	if n != nil {
		n.pending.Wait()
	}
}

func (n *Notifier) settings() (config.Auth, config.AuthNotify) {
	a := n.cfg.Current().Auth
	return a, a.Notify
}

// NewBrowserSignedIn mails u that a sign-in from a browser never seen for the account (user agent ua)
// just started a session, in lang (the sign-in page's), with a "this wasn't me" link; clientID is the
// client signed in to (the link's pages link back to it). Off when auth.notify.newBrowser is false.
func (n *Notifier) NewBrowserSignedIn(ctx context.Context, u *users.User, clientID, lang, ua string) {
	if n == nil {
		return
	}
	a, cfg := n.settings()
	if !cfg.NewBrowserOn() {
		return
	}
	d := mailData{Email: u.Email, When: authmail.WhenIn(lang, n.now()), Browser: authmail.BrowserIn(lang, ua),
		Valid: authmail.LifetimeIn(lang, cfg.LinkLifetime.D())}
	n.later(ctx, NewBrowser, u, link.Link{Purpose: LinkNotMe, User: u.ID, Client: clientID}, "/account/not-me", func(href string) (mail.Message, error) {
		d.Link = href
		return newBrowserMail.Render(lang, authmail.Brand(a, authmail.ProductName(a)), d)
	})
}

// LockedOut mails u that failed sign-ins used up the budgets named (throttle.BudgetAccount: every
// browser not seen before; throttle.BudgetDevice: one known browser) until wait ends, the last from
// user agent ua, in lang, with a link that lets the browser it is opened in sign in (a device cookie of
// its own, package journeys). A lockout of the client address's budget alone is no account's, and is not
// mailed; nor is anything when auth.notify.lockout is false.
func (n *Notifier) LockedOut(ctx context.Context, u *users.User, budgets []string, wait time.Duration, clientID, lang, ua string) {
	if n == nil {
		return
	}
	a, cfg := n.settings()
	if !cfg.LockoutOn() || u == nil || u.Disabled {
		return
	}
	which := ""
	for _, b := range budgets {
		switch {
		case b == throttle.BudgetAccount:
			which = "new"
		case b == throttle.BudgetDevice && which == "":
			which = "this"
		}
	}
	if which == "" {
		return
	}
	now := n.now()
	d := mailData{Email: u.Email, When: authmail.WhenIn(lang, now), Until: authmail.WhenIn(lang, now.Add(wait)), Browser: authmail.BrowserIn(lang, ua),
		Valid: authmail.LifetimeIn(lang, cfg.LinkLifetime.D()), Which: pausedFor(lang, which)}
	n.later(ctx, Lockout, u, link.Link{Purpose: LinkUnblock, User: u.ID, Client: clientID}, "/account/unblock", func(href string) (mail.Message, error) {
		d.Link = href
		return lockoutMail.Render(lang, authmail.Brand(a, authmail.ProductName(a)), d)
	})
}

// later sends the notice kind to u after the answer: counted against the account's budget of that
// notice (dropped past it), then its link issued, rendered and mailed. A failure is logged and counted;
// it never reaches the sign-in, which has answered.
func (n *Notifier) later(ctx context.Context, kind string, u *users.User, l link.Link, path string, render func(href string) (mail.Message, error)) {
	a, cfg := n.settings()
	ctx = context.WithoutCancel(ctx)
	n.pending.Add(1)
	go func() {
		defer n.pending.Done()
		wait, err := n.limiter.Allow(ctx, "notice-"+kind, u.ID, cfg.MailsPerAccount, cfg.Window.D())
		if err == nil && wait > 0 {
			n.count.WithLabelValues(kind, dropped).Inc()
			return
		}
		var tok string
		if err == nil {
			tok, err = n.links.Issue(ctx, l, cfg.LinkLifetime.D())
		}
		var m mail.Message
		if err == nil {
			m, err = render(authmail.LinkURL(strings.TrimSuffix(a.Issuer, "/"), path, tok))
		}
		if err == nil {
			m.To = []string{u.Email}
			err = n.mail.Send(ctx, m)
		}
		if err != nil {
			n.count.WithLabelValues(kind, failed).Inc()
			n.log.Warn("notice: the mail was not sent", "notice", kind, "user", u.ID, "err", err)
			return
		}
		n.count.WithLabelValues(kind, sent).Inc()
	}()
}
