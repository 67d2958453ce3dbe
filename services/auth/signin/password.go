package signin

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/acr"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/passwords"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
	"github.com/formsservice/formsservice/services/platform/email"
)

// password checks the e-mail and password against the throttle's budgets, starts the sign-in session
// and answers the authorization request.
func (h *Handler) password(a *attempt) {
	ctx := a.r.Context()
	address := strings.TrimSpace(a.r.PostForm.Get("email"))
	if len(address) > email.MaxLen {
		address = address[:email.MaxLen]
	}
	account := signon.AccountKey(address)
	// The device cookie's generation is compared once the account is read (below, before the hash).
	cookie := h.signOn.DeviceOf(a.r, a.rt, account)
	attempt := throttle.Attempt{Account: account, Device: cookie.ID, IP: a.clientKey}
	browser := "unknown"
	if attempt.Device != "" {
		browser = "known"
	}
	// The attempt is counted before the password is hashed, so that a burst of parallel guesses on any
	// number of replicas gets no more password checks than its budget; the outcome settles it.
	// The request's rate limit per address is counted in the same call (Authorize, D38).
	// The account the address names is looked up in the same round trip (D44).
	rl := a.rt.Config.Auth.RateLimit
	var lookup *users.Lookup
	res, refusal, err := h.throttle.ReserveWith(ctx, attempt, signon.Limits(a.rt), func(p redis.Pipeliner) { lookup = h.users.QueueLookup(ctx, p, address) },
		throttle.Rate{Kind: "authorize-ip", Who: a.clientKey, Limit: rl.PerIP, Window: rl.Window.D()})
	if err != nil {
		h.unavailablePage(a, address, err)
		return
	}
	if refusal != nil && refusal.Rate != "" {
		h.web.RateRefused(a.w, refusal.Rate, refusal.Wait)
		return
	}
	if refusal != nil {
		h.throttled(a, address, browser, refusal)
		return
	}
	// The account's second factor and sign-out generation are read with the account (D44).
	reads := &signon.Reads{}
	u, err := h.users.LookedUp(ctx, lookup, func(p redis.Pipeliner, id string) {
		reads.User = id
		reads.Enrolled = h.mfa.QueueEnrolled(ctx, p, id)
		reads.Generation = h.store.Generations.Queue(ctx, p, id)
	})
	if err == nil && attempt.Device != "" && u != nil {
		// A device cookie from before the account's last sign-out everywhere (a new password, a reset) is
		// no longer a known browser: the attempt counts against the unknown browsers' budgets instead, so
		// that cookies collected with an old password give no budget for guessing the new one (D51).
		gen, gerr := reads.Generation()
		if gerr != nil {
			res.Release(context.WithoutCancel(ctx))
			h.unavailablePage(a, address, gerr)
			return
		}
		if gen != cookie.Generation {
			res.Release(context.WithoutCancel(ctx))
			attempt.Device, browser = "", "unknown"
			var rerr error
			if res, refusal, rerr = h.throttle.Reserve(ctx, attempt, signon.Limits(a.rt)); rerr != nil {
				h.unavailablePage(a, address, rerr)
				return
			}
			if refusal != nil {
				h.throttled(a, address, browser, refusal)
				return
			}
		}
	}
	if err == nil {
		u, err = h.users.CheckLooked(ctx, u, a.r.PostForm.Get("password"))
	}
	switch {
	case errors.Is(err, users.ErrBadCredentials):
		h.wrongPassword(a, address, browser, u, res, err)
		return
	case err != nil:
		res.Release(context.WithoutCancel(ctx))
		h.unavailablePage(a, address, err)
		return
	}
	// The attempt is settled in the round trip that starts the session, or here when none starts.
	reads.Res = res
	defer func() {
		if reads.Res != nil {
			_ = reads.Res.Succeeded(ctx)
		}
	}()
	if h.unverified(a, u) { // the right password, but this client wants a verified address
		return
	}
	if a.rt.Config.Auth.AskToReplaceWeak() {
		h.judgeOldPassword(ctx, u, a.r.PostForm.Get("password"))
	}
	h.counted(signinSuccess)
	h.audit.Record(ctx, audit.Event{Kind: audit.SignIn, Outcome: audit.Success, User: u.ID, Client: a.cl.GetID(),
		Detail: map[string]string{"browser": browser}})
	gen, err := reads.Generation()
	if err != nil {
		h.unavailablePage(a, address, err)
		return
	}
	h.signOn.RememberDevice(a.w, a.r, a.rt, account, gen)
	a.reads, a.newBrowser = reads, browser == "unknown"
	h.startSession(a, u, []string{acr.PWD})
}

// judgeOldPassword marks u, whose password is right, when the password fails the rules for new ones
// (it was set before them): its owner is asked to change it after this sign-in and the next ones, until a
// new one is set (D54). The mark is written once; this sign-in asks even if it could not be written.
func (h *Handler) judgeOldPassword(ctx context.Context, u *users.User, password string) {
	if u.MustChangePassword || passwords.Judge(password, u.Email, u.Name) == passwords.OK {
		return
	}
	if err := h.users.MarkPasswordChange(ctx, u.ID); err != nil {
		h.log.Warn("sign-in: a password that fails the rules was not marked", "user", u.ID, "err", err)
	}
	u.MustChangePassword = true
}

// throttled answers a password refused by the throttle before it was checked.
func (h *Handler) throttled(a *attempt, address, browser string, refusal *throttle.Refusal) {
	h.counted(signinThrottled)
	state := "slowed"
	if refusal.Locked {
		state = "locked"
	}
	h.audit.Record(a.r.Context(), audit.Event{Kind: audit.SignIn, Outcome: audit.Failure, Reason: "throttled", Client: a.cl.GetID(),
		Detail: map[string]string{"budget": refusal.Budget, "state": state, "browser": browser, "retryAfter": strconv.Itoa(int(refusal.Wait / time.Second))}})
	web.RetryAfter(a.w, refusal.Wait)
	lead := "Too many failed sign-ins."
	if !refusal.Locked {
		lead = "Please wait a moment after a failed sign-in."
	}
	h.renderSignIn(a, http.StatusTooManyRequests, page.SignIn{Email: address, Error: web.WaitMessage(lead, refusal.Wait)})
}

// wrongPassword answers a wrong e-mail or password (one message for both), counting the failure.
func (h *Handler) wrongPassword(a *attempt, address, browser string, u *users.User, res *throttle.Reservation, err error) {
	ctx := a.r.Context()
	h.counted(signinBadCredentials)
	h.trail.signinFailure(ctx, a.cl.GetID(), u, err)
	msg, status := "Wrong e-mail address or password.", http.StatusUnauthorized
	wait, usedUp, err := res.Failed(ctx)
	if err != nil { // the failure is counted; only its delay was not recorded
		h.log.Warn("sign-in throttle: a failure's delay was not recorded", "err", err)
	}
	if wait > 0 {
		msg = web.WaitMessage(msg, wait)
		web.RetryAfter(a.w, wait)
	}
	if len(usedUp) > 0 {
		status = http.StatusTooManyRequests
		h.audit.Record(ctx, signon.LockoutEvent(a.cl.GetID(), u, usedUp, wait, browser))
		h.notify.LockedOut(ctx, u, usedUp, wait, a.cl.GetID(), web.RequestLang(a.r), a.r.UserAgent())
	}
	h.renderSignIn(a, status, page.SignIn{Email: address, Error: msg})
}
