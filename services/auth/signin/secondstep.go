package signin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/ory/fosite"

	"github.com/formsservice/formsservice/services/auth/accounts"
	"github.com/formsservice/formsservice/services/auth/acr"
	"github.com/formsservice/formsservice/services/auth/claims"
	"github.com/formsservice/formsservice/services/auth/federation"
	"github.com/formsservice/formsservice/services/auth/mfa"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/sso"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
)

// The second step of a sign-in (docs/auth.md "Two-step sign-in"). After a right password, a user with
// an authenticator app is asked for a code (or a recovery code) before the session starts; a user
// without one signs in with the password alone, unless the client requires a second factor (requireMFA,
// or acr_values asking for two factors): then the session starts with the password and the person sets
// up an app on the account page, which brings them back to the authorization request. A browser
// already signed in with a password alone is asked for the code (step-up) when a client needs it.
//
// Between the password and the code the browser holds a challenge: a random cookie (web.MFACookie)
// naming a short-lived record (mfa.Store.StartChallenge) with the user and the methods so far. Nothing
// of the authorization request is kept: it travels in the form's action URL, as on the sign-in page.

// requestedACR is the level the authorization request asks for (checkAuthorizeParams refused values it
// names none of).
func requestedACR(ar fosite.AuthorizeRequester) string {
	v, _ := acr.Requested(ar.GetRequestForm().Get("acr_values"))
	return v
}

// needsTwoFactors reports whether a sign-in to cl for ar must include a second factor.
func needsTwoFactors(cl *realm.Client, ar fosite.AuthorizeRequester) bool {
	return cl.RequireMFA || acr.NeedsTwoFactor(requestedACR(ar))
}

// sessionSatisfies reports whether a session signed in with amr may answer ar for cl without asking.
func sessionSatisfies(cl *realm.Client, ar fosite.AuthorizeRequester, amr []string) bool {
	return !needsTwoFactors(cl, ar) || acr.Level(amr) == acr.TwoFactor
}

// enrolled is mfa's Enrolled, answered from the sign-in's reads when they have it (D44).
func (h *Handler) enrolled(a *attempt, user string) (bool, error) {
	if a.reads != nil && a.reads.User == user && a.reads.Enrolled != nil {
		return a.reads.Enrolled()
	}
	return h.mfa.Enrolled(a.r.Context(), user)
}

// secondStep runs after a right password (u): it answers and returns true when the sign-in needs more
// than the password (the code page, or the set-up of a second factor); false lets the session start.
func (h *Handler) secondStep(a *attempt, u *users.User, first []string) bool {
	enrolled, err := h.enrolled(a, u.ID)
	if err != nil {
		h.unavailablePage(a, u.Email, err)
		return true
	}
	if enrolled {
		gen, err := h.signOn.Generation(a.r.Context(), u.ID, a.reads)
		if err != nil {
			h.unavailablePage(a, u.Email, err)
			return true
		}
		h.challenge(a, u, first, gen)
		return true
	}
	if needsTwoFactors(a.cl, a.ar) {
		// The password is right, but this client wants a second factor the user does not have: a session
		// with the password, then the set-up, which leads back to this very request.
		if _, _, err := h.signOn.ReplaceSession(a.w, a.r, a.rt, u, first, time.Now().UTC(), a.reads); err != nil {
			h.unavailablePage(a, u.Email, err)
			return true
		}
		h.sessionOpened(a, u)
		h.trail.mfaRequired(a.r.Context(), u, a.cl, "not_enrolled")
		h.toEnrolment(a)
		return true
	}
	return false
}

// stepUp answers a browser signed in with too little for the client: the code page, or the set-up.
func (h *Handler) stepUp(a *attempt, u *users.User, sess *sso.Session) {
	enrolled, err := h.mfa.Enrolled(a.r.Context(), u.ID)
	if err != nil {
		h.authorizeError(a, err)
		return
	}
	if enrolled {
		h.trail.mfaRequired(a.r.Context(), u, a.cl, "step_up")
		h.challenge(a, u, sess.AMR, sess.Generation)
		return
	}
	h.trail.mfaRequired(a.r.Context(), u, a.cl, "not_enrolled")
	h.toEnrolment(a)
}

// toEnrolment sends the signed-in browser to set up an authenticator app, and back to this
// authorization request afterwards.
func (h *Handler) toEnrolment(a *attempt) {
	back := a.rt.BasePath + "/oauth2/authorize?" + a.r.URL.RawQuery
	http.Redirect(a.w, a.r, a.rt.BasePath+"/account/totp?"+url.Values{"return": {back}}.Encode(), http.StatusSeeOther)
}

// challenge starts the second step for u, whose methods so far are first, and shows the code page.
func (h *Handler) challenge(a *attempt, u *users.User, first []string, gen int64) {
	token := web.RandomToken()
	life := a.rt.Config.Auth.MFA.ChallengeLifetime.D()
	if err := h.mfa.StartChallenge(a.r.Context(), token, mfa.Pending{User: u.ID, First: first, Generation: gen, NewBrowser: a.newBrowser, Carry: carryUpstream(a.upstream, a.logout)}, life); err != nil {
		h.unavailablePage(a, u.Email, err)
		return
	}
	web.SetCookie(a.w, a.rt, web.MFACookie, token, life)
	h.renderSecondStep(a, http.StatusOK, page.SecondStep{Email: u.Email})
}

func (h *Handler) renderSecondStep(a *attempt, status int, d page.SecondStep) {
	d.CSRF = web.CSRFToken(a.w, a.r, a.rt)
	d.Action = a.rt.BasePath + "/oauth2/authorize?" + a.r.URL.RawQuery
	d.ClientName = a.cl.Name
	if a.cl.Account {
		d.ClientName = page.T(a.w, a.cl.Name)
	}
	h.web.Pages.RenderSecondStep(page.WithLook(a.w, web.PageLook(a.r, a.rt, a.cl)), status, d, []string{realm.OriginOf(a.r.URL.Query().Get("redirect_uri"))})
}

// challengedUser is the active user of the browser's challenge, or nil (none, ended, the account is
// gone or disabled, or it was signed out everywhere since: a new password, a reset, an administrator's
// sign-out end a challenge begun before them).
func challengedUser(ctx context.Context, factors *mfa.Store, signOn *signon.Kit, token string) (*users.User, mfa.Pending, error) {
	c, err := factors.Challenge(ctx, token)
	if err != nil || c.User == "" {
		return nil, c, err
	}
	u, err := signOn.ActiveUser(ctx, c.User)
	if errors.Is(err, users.ErrNotFound) {
		return nil, c, nil
	}
	if err != nil {
		return nil, c, err
	}
	current, err := signOn.Generation(ctx, c.User, nil)
	if err != nil || current != c.Generation {
		return nil, c, err
	}
	return u, c, nil
}

// submitSecondStep checks the code of the second step (action=mfa): a TOTP code accepted once, or a
// recovery code spent. Each code is reserved against the throttle's code budgets before it is checked,
// as a password is (throttle.ReserveCode).
func (h *Handler) submitSecondStep(a *attempt) {
	ctx := a.r.Context()
	token := web.ReadCookie(a.r, a.rt, web.MFACookie)
	u, pending, err := challengedUser(ctx, h.mfa, h.signOn, token)
	if err != nil {
		h.unavailablePage(a, "", err)
		return
	}
	if u == nil {
		h.counted(signinMFAExpired)
		h.renderSignIn(a, http.StatusUnauthorized, page.SignIn{Error: "Your sign-in took too long. Please sign in again."})
		return
	}
	res, refusal, err := h.throttle.ReserveCode(ctx, u.ID, a.clientKey, signon.CodeLimits(a.rt))
	if err != nil {
		h.unavailablePage(a, u.Email, err)
		return
	}
	if refusal != nil {
		h.counted(signinMFAThrottled)
		h.trail.codeThrottled(ctx, u, a.cl, refusal)
		web.RetryAfter(a.w, refusal.Wait)
		lead := "Too many wrong codes."
		if !refusal.Locked {
			lead = "Please wait a moment after a wrong code."
		}
		h.renderSecondStep(a, http.StatusTooManyRequests, page.SecondStep{Email: u.Email, Error: web.WaitMessage(lead, refusal.Wait)})
		return
	}
	result, recovery, err := h.mfa.Check(ctx, u.ID, a.r.PostForm.Get("code"))
	if err != nil && !errors.Is(err, mfa.ErrNotEnrolled) {
		res.Release(context.WithoutCancel(ctx))
		h.unavailablePage(a, u.Email, err)
		return
	}
	if result != mfa.Accepted {
		h.wrongCode(a, u, res, result, recovery)
		return
	}
	_ = res.Succeeded(ctx)
	_ = h.mfa.EndChallenge(ctx, token)
	web.SetCookie(a.w, a.rt, web.MFACookie, "", -1)
	method := acr.OTP
	if recovery { // a code kept for a lost app: told apart from the app's (D69)
		method = acr.RC
	}
	amr := acr.With(pending.First, method)
	a.newBrowser = pending.NewBrowser
	a.upstream, a.logout = upstreamCarried(pending.Carry)
	if left := h.trail.codeAccepted(ctx, u, a.cl, recovery, amr); recovery {
		h.accounts.SecondFactorChanged(ctx, u, accounts.FactorCodeUsed, web.RequestLang(a.r), a.r.UserAgent(), left)
	}
	h.counted(signinMFA)
	h.openSession(a, u, amr)
}

// wrongCode answers a code that was not accepted, counting the failure.
func (h *Handler) wrongCode(a *attempt, u *users.User, res *throttle.Reservation, result mfa.Result, recovery bool) {
	ctx := a.r.Context()
	h.counted(signinMFAWrong)
	reason := "wrong_code"
	msg := "That code is not right. Enter the code your app shows now."
	switch {
	case result == mfa.Replayed:
		reason, msg = "replayed_code", "That code was used already. Wait for the next code in your app."
	case recovery:
		reason, msg = "wrong_recovery_code", "That recovery code is not right, or was used already."
	}
	status := http.StatusUnauthorized
	wait, usedUp, err := res.Failed(ctx)
	if err != nil { // the failure is counted; only its delay was not recorded
		h.log.Warn("second step: a wrong code's delay was not recorded", "err", err)
	}
	h.trail.codeFailed(ctx, u, a.cl, reason, usedUp, wait)
	if wait > 0 {
		msg = web.WaitMessage(msg, wait)
		web.RetryAfter(a.w, wait)
	}
	if len(usedUp) > 0 {
		status = http.StatusTooManyRequests
	}
	h.renderSecondStep(a, status, page.SecondStep{Email: u.Email, Error: msg})
}

// carried is what the second step's challenge carries to the grant and the session: a connector's
// re-check state (D78, its fields at the top level, as before) and a SAML sign-in's sealed
// single-logout record (D89).
type carried struct {
	*claims.Upstream
	Logout *federation.LogoutToKeep `json:"slo,omitempty"`
}

// carryUpstream is what the challenge carries: JSON, which has no '|' here (connector IDs, base64url,
// hex, a number).
func carryUpstream(up *claims.Upstream, logout *federation.LogoutToKeep) string {
	if up == nil && logout == nil {
		return ""
	}
	b, _ := json.Marshal(carried{Upstream: up, Logout: logout})
	return string(b)
}

// upstreamCarried is what carryUpstream carried (nil: nothing, or not a state).
func upstreamCarried(s string) (*claims.Upstream, *federation.LogoutToKeep) {
	var c carried
	if s == "" || json.Unmarshal([]byte(s), &c) != nil {
		return nil, nil
	}
	if c.Upstream != nil && c.Upstream.Connector == "" {
		c.Upstream = nil
	}
	if c.Logout != nil && (c.Logout.Connector == "" || c.Logout.Sealed == "") {
		c.Logout = nil
	}
	return c.Upstream, c.Logout
}
