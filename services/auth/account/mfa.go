package account

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/formsservice/formsservice/services/auth/accounts"
	"github.com/formsservice/formsservice/services/auth/acr"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/mfa"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
)

// recentSignIn is how long after signing in the set-up of a second factor takes no password.
const recentSignIn = 10 * time.Minute

// ChangeMFA is POST /account/mfa: with the password and the current factor (a code of the app or a
// recovery code), new recovery codes (action=recovery-codes) or the second factor turned off
// (action=remove). A session and its password alone change nothing here: whoever holds both (a stolen
// password in a browser left open) would otherwise swap the factor for their own and lock its owner out.
func (h *Handler) ChangeMFA(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := h.web.Realm.Current()
	ctx := r.Context()
	u, sess, ok := h.accountForm(w, r, rt)
	if !ok {
		return
	}
	action := r.PostForm.Get("action")
	if action != "recovery-codes" && action != "remove" {
		h.renderAccount(w, r, rt, u, sess, http.StatusBadRequest, page.Account{MFAError: "Choose new recovery codes or turn it off."})
		return
	}
	kind := audit.RecoveryReplaced
	if action == "remove" {
		kind = audit.MFARemoved
	}
	check, err := h.checkPassword(ctx, w, r, rt, u, sess, r.PostForm.Get("password"), clientKey)
	if err == nil && check.ok {
		check, err = h.checkFactor(ctx, w, u, r.PostForm.Get("code"), clientKey)
	}
	switch {
	case err != nil:
		h.web.AccountUnavailable(w, err)
		return
	case !check.ok:
		h.accountRefused(ctx, kind, u, check)
		field := "mfa_password"
		if check.codeStep {
			field = "mfa_code"
		}
		h.renderAccount(w, r, rt, u, sess, check.status, page.Account{MFAError: "Nothing was changed.", Fields: map[string]string{field: check.msg}})
		return
	}
	if action == "remove" {
		if err := h.mfa.Remove(ctx, u.ID); err != nil {
			h.web.AccountUnavailable(w, err)
			return
		}
		h.accountEvent(ctx, audit.MFARemoved, u, nil)
		h.accounts.SecondFactorChanged(ctx, u, accounts.FactorOff, web.RequestLang(r), r.UserAgent(), -1)
		http.Redirect(w, r, rt.BasePath+"/account?done=mfa-off", http.StatusSeeOther)
		return
	}
	codes, err := h.mfa.NewRecoveryCodes(ctx, u.ID)
	if errors.Is(err, mfa.ErrNotEnrolled) {
		http.Redirect(w, r, rt.BasePath+"/account", http.StatusSeeOther)
		return
	}
	if err != nil {
		h.web.AccountUnavailable(w, err)
		return
	}
	h.accountEvent(ctx, audit.RecoveryReplaced, u, map[string]string{"codes": strconv.Itoa(len(codes))})
	h.accounts.SecondFactorChanged(ctx, u, accounts.FactorCodes, web.RequestLang(r), r.UserAgent(), -1)
	h.pages.RenderCodes(w, page.Codes{Frame: page.Frame{Base: rt.BasePath}, Codes: codes,
		Notice: "Your earlier recovery codes no longer work.", ContinueURL: rt.BasePath + "/account", ContinueLabel: "Back to your account"})
}

// checkFactor checks the current second factor, typed on the account page (a code of the app, accepted
// once, or a recovery code, spent), reserved against the second step's budgets (signon.CodeLimits).
func (h *Handler) checkFactor(ctx context.Context, w http.ResponseWriter, u *users.User, code, clientKey string) (passwordCheck, error) {
	rt := h.web.Realm.Current()
	res, refusal, err := h.signOn.Throttle.ReserveCode(ctx, u.ID, clientKey, signon.CodeLimits(rt))
	if err != nil {
		return passwordCheck{}, err
	}
	if refusal != nil {
		web.RetryAfter(w, refusal.Wait)
		return passwordCheck{msg: web.WaitMessage("Too many wrong codes.", refusal.Wait), status: http.StatusTooManyRequests, reason: "throttled",
			refusal: refusal, codeStep: true}, nil
	}
	result, recovery, err := h.mfa.Check(ctx, u.ID, code)
	if err != nil && !errors.Is(err, mfa.ErrNotEnrolled) {
		res.Release(context.WithoutCancel(ctx))
		return passwordCheck{}, err
	}
	if result == mfa.Accepted {
		_ = res.Succeeded(ctx)
		return passwordCheck{ok: true, status: http.StatusOK}, nil
	}
	c := passwordCheck{msg: "That code is not right. Enter the code your app shows now, or a recovery code.", status: http.StatusUnauthorized,
		reason: "wrong_code", codeStep: true}
	switch {
	case result == mfa.Replayed:
		c.reason, c.msg = "replayed_code", "That code was used already. Wait for the next code in your app."
	case recovery:
		c.reason = "wrong_recovery_code"
	}
	if c.wait, c.usedUp, err = res.Failed(ctx); err != nil { // the failure is counted; only its delay was not recorded
		h.log.Warn("account: a wrong code's delay was not recorded", "err", err)
	}
	if c.wait > 0 {
		c.msg = web.WaitMessage(c.msg, c.wait)
		web.RetryAfter(w, c.wait)
	}
	if len(c.usedUp) > 0 {
		c.status = http.StatusTooManyRequests
	}
	return c, nil
}

// enrolReturn is the authorization request to go back to after the set-up (?return=…), when it is one
// of this provider's, and the name of its client.
func enrolReturn(rt *realm.Realm, raw string) (string, string) {
	u, err := url.Parse(raw)
	if raw == "" || err != nil || u.Scheme != "" || u.Host != "" || u.Path != rt.BasePath+"/oauth2/authorize" || len(raw) > 8192 {
		return "", ""
	}
	cl, ok := rt.Clients[u.Query().Get("client_id")]
	if !ok || cl.Account {
		return "", ""
	}
	return u.RequestURI(), cl.Name
}

// EnrolPage is GET /account/totp: the secret being set up, as a QR code and as text.
func (h *Handler) EnrolPage(w http.ResponseWriter, r *http.Request, _ string) {
	rt := h.web.Realm.Current()
	u, _, ok := h.accountUser(w, r, rt)
	if !ok {
		return
	}
	back, clientName := enrolReturn(rt, r.URL.Query().Get("return"))
	if !u.EmailVerified {
		h.renderUnverifiedEnrol(w, r, rt, u, page.Enrol{Return: back, ClientName: clientName})
		return
	}
	if on, err := h.mfa.Enrolled(r.Context(), u.ID); err != nil {
		h.web.AccountUnavailable(w, err)
		return
	} else if on {
		http.Redirect(w, r, rt.BasePath+"/account", http.StatusSeeOther)
		return
	}
	h.renderEnrol(w, r, rt, u, http.StatusOK, page.Enrol{Return: back, ClientName: clientName})
}

// renderUnverifiedEnrol answers the set-up of a second factor for an account whose address is not
// verified: 403, no secret drawn, and the form that sends the link again.
func (h *Handler) renderUnverifiedEnrol(w http.ResponseWriter, r *http.Request, rt *realm.Realm, u *users.User, d page.Enrol) {
	d.Frame = page.Frame{CSRF: web.CSRFToken(w, r, rt), Base: rt.BasePath}
	d.VerifyFirst = verifyFirst(rt, u, d.CSRF)
	h.pages.RenderEnrol(w, http.StatusForbidden, d)
}

func (h *Handler) renderEnrol(w http.ResponseWriter, r *http.Request, rt *realm.Realm, u *users.User, status int, d page.Enrol) {
	key, err := h.mfa.Pending(r.Context(), u.ID, rt.ProductName(), u.Email, rt.Config.Auth.MFA.EnrolmentLifetime.D())
	if err != nil {
		h.web.AccountUnavailable(w, err)
		return
	}
	qr, err := mfa.QRSVG(key.URI, "QR code to scan with your authenticator app")
	if err != nil {
		h.web.AccountUnavailable(w, err)
		return
	}
	d.Frame = page.Frame{CSRF: web.CSRFToken(w, r, rt), Base: rt.BasePath}
	d.NeedPassword = d.NeedPassword || h.needsReauthentication(r, rt)
	d.QR, d.URI = qr, key.URI
	d.Secret, d.SecretSpoken = groupsOfFour(key.Secret), strings.Join(strings.Split(key.Secret, ""), " ")
	h.pages.RenderEnrol(w, status, d)
}

// needsReauthentication reports whether the browser signed in longer than recentSignIn ago.
func (h *Handler) needsReauthentication(r *http.Request, rt *realm.Realm) bool {
	sess, _, err := h.signOn.SignedIn(r.Context(), r, rt)
	return err == nil && sess != nil && time.Since(sess.AuthTime) > recentSignIn
}

// ConfirmEnrolment is POST /account/totp: the app's code turns the second factor on; the session now
// counts as signed in with it, and the recovery codes are shown once.
func (h *Handler) ConfirmEnrolment(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := h.web.Realm.Current()
	ctx := r.Context()
	u, sess, ok := h.accountForm(w, r, rt)
	if !ok {
		return
	}
	back, clientName := enrolReturn(rt, r.PostForm.Get("return"))
	d := page.Enrol{Return: back, ClientName: clientName}
	if !u.EmailVerified {
		h.accountRefused(ctx, audit.MFAEnrolled, u, passwordCheck{reason: "unverified"})
		h.renderUnverifiedEnrol(w, r, rt, u, d)
		return
	}
	if on, err := h.mfa.Enrolled(ctx, u.ID); err != nil {
		h.web.AccountUnavailable(w, err)
		return
	} else if on { // a factor is replaced only by turning it off first (ChangeMFA): no new secret is drawn
		h.accountRefused(ctx, audit.MFAEnrolled, u, passwordCheck{reason: "enrolled"})
		http.Redirect(w, r, rt.BasePath+"/account", http.StatusSeeOther)
		return
	}
	if time.Since(sess.AuthTime) > recentSignIn {
		// A session signed in a while ago (perhaps someone else's hands on it) sets up no second factor
		// without the password: a factor only they hold would lock the person out.
		check, err := h.checkPassword(ctx, w, r, rt, u, sess, r.PostForm.Get("password"), clientKey)
		if err != nil {
			h.web.AccountUnavailable(w, err)
			return
		}
		if !check.ok {
			h.accountRefused(ctx, audit.MFAEnrolled, u, check)
			d.NeedPassword, d.PasswordError, d.Error = true, check.msg, "Nothing was set up."
			h.renderEnrol(w, r, rt, u, check.status, d)
			return
		}
	}
	codes, res, err := h.mfa.Confirm(ctx, u.ID, r.PostForm.Get("code"))
	switch {
	case errors.Is(err, mfa.ErrEnrolled): // set up meanwhile, in another tab
		h.accountRefused(ctx, audit.MFAEnrolled, u, passwordCheck{reason: "enrolled"})
		http.Redirect(w, r, rt.BasePath+"/account", http.StatusSeeOther)
		return
	case errors.Is(err, mfa.ErrNotEnrolled):
		h.accountRefused(ctx, audit.MFAEnrolled, u, passwordCheck{reason: "expired"})
		d.Error = "The set-up took too long. Scan the new code below and enter the code the app shows."
		h.renderEnrol(w, r, rt, u, http.StatusConflict, d)
		return
	case err != nil:
		h.web.AccountUnavailable(w, err)
		return
	case res != mfa.Accepted:
		h.accountRefused(ctx, audit.MFAEnrolled, u, passwordCheck{reason: "wrong_code"})
		d.Error = "That code is not right. Check that the app shows this account, and enter the code it shows now."
		h.renderEnrol(w, r, rt, u, http.StatusBadRequest, d)
		return
	}
	h.accountEvent(ctx, audit.MFAEnrolled, u, map[string]string{"method": "totp", "codes": strconv.Itoa(len(codes))})
	h.accounts.SecondFactorChanged(ctx, u, accounts.FactorOn, web.RequestLang(r), r.UserAgent(), -1)
	// The code proved the app: this browser is now signed in with two factors (a new session value).
	if _, _, err := h.signOn.ReplaceSession(w, r, rt, u, acr.With(sess.AMR, acr.OTP), time.Now().UTC(), nil); err != nil {
		h.web.AccountUnavailable(w, err)
		return
	}
	c := page.Codes{Frame: page.Frame{Base: rt.BasePath}, Codes: codes, Notice: "Two-step sign-in is on.",
		ContinueURL: rt.BasePath + "/account", ContinueLabel: "Back to your account"}
	if back != "" {
		c.ContinueURL, c.ContinueLabel = back, "Continue to "+clientName
	}
	h.pages.RenderCodes(w, c)
}
