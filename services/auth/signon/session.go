package signon

import (
	"context"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/sso"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
)

// Reads is what a password sign-in reads and settles beside its other round trips (D44): the account's
// second factor and sign-out generation, read with the account before the password is checked, and the
// throttle's reservation (Res), settled in the round trip that starts the session (nil once settled). A
// sign-out everywhere while the password is checked makes the generation read stale: the session then
// keeps the older one, and its code is refused, as it would be a moment later. The sign-in holds it in
// its attempt and hands it to NewSession; nil is "nothing read ahead".
type Reads struct {
	User       string
	Enrolled   func() (bool, error)
	Generation func() (int64, error)
	Res        *throttle.Reservation
}

// of is reads when they are user's, else nil.
func (reads *Reads) of(user string) *Reads {
	if reads == nil || reads.User != user {
		return nil
	}
	return reads
}

// Generation is the user's sign-out generation (the store's), answered from the sign-in's reads when
// they have it.
func (k *Kit) Generation(ctx context.Context, user string, reads *Reads) (int64, error) {
	return k.generation(ctx, user, reads)
}

// generation is the store's Generation, answered from the sign-in's reads when they have it.
func (k *Kit) generation(ctx context.Context, user string, reads *Reads) (int64, error) {
	if reads := reads.of(user); reads != nil && reads.Generation != nil {
		return reads.Generation()
	}
	return k.Store.Generations.Of(ctx, user)
}

// ReplaceSession starts a new sign-in session for u signed in with amr at authTime and sets its cookie:
// a new value at every sign-in, against session fixation. The browser's earlier session ends; when it
// was the same user's (a second step, a new password) the grants started in it move to the new one, so
// that logging out still revokes them. reads are the sign-in's (nil: none).
func (k *Kit) ReplaceSession(w http.ResponseWriter, r *http.Request, rt *realm.Realm, u *users.User, amr []string, authTime time.Time, reads *Reads) (string, int64, error) {
	token, gen, _, err := k.NewSession(w, r, rt, u, amr, authTime, nil, reads)
	return token, gen, err
}

// NewSession is ReplaceSession that also counts the rate limit rate (when not nil) and settles a
// password sign-in's throttle reservation (reads) in the round trip that writes the session (D44). wait
// is the rate limit's answer (0: let through; a rate limit the store could not count lets the request
// through, as web.Kit.RateAllowed does).
func (k *Kit) NewSession(w http.ResponseWriter, r *http.Request, rt *realm.Realm, u *users.User, amr []string, authTime time.Time, rate *throttle.Rate, reads *Reads) (token string, gen int64, wait time.Duration, err error) {
	ctx := r.Context()
	// The session keeps the user's sign-out generation of now: a sign-out everywhere after this point
	// refuses its codes, even one that missed the session in the user's list.
	gen, err = k.generation(ctx, u.ID, reads)
	if err != nil {
		return "", 0, 0, err
	}
	carry, carryFrom := k.endEarlier(ctx, r, rt, u.ID)
	lifetime := rt.Config.Auth.SessionLifetime.D()
	var started *sso.Started
	var settled func() error
	var limited *throttle.Queued
	reads = reads.of(u.ID)
	_ = k.Throttle.Pipelined(ctx, func(p redis.Pipeliner) error { // each answer carries its own error
		started = k.Sessions.QueueStart(ctx, p, sso.Start{UserID: u.ID, AuthTime: authTime, AMR: amr, UserAgent: r.UserAgent(), Generation: gen}, lifetime)
		if reads != nil && reads.Res != nil {
			settled = reads.Res.QueueSucceeded(ctx, p)
			reads.Res = nil
		}
		if rate != nil {
			limited = k.Throttle.Queue(ctx, p, *rate)
		}
		if u.NeverSignedIn { // the account's first session: its next new browser is mailed (D66)
			k.Users.QueueSignedIn(ctx, p, u.ID)
		}
		return nil
	})
	if settled != nil {
		if err := settled(); err != nil {
			k.log.Warn("sign-in throttle: a success was not recorded", "err", err)
		}
	}
	token, err = started.Token(ctx)
	if err != nil {
		return "", 0, 0, err
	}
	if err := k.Sessions.Adopt(ctx, token, carry); err != nil {
		k.log.Warn("sign-in: the earlier session's grants were not carried over", "err", err)
	}
	if err := k.Store.MoveSession(ctx, u.ID, carryFrom, sso.ID(token)); err != nil {
		k.log.Warn("sign-in: the earlier session's grants were not carried over", "err", err)
	}
	web.SetCookie(w, rt, web.SessionCookie, token, lifetime)
	if limited != nil {
		wait, err := limited.Wait()
		if err != nil {
			k.log.Warn("rate limit: store unavailable; not applied", "err", err)
		}
		return token, gen, wait, nil
	}
	return token, gen, 0, nil
}

// endEarlier ends the browser's earlier session; when it was user's, it returns the grants that session
// listed and its ID, for the new session to carry.
func (k *Kit) endEarlier(ctx context.Context, r *http.Request, rt *realm.Realm, user string) (carry []string, carryFrom string) {
	old := web.ReadCookie(r, rt, web.SessionCookie)
	if old == "" {
		return nil, ""
	}
	if prev, err := k.Sessions.Get(ctx, old); err == nil && prev != nil && prev.UserID == user {
		carry, _ = k.Sessions.Families(ctx, old)
		carryFrom = prev.ID
	}
	_ = k.Sessions.Delete(ctx, old)
	return carry, carryFrom
}

// SessionGrants marks the sign-in session token ended and lists every grant started in it: those the
// user's index holds with the session, whatever their number, and those the session lists itself (at
// most sso.MaxFamiliesPerSession; grants of an earlier version are only there). The mark is set in the
// step that reads the index, so an authorize of this session racing the logout either wrote its code
// before (it is listed) or is refused (store.ErrSessionEnded).
func (k *Kit) SessionGrants(ctx context.Context, rt *realm.Realm, token string) ([]string, error) {
	listed, err := k.Sessions.Families(ctx, token)
	if err != nil {
		return nil, err
	}
	sess, err := k.Sessions.Get(ctx, token)
	if err != nil || sess == nil {
		return listed, err
	}
	indexed, err := k.Store.EndSession(ctx, sess.UserID, sess.ID, rt.Config.Auth.SessionLifetime.D())
	if err != nil {
		return nil, err
	}
	return Union(indexed, listed), nil
}

// Union is a and the elements of b that a does not hold.
func Union(a, b []string) []string {
	seen := make(map[string]bool, len(a))
	for _, x := range a {
		seen[x] = true
	}
	for _, x := range b {
		if !seen[x] {
			seen[x] = true
			a = append(a, x)
		}
	}
	return a
}
