package account

import (
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
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
)

// recentSignIn is how long after signing in the set-up of a second factor takes no password.
const recentSignIn = 10 * time.Minute

// ChangeMFA is POST /account/mfa: with the password, new recovery codes (action=recovery-codes) or the
// second factor turned off (action=remove).
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
	check, err := h.checkPassword(ctx, w, r, rt, u, r.PostForm.Get("password"), clientKey)
	switch {
	case err != nil:
		h.web.AccountUnavailable(w, err)
		return
	case !check.ok:
		h.accountRefused(ctx, kind, u, check)
		h.renderAccount(w, r, rt, u, sess, check.status, page.Account{MFAError: "Nothing was changed.", Fields: map[string]string{"mfa_password": check.msg}})
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
	if on, err := h.mfa.Enrolled(r.Context(), u.ID); err != nil {
		h.web.AccountUnavailable(w, err)
		return
	} else if on {
		http.Redirect(w, r, rt.BasePath+"/account", http.StatusSeeOther)
		return
	}
	h.renderEnrol(w, r, rt, u, http.StatusOK, page.Enrol{Return: back, ClientName: clientName})
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
	if time.Since(sess.AuthTime) > recentSignIn {
		// A session signed in a while ago (perhaps someone else's hands on it) sets up no second factor
		// without the password: a factor only they hold would lock the person out.
		check, err := h.checkPassword(ctx, w, r, rt, u, r.PostForm.Get("password"), clientKey)
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
