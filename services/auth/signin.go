package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ory/fosite"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/device"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	mail "github.com/formsservice/formsservice/services/platform/email"
)

// deviceCookie marks a browser that signed in to an account before (package device): its sign-ins to
// that account count against a budget of its own (docs/architecture.md D19).
const deviceCookie = "fs_device"

func (s *Service) limits(rt *runtime) throttle.Limits {
	t := rt.cfg.Auth.Throttle
	return throttle.Limits{Device: t.DeviceFailures, Account: t.AccountFailures, IP: t.IPFailures, Window: t.Window.D(),
		DelayAfter: t.DelayAfter, MaxDelay: t.MaxDelay.D()}
}

// knownDevice returns the browser's ID when it holds a device cookie of account.
func (s *Service) knownDevice(r *http.Request, rt *runtime, account string) string {
	v := readCookie(r, rt, deviceCookie)
	if v == "" {
		return ""
	}
	id, _ := device.Check(s.deviceKeys, v, account, s.now(), rt.cfg.Auth.Throttle.DeviceLifetime.D())
	return id
}

// rememberDevice gives the browser a new device cookie for account (its canonical address) after a
// successful sign-in: a new ID, so that its budget starts afresh.
func (s *Service) rememberDevice(w http.ResponseWriter, rt *runtime, account string) {
	setCookie(w, rt, deviceCookie, device.Issue(s.deviceKeys, account, s.now()), rt.cfg.Auth.Throttle.DeviceLifetime.D())
}

// waitMessage tells the person how long to wait, in whole seconds.
func waitMessage(lead string, wait time.Duration) string {
	return fmt.Sprintf("%s Try again in %d s.", lead, int(wait/time.Second))
}

// signin checks the e-mail and password against the throttle's budgets, starts the sign-in session and
// answers the authorization request.
func (s *Service) signin(w http.ResponseWriter, r *http.Request, rt *runtime, cl *client, ar fosite.AuthorizeRequester, ip string) {
	ctx := r.Context()
	email := strings.TrimSpace(r.PostForm.Get("email"))
	if len(email) > mail.MaxLen {
		email = email[:mail.MaxLen]
	}
	password := r.PostForm.Get("password")
	// One budget per account, whichever spelling of it is typed (an IDN domain or its punycode).
	account, ok := mail.Canonical(email)
	if !ok {
		account = strings.ToLower(email)
	}
	lim := s.limits(rt)
	attempt := throttle.Attempt{Account: account, Device: s.knownDevice(r, rt, account), IP: ip}
	browser := "unknown"
	if attempt.Device != "" {
		browser = "known"
	}
	retry := func(wait time.Duration) { w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second))) }

	// The attempt is counted before the password is hashed, so that a burst of parallel guesses on any
	// number of replicas gets no more password checks than its budget; the outcome settles it.
	// The request's rate limit per address is counted in the same call (authorize, D38).
	// The account the address names is looked up in the same round trip (D44).
	rl := rt.cfg.Auth.RateLimit
	var lookup *users.Lookup
	res, refusal, err := s.throttle.ReserveWith(ctx, attempt, lim, func(p redis.Pipeliner) { lookup = s.users.QueueLookup(ctx, p, email) },
		throttle.Rate{Kind: "authorize-ip", Who: ip, Limit: rl.PerIP, Window: rl.Window.D()})
	if err != nil {
		s.unavailablePage(w, r, rt, cl, email, err)
		return
	}
	if refusal != nil && refusal.Rate != "" {
		s.rateRefused(w, refusal.Rate, refusal.Wait)
		return
	}
	if refusal != nil {
		s.metrics.signins.WithLabelValues(signinThrottled).Inc()
		state := "slowed"
		if refusal.Locked {
			state = "locked"
		}
		s.audit.Record(ctx, audit.Event{Kind: audit.SignIn, Outcome: audit.Failure, Reason: "throttled", Client: cl.GetID(),
			Detail: map[string]string{"budget": refusal.Budget, "state": state, "browser": browser, "retryAfter": strconv.Itoa(int(refusal.Wait / time.Second))}})
		retry(refusal.Wait)
		lead := "Too many failed sign-ins."
		if !refusal.Locked {
			lead = "Please wait a moment after a failed sign-in."
		}
		s.renderSignIn(w, r, rt, cl, http.StatusTooManyRequests, page.SignIn{Email: email, Error: waitMessage(lead, refusal.Wait)})
		return
	}
	// The account's second factor and sign-out generation are read with the account (D44).
	reads := &signinReads{}
	u, err := s.users.AuthenticateLooked(ctx, lookup, password, func(p redis.Pipeliner, id string) {
		reads.user = id
		reads.enrolled = s.mfa.QueueEnrolled(ctx, p, id)
		reads.generation = s.store.QueueGeneration(ctx, p, id)
	})
	switch {
	case errors.Is(err, users.ErrBadCredentials):
		s.metrics.signins.WithLabelValues(signinBadCredentials).Inc()
		s.signinFailure(ctx, cl.GetID(), u, err)
		msg, status := "Wrong e-mail address or password.", http.StatusUnauthorized
		wait, usedUp, err := res.Failed(ctx)
		if err != nil { // the failure is counted; only its delay was not recorded
			s.log.Warn("sign-in throttle: a failure's delay was not recorded", "err", err)
		}
		if wait > 0 {
			msg = waitMessage(msg, wait)
			retry(wait)
		}
		if len(usedUp) > 0 {
			status = http.StatusTooManyRequests
			s.lockout(ctx, cl.GetID(), u, usedUp, wait, browser)
		}
		s.renderSignIn(w, r, rt, cl, status, page.SignIn{Email: email, Error: msg})
		return
	case err != nil:
		res.Release(context.WithoutCancel(ctx))
		s.unavailablePage(w, r, rt, cl, email, err)
		return
	}
	// The attempt is settled in the round trip that starts the session, or here when none starts.
	reads.res = res
	defer func() {
		if reads.res != nil {
			_ = reads.res.Succeeded(ctx)
		}
	}()
	if s.unverified(w, r, rt, cl, u) { // the right password, but this client wants a verified address
		return
	}
	s.metrics.signins.WithLabelValues(signinSuccess).Inc()
	s.audit.Record(ctx, audit.Event{Kind: audit.SignIn, Outcome: audit.Success, User: u.ID, Client: cl.GetID(),
		Detail: map[string]string{"browser": browser}})
	s.rememberDevice(w, rt, account)
	s.startSession(w, r.WithContext(withSigninReads(ctx, reads)), rt, cl, ar, u)
}

// signinReads is what a password sign-in reads and settles beside its other round trips (D44): the
// account's second factor and sign-out generation, read with the account before the password is
// checked, and the throttle's reservation (res), settled in the round trip that starts the session (nil
// once settled). A sign-out everywhere while the password is checked makes the generation read stale:
// the session then keeps the older one, and its code is refused, as it would be a moment later.
type signinReads struct {
	user       string
	enrolled   func() (bool, error)
	generation func() (int64, error)
	res        *throttle.Reservation
}

type signinReadsKey struct{}

func withSigninReads(ctx context.Context, reads *signinReads) context.Context {
	return context.WithValue(ctx, signinReadsKey{}, reads)
}

// signinReadsOf is the request's sign-in reads of user, or nil.
func signinReadsOf(ctx context.Context, user string) *signinReads {
	reads, _ := ctx.Value(signinReadsKey{}).(*signinReads)
	if reads == nil || reads.user != user {
		return nil
	}
	return reads
}

// enrolled is mfa's Enrolled, answered from the sign-in's reads when they have it.
func (s *Service) enrolled(ctx context.Context, user string) (bool, error) {
	if reads := signinReadsOf(ctx, user); reads != nil && reads.enrolled != nil {
		return reads.enrolled()
	}
	return s.mfa.Enrolled(ctx, user)
}

// generation is the store's Generation, answered from the sign-in's reads when they have it.
func (s *Service) generation(ctx context.Context, user string) (int64, error) {
	if reads := signinReadsOf(ctx, user); reads != nil && reads.generation != nil {
		return reads.generation()
	}
	return s.store.Generation(ctx, user)
}

// lockout records a failure that used up budgets: further attempts against them wait until wait ends.
func (s *Service) lockout(ctx context.Context, clientID string, u *users.User, budgets []string, wait time.Duration, browser string) {
	e := audit.Event{Kind: audit.Lockout, Outcome: audit.Failure, Reason: strings.Join(budgets, ","), Client: clientID,
		Detail: map[string]string{"browser": browser, "retryAfter": strconv.Itoa(int(wait / time.Second))}}
	if u != nil {
		e.User = u.ID
	}
	s.audit.Record(ctx, e)
}
