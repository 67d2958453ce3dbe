// Package signon is the provider's sign-on kit: being signed in. It reads the browser's sign-in
// session and its user, starts a new session (against fixation, carrying the grants of the one it
// replaces), marks a browser that signed in to an account before (the device cookie, D19), lists the
// grants a session started, and counts the grants ended. The hosted sign-in (package signin), the
// account page (package account) and logout (package oauth) all sign on through it.
package signon

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/device"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/sso"
	"github.com/formsservice/formsservice/services/auth/store"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
	"github.com/formsservice/formsservice/services/platform/email"
)

// Kit is the sign-on kit of one provider.
type Kit struct {
	Users    *users.Store
	Sessions *sso.Store
	Store    *store.Store
	Throttle *throttle.Limiter
	log      *slog.Logger
	now      func() time.Time
	// deviceKeys sign device cookies (package device); derived from the signing key.
	deviceKeys  device.Keys
	revocations *prometheus.CounterVec
}

// Options are the kit's dependencies.
type Options struct {
	Users      *users.Store
	Sessions   *sso.Store
	Store      *store.Store
	Throttle   *throttle.Limiter
	DeviceKeys device.Keys
	Log        *slog.Logger
	Now        func() time.Time
	Registerer prometheus.Registerer
}

// New builds the kit and registers its metric.
func New(o Options) (*Kit, error) {
	k := &Kit{Users: o.Users, Sessions: o.Sessions, Store: o.Store, Throttle: o.Throttle, log: o.Log, now: o.Now, deviceKeys: o.DeviceKeys}
	k.revocations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "formsservice_auth_family_revocations_total",
		Help: "Token families revoked, by reason: code_replay, refresh_reuse, revoke (RFC 7009), user_deleted (deleted or disabled, seen at a refresh), family_expired (absolute lifetime), logout (started in the session that logged out, or in a browser signed out on the account page), account (removed on the account page), upstream_recheck (its connector's re-check at a refresh ended it, D78).",
	}, []string{"reason"})
	if err := o.Registerer.Register(k.revocations); err != nil {
		return nil, err
	}
	return k, nil
}

// Revoked counts n grants (token families) ended for reason.
func (k *Kit) Revoked(reason string, n int) {
	k.revocations.WithLabelValues(reason).Add(float64(n))
}

// SignedIn returns the browser's sign-in session and its user, or nils.
func (k *Kit) SignedIn(ctx context.Context, r *http.Request, rt *realm.Realm) (*sso.Session, *users.User, error) {
	sess, u, _, err := k.SignedInRated(ctx, r, rt, nil)
	return sess, u, err
}

// SignedInRated is SignedIn that also counts the signed-in user's request against a rate limit (rate:
// its kind, limit and window), in the round trip that reads the user (D44). limited answers it (nil when
// there is no signed-in user).
func (k *Kit) SignedInRated(ctx context.Context, r *http.Request, rt *realm.Realm, rate *throttle.Rate) (_ *sso.Session, _ *users.User, limited *throttle.Queued, _ error) {
	token := web.ReadCookie(r, rt, web.SessionCookie)
	if token == "" {
		return nil, nil, nil, nil
	}
	sess, err := k.Sessions.Get(ctx, token)
	if err != nil || sess == nil {
		return nil, nil, nil, err
	}
	var user func() (*users.User, error)
	_ = k.Throttle.Pipelined(ctx, func(p redis.Pipeliner) error { // each answer carries its own error
		user = k.Users.QueueByID(ctx, p, sess.UserID)
		if rate != nil {
			rate.Who = sess.UserID
			limited = k.Throttle.Queue(ctx, p, *rate)
		}
		return nil
	})
	u, err := user()
	if err == nil && u.Disabled {
		err = users.ErrNotFound
	}
	if errors.Is(err, users.ErrNotFound) {
		return nil, nil, nil, nil
	}
	if err != nil {
		return nil, nil, nil, err
	}
	return sess, u, limited, nil
}

// ActiveUser is the user with that ID, or ErrNotFound when it was deleted or is disabled: neither may
// use a session or a token any more.
func (k *Kit) ActiveUser(ctx context.Context, id string) (*users.User, error) {
	u, err := k.Users.ByID(ctx, id)
	if err == nil && u.Disabled {
		return nil, users.ErrNotFound
	}
	return u, err
}

// Limits are the sign-in throttle's budgets of the realm's configuration.
func Limits(rt *realm.Realm) throttle.Limits {
	t := rt.Config.Auth.Throttle
	return throttle.Limits{Device: t.DeviceFailures, Account: t.AccountFailures, IP: t.IPFailures, Window: t.Window.D(),
		DelayAfter: t.DelayAfter, MaxDelay: t.MaxDelay.D()}
}

// CodeLimits are the budgets of second-factor codes (throttle.ReserveCode), at the sign-in's second
// step and wherever the account pages ask for the current factor: auth.mfa.failures per user within
// auth.mfa.window, and the sign-in's per-address budget and delays.
func CodeLimits(rt *realm.Realm) throttle.CodeLimits {
	m, t := rt.Config.Auth.MFA, rt.Config.Auth.Throttle
	return throttle.CodeLimits{PerUser: m.Failures, Window: m.Window.D(), DelayAfter: t.DelayAfter, MaxDelay: t.MaxDelay.D(),
		IP: t.IPFailures, IPWindow: t.Window.D()}
}

// AccountKey is the throttle's name of the account an address names: one budget per account, whichever
// spelling of it is typed (an IDN domain or its punycode).
func AccountKey(address string) string {
	if account, ok := email.Canonical(address); ok {
		return account
	}
	return strings.ToLower(address)
}

// DeviceOf is the browser's device cookie of account (its canonical address), checked for its
// signature, account and lifetime; the zero Token when there is none. Whether it is of the account's
// current sign-out generation is the caller's to compare (KnownDevice does): a password sign-in learns the
// generation only with the account, after the throttle's reservation.
func (k *Kit) DeviceOf(r *http.Request, rt *realm.Realm, account string) device.Token {
	v := web.ReadCookie(r, rt, web.DeviceCookie)
	if v == "" {
		return device.Token{}
	}
	t, _ := device.Check(k.deviceKeys, v, account, k.now(), rt.Config.Auth.Throttle.DeviceLifetime.D())
	return t
}

// KnownDevice returns the browser's ID when it holds a device cookie of account issued at the account's
// sign-out generation gen: a sign-out everywhere (a new password, a reset) ends every earlier cookie.
func (k *Kit) KnownDevice(r *http.Request, rt *realm.Realm, account string, gen int64) string {
	if t := k.DeviceOf(r, rt, account); t.ID != "" && t.Generation == gen {
		return t.ID
	}
	return ""
}

// RememberDevice gives the browser a device cookie for account (its canonical address) at its sign-out
// generation gen after a successful sign-in: the browser's own ID when it holds a cookie of the account
// and generation already (one budget per browser and account, however often it signs in), a new one
// otherwise.
func (k *Kit) RememberDevice(w http.ResponseWriter, r *http.Request, rt *realm.Realm, account string, gen int64) {
	id := k.KnownDevice(r, rt, account, gen)
	if id == "" {
		id = device.NewID()
	}
	web.SetCookie(w, rt, web.DeviceCookie, device.Issue(k.deviceKeys, account, id, gen, k.now()), rt.Config.Auth.Throttle.DeviceLifetime.D())
}

// KeepDevice carries the browser's device cookie of account from sign-out generation from to generation
// to, with its ID (and so its budget): the browser that signs every other browser out stays known. A
// browser without a cookie of generation from gets none.
func (k *Kit) KeepDevice(w http.ResponseWriter, r *http.Request, rt *realm.Realm, account string, from, to int64) {
	if id := k.KnownDevice(r, rt, account, from); id != "" {
		web.SetCookie(w, rt, web.DeviceCookie, device.Issue(k.deviceKeys, account, id, to, k.now()), rt.Config.Auth.Throttle.DeviceLifetime.D())
	}
}

// NewDevice gives the browser a device cookie for account at its sign-out generation gen with a new
// ID, whatever cookie it holds: a budget of its own, afresh. The owner's browser gets it from a lockout
// mail's link (D66), which only the address's owner reads.
func (k *Kit) NewDevice(w http.ResponseWriter, rt *realm.Realm, account string, gen int64) {
	web.SetCookie(w, rt, web.DeviceCookie, device.Issue(k.deviceKeys, account, device.NewID(), gen, k.now()), rt.Config.Auth.Throttle.DeviceLifetime.D())
}

// LockoutEvent is the audit event of a failure that used up budgets: further attempts against them wait
// until wait ends. browser says which budget's browser it was (known, unknown, passkey); u may be nil.
func LockoutEvent(clientID string, u *users.User, budgets []string, wait time.Duration, browser string) audit.Event {
	e := audit.Event{Kind: audit.Lockout, Outcome: audit.Failure, Reason: strings.Join(budgets, ","), Client: clientID,
		Detail: map[string]string{"browser": browser, "retryAfter": strconv.Itoa(int(wait / time.Second))}}
	if u != nil {
		e.User = u.ID
	}
	return e
}

// RefusalDetail is the audit detail of an attempt the throttle refused before it was checked.
func RefusalDetail(r *throttle.Refusal) map[string]string {
	state := "slowed"
	if r.Locked {
		state = "locked"
	}
	return map[string]string{"budget": r.Budget, "state": state, "retryAfter": strconv.Itoa(int(r.Wait / time.Second))}
}
