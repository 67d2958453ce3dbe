// Package accounts is what can be done to an account whatever door it comes through — the hosted pages,
// the account page, the `formsservice users` commands, an admin API: set a password (and so sign out
// everywhere), sign out everywhere, send the verification link, and tell the owner what changed. It needs
// Redis, the configuration and a mail sender; no fosite, no pages, no HTTP.
package accounts

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/authmail"
	"github.com/formsservice/formsservice/services/auth/backchannel"
	"github.com/formsservice/formsservice/services/auth/keys"
	"github.com/formsservice/formsservice/services/auth/link"
	"github.com/formsservice/formsservice/services/auth/sso"
	"github.com/formsservice/formsservice/services/auth/store"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// Ops are the account operations of one provider.
type Ops struct {
	cfg   config.Source
	rdb   redis.UniversalClient
	users *users.Store
	links *link.Store
	mail  authmail.Sender
	now   func() time.Time
	log   *slog.Logger
	wake  func()
	audit func(context.Context, audit.Event)
}

// Options are the operations' dependencies.
type Options struct {
	Config config.Source
	Redis  redis.UniversalClient
	Users  *users.Store
	// Links issues the mailed links (see Links).
	Links *link.Store
	Mail  mail.Sender
	Now   func() time.Time // default time.Now
	Log   *slog.Logger     // default: discard
	// WakeBackchannel, when set, is called after a sign-out everywhere queued logout tokens for relying
	// parties (the back-channel logout worker's Wake: they go at once).
	WakeBackchannel func()
	// Audit records the operators' changes (operator.go): the service's recorder, or the CLI's writer;
	// nil records nothing.
	Audit func(context.Context, audit.Event)
}

// New returns the operations.
func New(o Options) *Ops {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Audit == nil {
		o.Audit = func(context.Context, audit.Event) {}
	}
	return &Ops{cfg: o.Config, rdb: o.Redis, users: o.Users, links: o.Links, mail: authmail.Sender{Mail: o.Mail}, now: o.Now, log: o.Log,
		wake: o.WakeBackchannel, audit: o.Audit}
}

// Links is the store of the mailed links, signed with secrets derived from the signing keys.
func Links(rdb redis.UniversalClient, ks *keys.Set, now func() time.Time) (*link.Store, error) {
	var lk link.Keys
	var err error
	if lk.Current, lk.Others, err = ks.Secrets(link.Purpose); err != nil {
		return nil, err
	}
	return link.New(rdb, lk, now), nil
}

func (o *Ops) auth() config.Auth { return o.cfg.Current().Auth }

func (o *Ops) issuer() string { return strings.TrimSuffix(o.auth().Issuer, "/") }

// SignOutEverywhere revokes every grant (refresh-token family) of a user and ends every sign-in session,
// through the bounded per-user indexes the provider keeps (ASVS 3.3.3): what a password change, a
// disabled account and an administrator's "sign out everywhere" do.
func (o *Ops) SignOutEverywhere(ctx context.Context, userID string) (grants, sessions int, err error) {
	return signOutEverywhere(ctx, o.rdb, o.auth(), userID, o.now, o.wake)
}

// SignOutEverywhere is Ops.SignOutEverywhere with only Redis and the configuration.
func SignOutEverywhere(ctx context.Context, rdb redis.UniversalClient, a config.Auth, userID string) (grants, sessions int, err error) {
	return signOutEverywhere(ctx, rdb, a, userID, nil, nil)
}

func signOutEverywhere(ctx context.Context, rdb redis.UniversalClient, a config.Auth, userID string, now func() time.Time, wake func()) (grants, sessions int, err error) {
	tokens := store.New(store.Options{Redis: rdb, Lifetimes: func() store.Lifetimes {
		return store.Lifetimes{Code: a.CodeLifetime.D(), Access: a.AccessTokenLifetime.D(), Refresh: a.RefreshTokenLifetime.D(), Family: a.FamilyLifetime.D(), MaxFamilies: a.MaxGrantsPerUser}
	}})
	// The relying parties hear of it (back-channel logout, D60): their clients are read before the grants go.
	rps := backchannel.NewNotifier(backchannel.NewQueue(rdb), func() backchannel.Targets { return backchannel.TargetsOf(a) }, now, wake)
	if err := rps.BeforeSignOutEverywhere(ctx, tokens, userID); err != nil {
		return 0, 0, err
	}
	if grants, err = tokens.RevokeSubject(ctx, userID); err != nil {
		return 0, 0, err
	}
	if sessions, err = sso.New(rdb).EndUser(ctx, userID); err != nil {
		return grants, 0, err
	}
	return grants, sessions, nil
}

// Ended is what EndEverySession ended.
type Ended struct{ Accounts, Grants, Sessions int }

// EndEverySession signs every account of the store out everywhere: what a restore does after writing a
// backup (docs/decisions D68), so that no sign-in session, device cookie, pending second step or
// grant the backup brought back outlives it — among them ones that had been revoked or ended since the
// backup was made. Each account moves to a new sign-out generation, as a password change does. Relying
// parties are told (back-channel logout) of the clients a is configured with.
func EndEverySession(ctx context.Context, rdb redis.UniversalClient, a config.Auth) (Ended, error) {
	var e Ended
	err := users.NewStore(rdb, nil).List(ctx, func(u *users.User) error {
		grants, sessions, err := signOutEverywhere(ctx, rdb, a, u.ID, nil, nil)
		if err != nil {
			return err
		}
		e.Accounts++
		e.Grants += grants
		e.Sessions += sessions
		return nil
	})
	return e, err
}

// SetPassword sets u's password (the caller checked it against the policy) and signs the account out
// everywhere: every grant and session made with the old one ends.
func (o *Ops) SetPassword(ctx context.Context, u *users.User, password string) (grants, sessions int, err error) {
	if _, err := o.users.SetPassword(ctx, u.Email, password); err != nil {
		return 0, 0, err
	}
	return o.SignOutEverywhere(ctx, u.ID)
}
