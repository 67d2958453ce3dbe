package signin

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/passkey"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
)

// Signing in with a passkey on the hosted page (package passkey does the WebAuthn ceremonies and the
// storage; docs/auth.md, "Passkeys", describes the journey).

// passkeyOffer is the sign-in page's passkey part (nil when passkeys are off).
func passkeyOffer(rt *realm.Realm, d *page.PasskeySignIn) *page.PasskeySignIn {
	if rt.RP == nil {
		return nil
	}
	if d == nil {
		d = &page.PasskeySignIn{}
	}
	d.BeginURL = rt.BasePath + "/oauth2/passkey/begin"
	return d
}

// PasskeyBegin is POST /oauth2/passkey/begin: the options of a sign-in ceremony for the sign-in page's
// script, bound to the browser's CSRF cookie (which the request must also carry in its form).
func (h *Handler) PasskeyBegin(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := h.web.Realm.Current()
	if !h.web.BeginCeremony(w, r, rt, clientKey) {
		return
	}
	o, err := h.passkeys.BeginSignIn(r.Context(), rt.RP, web.ReadCookie(r, rt, web.CSRFCookie))
	if err != nil {
		h.log.Warn("passkey sign-in could not begin", "err", err)
		web.ScriptJSON(w, http.StatusServiceUnavailable, web.ScriptError{Error: "Passkeys are briefly unavailable. Please try again in a moment."})
		return
	}
	web.ScriptJSON(w, http.StatusOK, o)
}

// passkeySignIn finishes a sign-in with a passkey: the page's form (action=passkey) carries the ceremony
// and the browser's answer. The attempt is reserved against the client address's sign-in budget before
// the answer is checked, as a password is (package throttle; a refusal keeps it, a success gives it
// back); a passkey names its account only once its signature verified, so it counts against no
// account's budget (nobody can lock an account by sending its user handle). A success starts the
// sign-in session exactly as a password does, with the passkey's authentication methods. Every outcome
// is an audit event (audit.SignInPasskey) with the refusal's reason.
func (h *Handler) passkeySignIn(a *attempt) {
	ctx := a.r.Context()
	if a.rt.RP == nil {
		h.passkeyRefused(a, http.StatusBadRequest, "Passkeys are not enabled here.")
		return
	}
	res, limited, err := h.throttle.Reserve(ctx, throttle.Attempt{IP: a.clientKey}, signon.Limits(a.rt))
	if err != nil {
		h.unavailablePage(a, "", err)
		return
	}
	if limited != nil {
		h.counted(signinThrottled)
		h.audit.Record(ctx, audit.Event{Kind: audit.SignInPasskey, Outcome: audit.Failure, Reason: "throttled", Client: a.cl.GetID(),
			Detail: map[string]string{"budget": limited.Budget, "retryAfter": strconv.Itoa(int(limited.Wait / time.Second))}})
		web.RetryAfter(a.w, limited.Wait)
		h.passkeyRefused(a, http.StatusTooManyRequests, web.WaitMessage("Too many failed sign-ins.", limited.Wait))
		return
	}
	var user *users.User
	lookup := func(ctx context.Context, id string) (*passkey.Account, error) {
		u, err := h.users.ByID(ctx, id)
		if errors.Is(err, users.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		user = u
		return &passkey.Account{ID: u.ID, Email: u.Email, Name: u.Name, Disabled: u.Disabled}, nil
	}
	f := a.r.PostForm
	in, err := h.passkeys.FinishSignIn(ctx, a.rt.RP, f.Get("ceremony"), web.ReadCookie(a.r, a.rt, web.CSRFCookie), []byte(f.Get("credential")), lookup)
	var refusal *passkey.Refusal
	switch {
	case errors.As(err, &refusal):
		h.passkeyFailed(a, refusal, res)
		return
	case err != nil:
		res.Release(context.WithoutCancel(ctx))
		h.unavailablePage(a, "", err)
		return
	}
	_ = res.Succeeded(ctx)
	h.counted(signinPasskey)
	h.audit.Record(ctx, audit.Event{Kind: audit.SignInPasskey, Outcome: audit.Success, User: user.ID, Client: a.cl.GetID(),
		Detail: map[string]string{"passkey": in.Passkey.ID, "synced": strconv.FormatBool(in.Passkey.Synced)}})
	// A passkey proves the browser's owner as a password does: it earns the browser its device cookie,
	// so that the account page's password checks and later password sign-ins here count against this
	// browser's own budget, not the one an attacker can use up.
	// The session that opens below keeps the generation read here (one read, D44's reads).
	if gen, err := h.signOn.Generation(ctx, user.ID, nil); err == nil {
		account := signon.AccountKey(user.Email)
		a.newBrowser = h.signOn.KnownDevice(a.r, a.rt, account, gen) == ""
		h.signOn.RememberDevice(a.w, a.r, a.rt, account, gen)
		a.reads = &signon.Reads{User: user.ID, Generation: func() (int64, error) { return gen, nil }}
	}
	h.openSession(a, user, in.Passkey.AMR()) // a user-verified passkey is two factors: no TOTP step
}

// passkeyFailed answers a passkey the ceremony refused, counting the failure against the address.
func (h *Handler) passkeyFailed(a *attempt, refusal *passkey.Refusal, res *throttle.Reservation) {
	ctx := a.r.Context()
	h.counted(signinPasskeyRefused)
	e := audit.Event{Kind: audit.SignInPasskey, Outcome: audit.Failure, Reason: refusal.Reason, User: refusal.UserID, Client: a.cl.GetID()}
	if refusal.Passkey != nil {
		e.Detail = map[string]string{"passkey": refusal.Passkey.ID}
	}
	if refusal.Reason == passkey.ReasonCloned {
		// The counter did not go up: a copy of the authenticator is in use somewhere.
		h.log.Warn("passkey sign-in refused: the signature counter did not go up (a cloned authenticator)", "user", refusal.UserID, "passkey", e.Detail["passkey"])
	}
	h.audit.Record(ctx, e)
	status, msg := http.StatusUnauthorized, "This passkey cannot be used to sign in here."
	if refusal.Reason == passkey.ReasonExpired {
		msg = "The passkey sign-in took too long or was already used. Please try again."
	}
	wait, usedUp, ferr := res.Failed(ctx)
	if ferr != nil { // the failure is counted; only its delay was not recorded
		h.log.Warn("sign-in throttle: a failure's delay was not recorded", "err", ferr)
	}
	if wait > 0 {
		msg = web.WaitMessage(msg, wait)
		web.RetryAfter(a.w, wait)
	}
	if len(usedUp) > 0 {
		status = http.StatusTooManyRequests
		h.audit.Record(ctx, signon.LockoutEvent(a.cl.GetID(), nil, usedUp, wait, "passkey"))
	}
	h.passkeyRefused(a, status, msg)
}

// passkeyRefused shows the sign-in page with the passkey part's error.
func (h *Handler) passkeyRefused(a *attempt, status int, msg string) {
	h.renderSignIn(a, status, page.SignIn{Passkey: &page.PasskeySignIn{Error: msg}})
}
