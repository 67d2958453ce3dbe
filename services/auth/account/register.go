package account

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/passkey"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/sso"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
)

// unavailableScript is what the passkeys page's script is told when the store did not answer.
var unavailableScript = web.ScriptError{Error: "Passkeys are briefly unavailable. Please try again in a moment."}

// PasskeyRegisterBegin is POST /account/passkeys/begin: the options of a registration ceremony for the
// passkeys page's script. Adding a way to sign in is a sensitive change, so the person's current
// password is checked first (ASVS 3.7.1), throttled like a sign-in; the ceremony is bound to the
// sign-in session.
func (h *Handler) PasskeyRegisterBegin(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := h.web.Realm.Current()
	ctx := r.Context()
	if !h.web.BeginCeremony(w, r, rt, clientKey) {
		return
	}
	sess, u, err := h.currentSession(w, r, rt)
	if err != nil {
		web.ScriptJSON(w, http.StatusServiceUnavailable, unavailableScript)
		return
	}
	if u == nil {
		web.ScriptJSON(w, http.StatusUnauthorized, web.ScriptError{Error: "Your sign-in has ended. Sign in again, then add the passkey."})
		return
	}
	if !u.EmailVerified {
		h.passkeyEvent(ctx, audit.PasskeyAdded, audit.Failure, "unverified", u.ID, nil)
		web.ScriptJSON(w, http.StatusForbidden, web.ScriptError{Error: "Confirm your e-mail address first: open the link we sent to it. Then add the passkey."})
		return
	}
	name, err := passkey.CheckName(r.PostForm.Get("name"))
	if err != nil {
		web.ScriptJSON(w, http.StatusBadRequest, web.ScriptError{Error: fmt.Sprintf("Give the passkey a name of 1 to %d characters.", passkey.MaxNameLen), Field: "name"})
		return
	}
	if !h.passkeyReauthenticate(w, r, rt, u, sess, clientKey) {
		return
	}
	o, err := h.passkeys.BeginRegistration(ctx, rt.RP, accountOf(u), name, web.ReadCookie(r, rt, web.SessionCookie))
	switch {
	case errors.Is(err, passkey.ErrTooMany):
		web.ScriptJSON(w, http.StatusConflict, web.ScriptError{Error: fmt.Sprintf("An account can have at most %d passkeys. Remove one to add another.", passkey.MaxPerUser)})
		return
	case err != nil:
		h.log.Warn("passkey registration could not begin", "err", err)
		web.ScriptJSON(w, http.StatusServiceUnavailable, unavailableScript)
		return
	}
	web.ScriptJSON(w, http.StatusOK, o)
}

// passkeyReauthenticate checks the signed-in person's current password, reserved against the sign-in
// budgets exactly as a sign-in is (this browser's device budget when it holds a device cookie of the
// account, else the account's unknown browsers' and the address's), and answers the script when it
// fails. A wrong password, or one not checked for the throttle, is a refused passkey.added.
func (h *Handler) passkeyReauthenticate(w http.ResponseWriter, r *http.Request, rt *realm.Realm, u *users.User, sess *sso.Session, ip string) bool {
	ctx := r.Context()
	retry := func(wait time.Duration) string {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
		return fmt.Sprintf(" Try again in %d s.", int(wait/time.Second))
	}
	account := signon.AccountKey(u.Email)
	attempt := throttle.Attempt{Account: account, Device: h.browserBudget(r, rt, account, sess.Generation), IP: ip}
	res, limited, err := h.signOn.Throttle.Reserve(ctx, attempt, signon.Limits(rt))
	if err != nil {
		web.ScriptJSON(w, http.StatusServiceUnavailable, unavailableScript)
		return false
	}
	if limited != nil {
		h.passkeyEvent(ctx, audit.PasskeyAdded, audit.Failure, "throttled", u.ID, map[string]string{"budget": limited.Budget})
		web.ScriptJSON(w, http.StatusTooManyRequests, web.ScriptError{Error: "Too many wrong passwords." + retry(limited.Wait), Field: "password"})
		return false
	}
	_, err = h.signOn.Users.Authenticate(ctx, u.Email, r.PostForm.Get("password"))
	switch {
	case errors.Is(err, users.ErrBadCredentials):
		h.passkeyEvent(ctx, audit.PasskeyAdded, audit.Failure, "bad_password", u.ID, nil)
		status, msg := http.StatusUnauthorized, "Wrong password."
		wait, usedUp, ferr := res.Failed(ctx)
		if ferr != nil {
			h.log.Warn("sign-in throttle: a failure's delay was not recorded", "err", ferr)
		}
		if wait > 0 {
			msg += retry(wait)
		}
		if len(usedUp) > 0 {
			status = http.StatusTooManyRequests
			browser := "unknown"
			if attempt.Device != "" {
				browser = "known"
			}
			h.audit.Record(ctx, signon.LockoutEvent("", u, usedUp, wait, browser)) // no client: the passkeys page is the provider's own
		}
		web.ScriptJSON(w, status, web.ScriptError{Error: msg, Field: "password"})
		return false
	case err != nil:
		res.Release(context.WithoutCancel(ctx))
		web.ScriptJSON(w, http.StatusServiceUnavailable, unavailableScript)
		return false
	}
	_ = res.Succeeded(ctx)
	return true
}
