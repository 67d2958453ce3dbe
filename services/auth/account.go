package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/formsservice/formsservice/services/auth/acr"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/mfa"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/sso"
	"github.com/formsservice/formsservice/services/auth/store"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/email"
)

// The account page (/account, docs/auth.md "The account page"): the signed-in person changes their
// password, sets up or turns off the second factor, and sees and ends their sessions and grants. It is
// signed in through the hosted page's session (account_client.go); every form is a POST with the CSRF
// token, answered with a 303 back to the page (or, for recovery codes, a page that shows them once).

// accountUser returns the signed-in user and session; without one it sends the browser to sign in (and
// back) and returns false.
func (s *Service) accountUser(w http.ResponseWriter, r *http.Request, rt *runtime) (*users.User, *sso.Session, bool) {
	sess, u, err := s.signedIn(r.Context(), r, rt)
	if err != nil {
		s.accountUnavailable(w, err)
		return nil, nil, false
	}
	if u != nil {
		// A session older than a sign-out everywhere (one that escaped its list: D35) opens no account
		// page either: it ends here, and the person signs in again, as at authorize.
		gen, err := s.store.Generation(r.Context(), u.ID)
		if err != nil {
			s.accountUnavailable(w, err)
			return nil, nil, false
		}
		if sess.Generation >= gen {
			return u, sess, true
		}
		_ = s.sessions.Delete(r.Context(), readCookie(r, rt, sessionCookie))
		setCookie(w, rt, sessionCookie, "", -1)
	}
	if r.Method == http.MethodGet && r.URL.Path == "/account" && r.URL.Query().Get("error") != "" {
		// Back from the sign-in page without signing in (Cancel): no loop back to it.
		s.account.RenderNotSignedIn(w, rt.basePath)
		return nil, nil, false
	}
	back := rt.basePath + "/account"
	if r.Method == http.MethodGet {
		back = rt.basePath + r.URL.RequestURI()
	}
	s.accountSignIn(w, r, rt, back)
	return nil, nil, false
}

func (s *Service) accountUnavailable(w http.ResponseWriter, err error) {
	s.log.Warn("account page: store unavailable", "err", err)
	w.Header().Set("Retry-After", "5")
	s.pages.RenderError(w, http.StatusServiceUnavailable, page.Error{Title: "Try again", Message: "Your account is briefly unavailable. Please try again in a moment."})
}

// notices are what the page says after an action (?done=…): a closed set, so a link cannot make the page
// say anything else.
var notices = map[string]string{
	"password":        "Your password was changed. Every other browser and app was signed out, and we sent you a mail about it.",
	"password-nomail": "Your password was changed. Every other browser and app was signed out.",
	"mfa-off":         "Two-step sign-in is off. Sign-in asks for your password only.",
	"session":         "That browser was signed out.",
	"grant":           "That app's access was removed; it has to ask you to sign in again.",
}

// accountPage is GET /account.
func (s *Service) accountPage(w http.ResponseWriter, r *http.Request, _ string) {
	rt := s.rt()
	u, sess, ok := s.accountUser(w, r, rt)
	if !ok {
		return
	}
	s.renderAccount(w, r, rt, u, sess, http.StatusOK, page.Account{Notice: notices[r.URL.Query().Get("done")]})
}

// renderAccount fills in the page's lists and writes it.
func (s *Service) renderAccount(w http.ResponseWriter, r *http.Request, rt *runtime, u *users.User, sess *sso.Session, status int, d page.Account) {
	ctx := r.Context()
	st, err := s.mfa.Status(ctx, u.ID)
	if err != nil {
		s.accountUnavailable(w, err)
		return
	}
	sessions, err := s.sessions.List(ctx, u.ID)
	if err != nil {
		s.accountUnavailable(w, err)
		return
	}
	grants, err := s.store.Grants(ctx, u.ID)
	if err != nil {
		s.accountUnavailable(w, err)
		return
	}
	d.Frame = page.Frame{CSRF: csrfToken(w, r, rt), Base: rt.basePath}
	d.Email, d.Name = u.Email, u.Name
	d.Passkeys = rt.rp != nil
	d.Groups = u.Groups
	d.MFA = page.MFAStatus{On: st.TOTP, Since: day(st.Since), RecoveryLeft: st.RecoveryLeft}
	for _, x := range sessions {
		d.Sessions = append(d.Sessions, page.SessionRow{ID: x.ID, Browser: browserName(x.UserAgent), UserAgent: x.UserAgent,
			SignedIn: when(x.AuthTime), LastUsed: when(x.LastUsed), Methods: methodsLabel(x.AMR), Current: x.ID == sess.ID})
	}
	for _, g := range grants {
		if g.ClientID == accountClientID {
			continue
		}
		name := g.ClientID
		if cl, ok := rt.clients[g.ClientID]; ok {
			name = cl.name
		}
		d.Grants = append(d.Grants, page.GrantRow{ID: g.Family, Client: name, Offline: g.Offline, SignedIn: when(g.AuthTime), LastUsed: when(g.LastUsed)})
	}
	s.account.RenderAccount(w, status, d)
}

// accountForm parses a POST of the account page and checks its CSRF token; it answers (and returns
// false) when the form is not to be acted on.
func (s *Service) accountForm(w http.ResponseWriter, r *http.Request, rt *runtime) (*users.User, *sso.Session, bool) {
	if err := r.ParseForm(); err != nil {
		s.pages.RenderError(w, http.StatusBadRequest, page.Error{Title: "Bad request", Message: "The form could not be read."})
		return nil, nil, false
	}
	u, sess, ok := s.accountUser(w, r, rt)
	if !ok {
		return nil, nil, false
	}
	if !csrfValid(r, rt) {
		s.renderAccount(w, r, rt, u, sess, http.StatusForbidden, page.Account{Error: "This form has expired or was not sent from this page. Please try again."})
		return nil, nil, false
	}
	return u, sess, true
}

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
}

// checkPassword checks the signed-in user's password as the sign-in page does, against the same
// throttle budgets (package throttle: this browser's own budget when it holds the account's device
// cookie, else the account's unknown browsers' and the client address's), reserved before the hash: an
// account page left open must not become a way to guess the password. Retry-After is set on w when the
// person must wait.
func (s *Service) checkPassword(ctx context.Context, w http.ResponseWriter, r *http.Request, rt *runtime, u *users.User, password, clientKey string) (passwordCheck, error) {
	account, ok := email.Canonical(u.Email)
	if !ok {
		account = strings.ToLower(u.Email)
	}
	retry := func(wait time.Duration) { w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second))) }
	res, refusal, err := s.throttle.Reserve(ctx, throttle.Attempt{Account: account, Device: s.knownDevice(r, rt, account), IP: clientKey}, s.limits(rt))
	if err != nil {
		return passwordCheck{}, err
	}
	if refusal != nil {
		retry(refusal.Wait)
		lead := "Too many wrong passwords."
		if !refusal.Locked {
			lead = "Please wait a moment after a wrong password."
		}
		return passwordCheck{msg: waitMessage(lead, refusal.Wait), status: http.StatusTooManyRequests, reason: "throttled", refusal: refusal}, nil
	}
	if _, err := s.users.Authenticate(ctx, u.Email, password); err != nil {
		if !errors.Is(err, users.ErrBadCredentials) {
			res.Release(context.WithoutCancel(ctx))
			return passwordCheck{}, err
		}
		c := passwordCheck{msg: "That is not your password.", status: http.StatusUnauthorized, reason: "wrong_password"}
		c.wait, c.usedUp, err = res.Failed(ctx)
		if err != nil { // the failure is counted; only its delay was not recorded
			s.log.Warn("account: a wrong password's delay was not recorded", "err", err)
		}
		if c.wait > 0 {
			c.msg = waitMessage(c.msg, c.wait)
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

// changePassword is POST /account/password: the current password, then the new one under the sign-up
// policy; every other session and every grant of the user ends (as `formsservice users set-password`
// does), this browser gets a new session, and the user gets a mail.
func (s *Service) changePassword(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := s.rt()
	ctx := r.Context()
	u, sess, ok := s.accountForm(w, r, rt)
	if !ok {
		return
	}
	fail := func(status int, field, msg string) {
		s.renderAccount(w, r, rt, u, sess, status, page.Account{PasswordError: "Your password was not changed.", Fields: map[string]string{field: msg}})
	}
	next := r.PostForm.Get("new_password")
	check, err := s.checkPassword(ctx, w, r, rt, u, r.PostForm.Get("current_password"), clientKey)
	switch {
	case err != nil:
		s.accountUnavailable(w, err)
		return
	case !check.ok:
		s.accountRefused(ctx, audit.PasswordChanged, u, check)
		fail(check.status, "current_password", check.msg)
		return
	}
	if users.CheckPassword(next) != nil {
		s.accountRefused(ctx, audit.PasswordChanged, u, passwordCheck{reason: "invalid"})
		fail(http.StatusBadRequest, "new_password", fmt.Sprintf("Use %d to %d characters.", users.MinPasswordLen, users.MaxPasswordLen))
		return
	}
	if _, err := s.users.SetPassword(ctx, u.Email, next); err != nil {
		s.accountUnavailable(w, err)
		return
	}
	grants, sessions, err := SignOutEverywhere(ctx, s.rdb, rt.cfg.Auth, u.ID)
	if err != nil {
		s.accountUnavailable(w, err)
		return
	}
	s.accountEvent(ctx, audit.PasswordChanged, u, map[string]string{"grants": count(grants), "sessions": count(sessions)})
	// This browser stays signed in, on a new session (the old one ended with the rest).
	if _, _, err := s.replaceSession(w, r, rt, u, sess.AMR, sess.AuthTime); err != nil {
		s.accountUnavailable(w, err)
		return
	}
	done := "password"
	if err := s.sendPasswordChanged(ctx, rt, u, r); err != nil {
		s.log.Warn("account: the password-changed mail was not sent", "user", u.ID, "err", err)
		done = "password-nomail"
	}
	http.Redirect(w, r, rt.basePath+"/account?done="+done, http.StatusSeeOther)
}

// changeMFA is POST /account/mfa: with the password, new recovery codes (action=recovery-codes) or the
// second factor turned off (action=remove).
func (s *Service) changeMFA(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := s.rt()
	ctx := r.Context()
	u, sess, ok := s.accountForm(w, r, rt)
	if !ok {
		return
	}
	action := r.PostForm.Get("action")
	if action != "recovery-codes" && action != "remove" {
		s.renderAccount(w, r, rt, u, sess, http.StatusBadRequest, page.Account{MFAError: "Choose new recovery codes or turn it off."})
		return
	}
	kind := audit.RecoveryReplaced
	if action == "remove" {
		kind = audit.MFARemoved
	}
	check, err := s.checkPassword(ctx, w, r, rt, u, r.PostForm.Get("password"), clientKey)
	switch {
	case err != nil:
		s.accountUnavailable(w, err)
		return
	case !check.ok:
		s.accountRefused(ctx, kind, u, check)
		s.renderAccount(w, r, rt, u, sess, check.status, page.Account{MFAError: "Nothing was changed.", Fields: map[string]string{"mfa_password": check.msg}})
		return
	}
	if action == "remove" {
		if err := s.mfa.Remove(ctx, u.ID); err != nil {
			s.accountUnavailable(w, err)
			return
		}
		s.accountEvent(ctx, audit.MFARemoved, u, nil)
		s.mailSecondFactor(ctx, rt, u, factorOff, r, -1)
		http.Redirect(w, r, rt.basePath+"/account?done=mfa-off", http.StatusSeeOther)
		return
	}
	codes, err := s.mfa.NewRecoveryCodes(ctx, u.ID)
	if errors.Is(err, mfa.ErrNotEnrolled) {
		http.Redirect(w, r, rt.basePath+"/account", http.StatusSeeOther)
		return
	}
	if err != nil {
		s.accountUnavailable(w, err)
		return
	}
	s.accountEvent(ctx, audit.RecoveryReplaced, u, map[string]string{"codes": count(len(codes))})
	s.mailSecondFactor(ctx, rt, u, factorCodes, r, -1)
	s.account.RenderCodes(w, page.Codes{Frame: page.Frame{Base: rt.basePath}, Codes: codes,
		Notice: "Your earlier recovery codes no longer work.", ContinueURL: rt.basePath + "/account", ContinueLabel: "Back to your account"})
}

// enrolReturn is the authorization request to go back to after the set-up (?return=…), when it is one
// of this provider's, and the name of its client.
func enrolReturn(rt *runtime, raw string) (string, string) {
	u, err := url.Parse(raw)
	if raw == "" || err != nil || u.Scheme != "" || u.Host != "" || u.Path != rt.basePath+"/oauth2/authorize" || len(raw) > 8192 {
		return "", ""
	}
	cl, ok := rt.clients[u.Query().Get("client_id")]
	if !ok || cl.account {
		return "", ""
	}
	return u.RequestURI(), cl.name
}

// enrolPage is GET /account/totp: the secret being set up, as a QR code and as text.
func (s *Service) enrolPage(w http.ResponseWriter, r *http.Request, _ string) {
	rt := s.rt()
	u, _, ok := s.accountUser(w, r, rt)
	if !ok {
		return
	}
	back, clientName := enrolReturn(rt, r.URL.Query().Get("return"))
	if on, err := s.mfa.Enrolled(r.Context(), u.ID); err != nil {
		s.accountUnavailable(w, err)
		return
	} else if on {
		http.Redirect(w, r, rt.basePath+"/account", http.StatusSeeOther)
		return
	}
	s.renderEnrol(w, r, rt, u, http.StatusOK, page.Enrol{Return: back, ClientName: clientName})
}

func (s *Service) renderEnrol(w http.ResponseWriter, r *http.Request, rt *runtime, u *users.User, status int, d page.Enrol) {
	key, err := s.mfa.Pending(r.Context(), u.ID, productName(rt), u.Email, rt.cfg.Auth.MFA.EnrolmentLifetime.D())
	if err != nil {
		s.accountUnavailable(w, err)
		return
	}
	qr, err := mfa.QRSVG(key.URI, "QR code to scan with your authenticator app")
	if err != nil {
		s.accountUnavailable(w, err)
		return
	}
	d.Frame = page.Frame{CSRF: csrfToken(w, r, rt), Base: rt.basePath}
	d.NeedPassword = d.NeedPassword || s.needsReauthentication(r, rt)
	d.QR, d.URI = qr, key.URI
	d.Secret, d.SecretSpoken = groupsOfFour(key.Secret), strings.Join(strings.Split(key.Secret, ""), " ")
	s.account.RenderEnrol(w, status, d)
}

// confirmEnrolment is POST /account/totp: the app's code turns the second factor on; the session now
// counts as signed in with it, and the recovery codes are shown once.
func (s *Service) confirmEnrolment(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := s.rt()
	ctx := r.Context()
	u, sess, ok := s.accountForm(w, r, rt)
	if !ok {
		return
	}
	back, clientName := enrolReturn(rt, r.PostForm.Get("return"))
	d := page.Enrol{Return: back, ClientName: clientName}
	if time.Since(sess.AuthTime) > recentSignIn {
		// A session signed in a while ago (perhaps someone else's hands on it) sets up no second factor
		// without the password: a factor only they hold would lock the person out.
		check, err := s.checkPassword(ctx, w, r, rt, u, r.PostForm.Get("password"), clientKey)
		if err != nil {
			s.accountUnavailable(w, err)
			return
		}
		if !check.ok {
			s.accountRefused(ctx, audit.MFAEnrolled, u, check)
			d.NeedPassword, d.PasswordError, d.Error = true, check.msg, "Nothing was set up."
			s.renderEnrol(w, r, rt, u, check.status, d)
			return
		}
	}
	codes, res, err := s.mfa.Confirm(ctx, u.ID, r.PostForm.Get("code"))
	switch {
	case errors.Is(err, mfa.ErrNotEnrolled):
		s.accountRefused(ctx, audit.MFAEnrolled, u, passwordCheck{reason: "expired"})
		d.Error = "The set-up took too long. Scan the new code below and enter the code the app shows."
		s.renderEnrol(w, r, rt, u, http.StatusConflict, d)
		return
	case err != nil:
		s.accountUnavailable(w, err)
		return
	case res != mfa.Accepted:
		s.accountRefused(ctx, audit.MFAEnrolled, u, passwordCheck{reason: "wrong_code"})
		d.Error = "That code is not right. Check that the app shows this account, and enter the code it shows now."
		s.renderEnrol(w, r, rt, u, http.StatusBadRequest, d)
		return
	}
	s.accountEvent(ctx, audit.MFAEnrolled, u, map[string]string{"method": "totp", "codes": count(len(codes))})
	s.mailSecondFactor(ctx, rt, u, factorOn, r, -1)
	// The code proved the app: this browser is now signed in with two factors (a new session value).
	if _, _, err := s.replaceSession(w, r, rt, u, acr.With(sess.AMR, acr.OTP), time.Now().UTC()); err != nil {
		s.accountUnavailable(w, err)
		return
	}
	c := page.Codes{Frame: page.Frame{Base: rt.basePath}, Codes: codes, Notice: "Two-step sign-in is on.",
		ContinueURL: rt.basePath + "/account", ContinueLabel: "Back to your account"}
	if back != "" {
		c.ContinueURL, c.ContinueLabel = back, "Continue to "+clientName
	}
	s.account.RenderCodes(w, c)
}

// endSession is POST /account/sessions/end: a browser of the user signed out, and the grants started in
// it revoked, as at logout. Ending this browser's own session signs it out.
func (s *Service) endSession(w http.ResponseWriter, r *http.Request, _ string) {
	rt := s.rt()
	ctx := r.Context()
	u, sess, ok := s.accountForm(w, r, rt)
	if !ok {
		return
	}
	id := r.PostForm.Get("session")
	// The grants the user's index holds with the session, whatever their number, and those the session
	// lists itself (grants of an earlier version); revoked before the session ends, so that a failure
	// leaves them for the retry. The session is marked ended in the same step (a code it writes from now
	// on is refused).
	families, err := s.store.EndSession(ctx, u.ID, id, rt.cfg.Auth.SessionLifetime.D())
	if err == nil {
		err = s.store.RevokeFamilies(ctx, families)
	}
	var listed []string
	found := false
	if err == nil {
		listed, found, err = s.sessions.EndID(ctx, u.ID, id)
	}
	if err == nil {
		err = s.store.RevokeFamilies(ctx, listed)
	}
	families = union(families, listed)
	if err != nil {
		s.accountUnavailable(w, err)
		return
	}
	if found {
		s.metrics.revocations.WithLabelValues("logout").Add(float64(len(families)))
		s.accountEvent(ctx, audit.SessionEnded, u, map[string]string{"current": strconv.FormatBool(id == sess.ID), "grants": count(len(families))})
	}
	if id == sess.ID {
		setCookie(w, rt, sessionCookie, "", -1)
		s.pages.RenderSignedOut(w)
		return
	}
	http.Redirect(w, r, rt.basePath+"/account?done=session", http.StatusSeeOther)
}

// endGrant is POST /account/grants/end: every token of one grant of the user stops working.
func (s *Service) endGrant(w http.ResponseWriter, r *http.Request, _ string) {
	rt := s.rt()
	ctx := r.Context()
	u, _, ok := s.accountForm(w, r, rt)
	if !ok {
		return
	}
	family := r.PostForm.Get("grant")
	err := s.store.EndGrant(ctx, u.ID, family)
	switch {
	case errors.Is(err, store.ErrNotTheUsers):
		http.Redirect(w, r, rt.basePath+"/account", http.StatusSeeOther)
		return
	case err != nil:
		s.accountUnavailable(w, err)
		return
	}
	s.metrics.revocations.WithLabelValues("account").Inc()
	s.audit.Record(ctx, audit.Event{Kind: audit.GrantEnded, Outcome: audit.Success, User: u.ID, Client: accountClientID, Grant: family})
	http.Redirect(w, r, rt.basePath+"/account?done=grant", http.StatusSeeOther)
}

// recentSignIn is how long after signing in the set-up of a second factor takes no password.
const recentSignIn = 10 * time.Minute

// needsReauthentication reports whether the browser signed in longer than recentSignIn ago.
func (s *Service) needsReauthentication(r *http.Request, rt *runtime) bool {
	sess, _, err := s.signedIn(r.Context(), r, rt)
	return err == nil && sess != nil && time.Since(sess.AuthTime) > recentSignIn
}

// productName names the service in authenticator apps and mails: the issuer's host, until the
// configuration names the product.
func productName(rt *runtime) string {
	if n := rt.cfg.Auth.Branding.ProductName; n != "" {
		return n
	}
	if u, err := url.Parse(rt.issuer); err == nil && u.Host != "" {
		return u.Host
	}
	return "formsservice"
}

func when(t time.Time) string {
	if t.IsZero() {
		return "at an unknown time"
	}
	return t.UTC().Format("2 Jan 2006, 15:04 UTC")
}

func day(t time.Time) string {
	if t.IsZero() {
		return "an unknown day"
	}
	return t.UTC().Format("2 Jan 2006")
}

func groupsOfFour(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && i%4 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// methodsLabel says in words how a session signed in.
func methodsLabel(amr []string) string {
	var parts []string
	for _, m := range amr {
		switch m {
		case acr.PWD:
			parts = append(parts, "password")
		case acr.OTP:
			parts = append(parts, "a code")
		case acr.HWK, acr.SWK:
			parts = append(parts, "a passkey")
		}
	}
	if len(parts) == 0 {
		return "password"
	}
	return strings.Join(parts, " and ")
}

// browserName is a short name for a user agent ("Firefox on Linux"), for people to recognise their
// devices; the full string is shown beside it.
func browserName(ua string) string {
	browser := "A browser"
	for _, b := range []struct{ token, name string }{
		{"Edg/", "Edge"}, {"OPR/", "Opera"}, {"Firefox/", "Firefox"}, {"HeadlessChrome/", "Chrome (headless)"},
		{"Chrome/", "Chrome"}, {"Chromium/", "Chromium"}, {"Safari/", "Safari"}, {"curl/", "curl"},
	} {
		if strings.Contains(ua, b.token) {
			browser = b.name
			break
		}
	}
	for _, o := range []struct{ token, name string }{
		{"Android", "Android"}, {"iPhone", "iOS"}, {"iPad", "iPadOS"}, {"CrOS", "ChromeOS"}, {"Mac OS X", "macOS"},
		{"Windows", "Windows"}, {"Linux", "Linux"},
	} {
		if strings.Contains(ua, o.token) {
			return browser + " on " + o.name
		}
	}
	return browser
}
