package account

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/formsservice/formsservice/services/auth/accounts"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/passwords"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/sso"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
)

// passwordCheck is the outcome of checkPassword: ok, or what to tell the person (msg, status) and what
// the audit trail records (reason wrong_password or throttled; the refusal, or the budgets the failure
// used up and the wait).
type passwordCheck struct {
	ok      bool
	msg     string
	status  int
	reason  string
	refusal *throttle.Refusal
	usedUp  []string
	wait    time.Duration
	// codeStep: the password was right and the second factor's code was refused.
	codeStep bool
}

// checkPassword checks the signed-in user's password as the sign-in page does, against the same
// throttle budgets (package throttle: this browser's own budget when it holds the account's device
// cookie, else the account's unknown browsers' and the client address's), reserved before the hash: an
// account page left open must not become a way to guess the password. Retry-After is set on w when the
// person must wait.
func (h *Handler) checkPassword(ctx context.Context, w http.ResponseWriter, r *http.Request, rt *realm.Realm, u *users.User, sess *sso.Session, password, clientKey string) (passwordCheck, error) {
	account := signon.AccountKey(u.Email)
	retry := func(wait time.Duration) { w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second))) }
	res, refusal, err := h.signOn.Throttle.Reserve(ctx, throttle.Attempt{Account: account, Device: h.browserBudget(r, rt, account, sess.Generation), IP: clientKey}, signon.Limits(rt))
	if err != nil {
		return passwordCheck{}, err
	}
	if refusal != nil {
		retry(refusal.Wait)
		lead := "Too many wrong passwords."
		if !refusal.Locked {
			lead = "Please wait a moment after a wrong password."
		}
		return passwordCheck{msg: web.WaitMessage(lead, refusal.Wait), status: http.StatusTooManyRequests, reason: "throttled", refusal: refusal}, nil
	}
	if _, err := h.signOn.Users.Authenticate(ctx, u.Email, password); err != nil {
		if !errors.Is(err, users.ErrBadCredentials) {
			res.Release(context.WithoutCancel(ctx))
			return passwordCheck{}, err
		}
		c := passwordCheck{msg: "That is not your password.", status: http.StatusUnauthorized, reason: "wrong_password"}
		c.wait, c.usedUp, err = res.Failed(ctx)
		if err != nil { // the failure is counted; only its delay was not recorded
			h.log.Warn("account: a wrong password's delay was not recorded", "err", err)
		}
		if c.wait > 0 {
			c.msg = web.WaitMessage(c.msg, c.wait)
			retry(c.wait)
		}
		if len(c.usedUp) > 0 {
			c.status = http.StatusTooManyRequests
		}
		return c, nil
	}
	_ = res.Succeeded(ctx)
	return passwordCheck{ok: true, status: http.StatusOK}, nil
}

// ChangePassword is POST /account/password: the current password, then the new one under the sign-up
// policy; every other session and every grant of the user ends (as `formsservice users set-password`
// does), this browser gets a new session, and the user gets a mail.
func (h *Handler) ChangePassword(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := h.web.Realm.Current()
	ctx := r.Context()
	u, sess, ok := h.accountForm(w, r, rt)
	if !ok {
		return
	}
	fail := func(status int, field, msg string) {
		h.renderAccount(w, r, rt, u, sess, status, page.Account{PasswordError: "Your password was not changed.", Fields: map[string]string{field: msg}})
	}
	next := r.PostForm.Get("new_password")
	check, err := h.checkPassword(ctx, w, r, rt, u, sess, r.PostForm.Get("current_password"), clientKey)
	switch {
	case err != nil:
		h.web.AccountUnavailable(w, err)
		return
	case !check.ok:
		h.accountRefused(ctx, audit.PasswordChanged, u, check)
		fail(check.status, "current_password", check.msg)
		return
	}
	if weak := passwords.Judge(next, u.Email, u.Name); weak != passwords.OK {
		h.accountRefused(ctx, audit.PasswordChanged, u, passwordCheck{reason: "invalid"})
		fail(http.StatusBadRequest, "new_password", weak.Message())
		return
	}
	grants, sessions, err := h.accounts.SetPassword(ctx, u, next)
	if err != nil {
		h.web.AccountUnavailable(w, err)
		return
	}
	h.accountEvent(ctx, audit.PasswordChanged, u, map[string]string{"grants": strconv.Itoa(grants), "sessions": strconv.Itoa(sessions)})
	// This browser stays signed in, on a new session (the old one ended with the rest).
	if _, _, err := h.signOn.ReplaceSession(w, r, rt, u, sess.AMR, sess.AuthTime, nil); err != nil {
		h.web.AccountUnavailable(w, err)
		return
	}
	done := "password"
	if err := h.accounts.PasswordChanged(ctx, u, web.RequestLang(r), r.UserAgent(), accounts.Removed{}); err != nil {
		h.log.Warn("account: the password-changed mail was not sent", "user", u.ID, "err", err)
		done = "password-nomail"
	}
	http.Redirect(w, r, rt.BasePath+"/account?done="+done, http.StatusSeeOther)
}

// browserBudget is the browser whose budget the account pages' password checks count against: the
// browser's device cookie of the account when it holds one (of generation gen: the session's, which
// currentSession checked is the user's current one), else its sign-in session. A session is
// proof of a sign-in (a passkey, another client), so a fresh one gets a budget of its own: guesses from
// anywhere else, which use up the account's unknown browsers' budget, never lock its owner out of the
// page (D51).
func (h *Handler) browserBudget(r *http.Request, rt *realm.Realm, account string, gen int64) string {
	if id := h.signOn.KnownDevice(r, rt, account, gen); id != "" {
		return id
	}
	if v := web.ReadCookie(r, rt, web.SessionCookie); v != "" {
		sum := sha256.Sum256([]byte("account-session\x00" + v))
		return "session-" + base64.RawURLEncoding.EncodeToString(sum[:16])
	}
	return ""
}
