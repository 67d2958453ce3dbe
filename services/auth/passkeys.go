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

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/passkey"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/email"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// This file is the provider's side of passkeys (package passkey does the WebAuthn ceremonies and the
// storage): signing in with a passkey on the hosted page, and the page at /account/passkeys where a
// signed-in person lists, adds and removes theirs. docs/auth.md, "Passkeys", describes the journey.

// relyingParty is the passkeys' relying party for the configuration, or nil when passkeys are off or
// cannot work: an issuer on an IP address (the dev server's 127.0.0.1) has no RP ID.
func relyingParty(issuer string, c config.AuthPasskeys) (*passkey.RelyingParty, error) {
	if !c.On() {
		return nil, nil
	}
	rp, err := passkey.NewRelyingParty(issuer, c.RPName, c.Timeout.D())
	if errors.Is(err, passkey.ErrNoRelyingParty) {
		return nil, nil
	}
	return rp, err
}

// passkeyOffer is the sign-in page's passkey part (nil when passkeys are off).
func passkeyOffer(rt *runtime, d *page.PasskeySignIn) *page.PasskeySignIn {
	if rt.rp == nil {
		return nil
	}
	if d == nil {
		d = &page.PasskeySignIn{}
	}
	d.BeginURL = rt.basePath + "/oauth2/passkey/begin"
	return d
}

// passkeyJSON answers the script's request for a ceremony: the options, or an error message (and the
// field it is about) that the script shows. Never cached.
func passkeyJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Cache-Control", "no-store")
	if e, ok := v.(passkeyError); ok {
		e.Error = page.T(w, e.Error) // the script shows it on the page, in the page's language
		v = e
	}
	writeJSON(w, status, v)
}

type passkeyError struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

// passkeyRateAllowed counts a ceremony's beginning against the address's authorize budget (each one
// stores a challenge for the ceremony's timeout) and answers 429 in JSON when it is spent.
func (s *Service) passkeyRateAllowed(w http.ResponseWriter, r *http.Request, rt *runtime, clientKey string) bool {
	wait, err := s.throttle.Allow(r.Context(), "authorize-ip", clientKey, rt.cfg.Auth.RateLimit.PerIP, rt.cfg.Auth.RateLimit.Window.D())
	if err != nil || wait == 0 {
		return true // fails open as rateAllowed does; the ceremony itself needs the store
	}
	s.metrics.rateLimited.WithLabelValues("authorize-ip").Inc()
	w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
	passkeyJSON(w, http.StatusTooManyRequests, passkeyError{Error: fmt.Sprintf("Too many requests. Try again in %d s.", int(wait/time.Second))})
	return false
}

// passkeyBegin is POST /oauth2/passkey/begin: the options of a sign-in ceremony for the sign-in page's
// script, bound to the browser's CSRF cookie (which the request must also carry in its form).
func (s *Service) passkeyBegin(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := s.rt()
	if rt.rp == nil {
		passkeyJSON(w, http.StatusNotFound, passkeyError{Error: "Passkeys are not enabled here."})
		return
	}
	if !s.passkeyRateAllowed(w, r, rt, clientKey) {
		return
	}
	if r.ParseForm() != nil || !csrfValid(r, rt) {
		passkeyJSON(w, http.StatusForbidden, passkeyError{Error: "This page has expired. Reload it and try again."})
		return
	}
	o, err := s.passkeys.BeginSignIn(r.Context(), rt.rp, readCookie(r, rt, csrfCookie))
	if err != nil {
		s.log.Warn("passkey sign-in could not begin", "err", err)
		passkeyJSON(w, http.StatusServiceUnavailable, passkeyError{Error: "Passkeys are briefly unavailable. Please try again in a moment."})
		return
	}
	passkeyJSON(w, http.StatusOK, o)
}

// passkeySignIn finishes a sign-in with a passkey: the page's form (action=passkey) carries the ceremony
// and the browser's answer. The attempt is reserved against the client address's sign-in budget before
// the answer is checked, as a password is (package throttle; a refusal keeps it, a success gives it
// back); a passkey names its account only once its signature verified, so it counts against no
// account's budget (nobody can lock an account by sending its user handle). A success starts the
// sign-in session exactly as a password does, with the passkey's authentication methods. Every outcome
// is an audit event (audit.SignInPasskey) with the refusal's reason.
func (s *Service) passkeySignIn(w http.ResponseWriter, r *http.Request, rt *runtime, cl *client, ar fosite.AuthorizeRequester, ip string) {
	ctx := r.Context()
	refused := func(status int, msg string) {
		s.renderSignIn(w, r, rt, cl, status, page.SignIn{Passkey: &page.PasskeySignIn{Error: msg}})
	}
	if rt.rp == nil {
		refused(http.StatusBadRequest, "Passkeys are not enabled here.")
		return
	}
	retry := func(wait time.Duration) { w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second))) }
	res, limited, err := s.throttle.Reserve(ctx, throttle.Attempt{IP: ip}, s.limits(rt))
	if err != nil {
		s.unavailablePage(w, r, rt, cl, "", err)
		return
	}
	if limited != nil {
		s.metrics.signins.WithLabelValues(signinThrottled).Inc()
		s.audit.Record(ctx, audit.Event{Kind: audit.SignInPasskey, Outcome: audit.Failure, Reason: "throttled", Client: cl.GetID(),
			Detail: map[string]string{"budget": limited.Budget, "retryAfter": strconv.Itoa(int(limited.Wait / time.Second))}})
		retry(limited.Wait)
		refused(http.StatusTooManyRequests, waitMessage("Too many failed sign-ins.", limited.Wait))
		return
	}
	var user *users.User
	lookup := func(ctx context.Context, id string) (*passkey.Account, error) {
		u, err := s.users.ByID(ctx, id)
		if errors.Is(err, users.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		user = u
		return &passkey.Account{ID: u.ID, Email: u.Email, Name: u.Name, Disabled: u.Disabled}, nil
	}
	in, err := s.passkeys.FinishSignIn(ctx, rt.rp, r.PostForm.Get("ceremony"), readCookie(r, rt, csrfCookie), []byte(r.PostForm.Get("credential")), lookup)
	var refusal *passkey.Refusal
	switch {
	case errors.As(err, &refusal):
		s.metrics.signins.WithLabelValues(signinPasskeyRefused).Inc()
		e := audit.Event{Kind: audit.SignInPasskey, Outcome: audit.Failure, Reason: refusal.Reason, User: refusal.UserID, Client: cl.GetID()}
		if refusal.Passkey != nil {
			e.Detail = map[string]string{"passkey": refusal.Passkey.ID}
		}
		if refusal.Reason == passkey.ReasonCloned {
			// The counter did not go up: a copy of the authenticator is in use somewhere.
			s.log.Warn("passkey sign-in refused: the signature counter did not go up (a cloned authenticator)", "user", refusal.UserID, "passkey", e.Detail["passkey"])
		}
		s.audit.Record(ctx, e)
		status, msg := http.StatusUnauthorized, "This passkey cannot be used to sign in here."
		if refusal.Reason == passkey.ReasonExpired {
			msg = "The passkey sign-in took too long or was already used. Please try again."
		}
		wait, usedUp, ferr := res.Failed(ctx)
		if ferr != nil { // the failure is counted; only its delay was not recorded
			s.log.Warn("sign-in throttle: a failure's delay was not recorded", "err", ferr)
		}
		if wait > 0 {
			msg = waitMessage(msg, wait)
			retry(wait)
		}
		if len(usedUp) > 0 {
			status = http.StatusTooManyRequests
			s.lockout(ctx, cl.GetID(), nil, usedUp, wait, "passkey")
		}
		refused(status, msg)
		return
	case err != nil:
		res.Release(context.WithoutCancel(ctx))
		s.unavailablePage(w, r, rt, cl, "", err)
		return
	}
	_ = res.Succeeded(ctx)
	s.metrics.signins.WithLabelValues(signinPasskey).Inc()
	s.audit.Record(ctx, audit.Event{Kind: audit.SignInPasskey, Outcome: audit.Success, User: user.ID, Client: cl.GetID(),
		Detail: map[string]string{"passkey": in.Passkey.ID, "synced": strconv.FormatBool(in.Passkey.Synced)}})
	s.openSession(w, r, rt, cl, ar, user, in.Passkey.AMR()) // a user-verified passkey is two factors: no TOTP step
}

// passkeysPath is the passkeys page below the issuer's path.
func passkeysPath(rt *runtime) string { return rt.basePath + "/account/passkeys" }

// passkeysPage is /account/passkeys: GET lists the signed-in person's passkeys with the form to add one;
// POST removes one (action=remove) or finishes adding one (action=add, the answer to the ceremony the
// script began at /account/passkeys/begin), then redirects back (303) to the list with a notice.
func (s *Service) passkeysPage(w http.ResponseWriter, r *http.Request, _ string) {
	rt := s.rt()
	ctx := r.Context()
	if rt.rp == nil {
		s.pages.RenderError(w, http.StatusNotFound, page.Error{Title: "Passkeys are not enabled", Message: "This service does not offer passkeys."})
		return
	}
	_, u, err := s.signedIn(ctx, r, rt)
	if err != nil {
		w.Header().Set("Retry-After", "5")
		s.pages.RenderError(w, http.StatusServiceUnavailable, page.Error{Title: "Briefly unavailable", Message: "Please try again in a moment."})
		return
	}
	if u == nil {
		s.pages.RenderError(w, http.StatusUnauthorized, page.Error{Title: "Sign in first",
			Message: "Your passkeys are shown to you once you are signed in. Sign in to an application that uses this service in this browser, then open this page again."})
		return
	}
	d := page.Passkeys{Action: passkeysPath(rt), BeginURL: passkeysPath(rt) + "/begin", CSRF: csrfToken(w, r, rt), Email: u.Email, AccountURL: rt.basePath + "/account"}
	status := http.StatusOK
	switch r.Method {
	case http.MethodPost:
		if r.ParseForm() != nil || !csrfValid(r, rt) {
			status, d.Error = http.StatusForbidden, "This form has expired or was not sent from this page. Please try again."
			break
		}
		switch r.PostForm.Get("action") {
		case "add":
			status, d.Error = s.passkeyAdd(w, r, rt, u)
		case "remove":
			status, d.Error = s.passkeyRemove(w, r, rt, u)
		case "rename":
			status, d.Error = s.passkeyRename(w, r, rt, u)
		default:
			status, d.Error = http.StatusBadRequest, "Unknown action."
		}
		if status == http.StatusSeeOther {
			return
		}
	default:
		d.Notice = map[string]string{"added": "Your passkey was added. You can sign in with it from now on.",
			"renamed": "The passkey was renamed.",
			"removed": "The passkey was removed. It can no longer sign you in."}[r.URL.Query().Get("done")]
	}
	list, err := s.passkeys.List(ctx, u.ID)
	if err != nil {
		w.Header().Set("Retry-After", "5")
		s.pages.RenderError(w, http.StatusServiceUnavailable, page.Error{Title: "Briefly unavailable", Message: "Please try again in a moment."})
		return
	}
	for _, p := range list {
		d.List = append(d.List, page.PasskeyRow{ID: p.ID, Name: p.Name, Created: p.Created, LastUsed: p.LastUsed, Synced: p.Synced, ClonedAt: p.ClonedAt})
	}
	d.Full = len(list) >= passkey.MaxPerUser
	s.pages.RenderPasskeys(w, status, d)
}

func accountOf(u *users.User) passkey.Account {
	return passkey.Account{ID: u.ID, Email: u.Email, Name: u.Name, Disabled: u.Disabled}
}

// passkeyAdd finishes adding a passkey; on success it redirects (303) and tells the person by mail.
func (s *Service) passkeyAdd(w http.ResponseWriter, r *http.Request, rt *runtime, u *users.User) (int, string) {
	ctx := r.Context()
	p, err := s.passkeys.FinishRegistration(ctx, rt.rp, accountOf(u), r.PostForm.Get("ceremony"), readCookie(r, rt, sessionCookie), []byte(r.PostForm.Get("credential")))
	var refusal *passkey.Refusal
	switch {
	case errors.As(err, &refusal):
		s.passkeyEvent(ctx, audit.PasskeyAdded, audit.Failure, refusal.Reason, u.ID, nil)
		switch refusal.Reason {
		case passkey.ReasonExpired:
			return http.StatusBadRequest, "Adding the passkey took too long or was already done. Please try again."
		case passkey.ReasonExists:
			return http.StatusConflict, "This passkey is registered already."
		}
		return http.StatusBadRequest, "The passkey was not added: the browser's answer was not accepted."
	case errors.Is(err, passkey.ErrTooMany):
		s.passkeyEvent(ctx, audit.PasskeyAdded, audit.Failure, "too_many", u.ID, nil)
		return http.StatusConflict, fmt.Sprintf("An account can have at most %d passkeys. Remove one to add another.", passkey.MaxPerUser)
	case err != nil:
		s.log.Warn("passkey could not be added", "err", err)
		w.Header().Set("Retry-After", "5")
		return http.StatusServiceUnavailable, "Passkeys are briefly unavailable. Please try again in a moment."
	}
	s.passkeyEvent(ctx, audit.PasskeyAdded, audit.Success, "", u.ID, map[string]string{"passkey": p.ID, "synced": strconv.FormatBool(p.Synced)})
	s.mailPasskeyAdded(ctx, rt, u, p, requestLang(r))
	http.Redirect(w, r, passkeysPath(rt)+"?done=added", http.StatusSeeOther)
	return http.StatusSeeOther, ""
}

// passkeyRemove removes one of the person's passkeys and redirects (303).
func (s *Service) passkeyRemove(w http.ResponseWriter, r *http.Request, rt *runtime, u *users.User) (int, string) {
	ctx := r.Context()
	p, err := s.passkeys.Remove(ctx, u.ID, r.PostForm.Get("id"))
	switch {
	case errors.Is(err, passkey.ErrNotFound):
		s.passkeyEvent(ctx, audit.PasskeyRemoved, audit.Failure, "not_found", u.ID, map[string]string{"passkey": r.PostForm.Get("id")})
		return http.StatusNotFound, "That passkey is not one of yours, or was removed already."
	case err != nil:
		s.log.Warn("passkey could not be removed", "err", err)
		w.Header().Set("Retry-After", "5")
		return http.StatusServiceUnavailable, "Passkeys are briefly unavailable. Please try again in a moment."
	}
	s.passkeyEvent(ctx, audit.PasskeyRemoved, audit.Success, "", u.ID, map[string]string{"passkey": p.ID})
	http.Redirect(w, r, passkeysPath(rt)+"?done=removed", http.StatusSeeOther)
	return http.StatusSeeOther, ""
}

// passkeyRename gives one of the person's passkeys another name and redirects (303).
func (s *Service) passkeyRename(w http.ResponseWriter, r *http.Request, rt *runtime, u *users.User) (int, string) {
	ctx := r.Context()
	p, err := s.passkeys.Rename(ctx, u.ID, r.PostForm.Get("id"), r.PostForm.Get("name"))
	switch {
	case errors.Is(err, passkey.ErrName):
		return http.StatusBadRequest, fmt.Sprintf("Give the passkey a name of 1 to %d characters.", passkey.MaxNameLen)
	case errors.Is(err, passkey.ErrNotFound):
		s.passkeyEvent(ctx, audit.PasskeyRenamed, audit.Failure, "not_found", u.ID, map[string]string{"passkey": r.PostForm.Get("id")})
		return http.StatusNotFound, "That passkey is not one of yours, or was removed already."
	case err != nil:
		s.log.Warn("passkey could not be renamed", "err", err)
		w.Header().Set("Retry-After", "5")
		return http.StatusServiceUnavailable, "Passkeys are briefly unavailable. Please try again in a moment."
	}
	s.passkeyEvent(ctx, audit.PasskeyRenamed, audit.Success, "", u.ID, map[string]string{"passkey": p.ID})
	http.Redirect(w, r, passkeysPath(rt)+"?done=renamed", http.StatusSeeOther)
	return http.StatusSeeOther, ""
}

// passkeyRegisterBegin is POST /account/passkeys/begin: the options of a registration ceremony for the
// passkeys page's script. Adding a way to sign in is a sensitive change, so the person's current
// password is checked first (ASVS 3.7.1), throttled like a sign-in; the ceremony is bound to the
// sign-in session.
func (s *Service) passkeyRegisterBegin(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := s.rt()
	ctx := r.Context()
	if rt.rp == nil {
		passkeyJSON(w, http.StatusNotFound, passkeyError{Error: "Passkeys are not enabled here."})
		return
	}
	if !s.passkeyRateAllowed(w, r, rt, clientKey) {
		return
	}
	if r.ParseForm() != nil || !csrfValid(r, rt) {
		passkeyJSON(w, http.StatusForbidden, passkeyError{Error: "This page has expired. Reload it and try again."})
		return
	}
	_, u, err := s.signedIn(ctx, r, rt)
	if err != nil {
		passkeyJSON(w, http.StatusServiceUnavailable, passkeyError{Error: "Passkeys are briefly unavailable. Please try again in a moment."})
		return
	}
	if u == nil {
		passkeyJSON(w, http.StatusUnauthorized, passkeyError{Error: "Your sign-in has ended. Sign in again, then add the passkey."})
		return
	}
	name, err := passkey.CheckName(r.PostForm.Get("name"))
	if err != nil {
		passkeyJSON(w, http.StatusBadRequest, passkeyError{Error: fmt.Sprintf("Give the passkey a name of 1 to %d characters.", passkey.MaxNameLen), Field: "name"})
		return
	}
	if !s.passkeyReauthenticate(w, r, rt, u, clientKey) {
		return
	}
	o, err := s.passkeys.BeginRegistration(ctx, rt.rp, accountOf(u), name, readCookie(r, rt, sessionCookie))
	switch {
	case errors.Is(err, passkey.ErrTooMany):
		passkeyJSON(w, http.StatusConflict, passkeyError{Error: fmt.Sprintf("An account can have at most %d passkeys. Remove one to add another.", passkey.MaxPerUser)})
		return
	case err != nil:
		s.log.Warn("passkey registration could not begin", "err", err)
		passkeyJSON(w, http.StatusServiceUnavailable, passkeyError{Error: "Passkeys are briefly unavailable. Please try again in a moment."})
		return
	}
	passkeyJSON(w, http.StatusOK, o)
}

// passkeyReauthenticate checks the signed-in person's current password, reserved against the sign-in
// budgets exactly as a sign-in is (this browser's device budget when it holds a device cookie of the
// account, else the account's unknown browsers' and the address's), and answers the script when it
// fails. A wrong password, or one not checked for the throttle, is a refused passkey.added.
func (s *Service) passkeyReauthenticate(w http.ResponseWriter, r *http.Request, rt *runtime, u *users.User, ip string) bool {
	ctx := r.Context()
	retry := func(wait time.Duration) string {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
		return fmt.Sprintf(" Try again in %d s.", int(wait/time.Second))
	}
	account, ok := email.Canonical(u.Email)
	if !ok {
		account = strings.ToLower(u.Email)
	}
	attempt := throttle.Attempt{Account: account, Device: s.knownDevice(r, rt, account), IP: ip}
	res, limited, err := s.throttle.Reserve(ctx, attempt, s.limits(rt))
	if err != nil {
		passkeyJSON(w, http.StatusServiceUnavailable, passkeyError{Error: "Passkeys are briefly unavailable. Please try again in a moment."})
		return false
	}
	if limited != nil {
		s.passkeyEvent(ctx, audit.PasskeyAdded, audit.Failure, "throttled", u.ID, map[string]string{"budget": limited.Budget})
		passkeyJSON(w, http.StatusTooManyRequests, passkeyError{Error: "Too many wrong passwords." + retry(limited.Wait), Field: "password"})
		return false
	}
	_, err = s.users.Authenticate(ctx, u.Email, r.PostForm.Get("password"))
	switch {
	case errors.Is(err, users.ErrBadCredentials):
		s.passkeyEvent(ctx, audit.PasskeyAdded, audit.Failure, "bad_password", u.ID, nil)
		status, msg := http.StatusUnauthorized, "Wrong password."
		wait, usedUp, ferr := res.Failed(ctx)
		if ferr != nil {
			s.log.Warn("sign-in throttle: a failure's delay was not recorded", "err", ferr)
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
			s.lockout(ctx, "", u, usedUp, wait, browser)
		}
		passkeyJSON(w, status, passkeyError{Error: msg, Field: "password"})
		return false
	case err != nil:
		res.Release(context.WithoutCancel(ctx))
		passkeyJSON(w, http.StatusServiceUnavailable, passkeyError{Error: "Passkeys are briefly unavailable. Please try again in a moment."})
		return false
	}
	_ = res.Succeeded(ctx)
	return true
}

// The passkey mail: sent to the person whenever a passkey is added to their account, so that a passkey
// added by someone else (with a stolen session and password) does not go unnoticed.
var passkeyAddedMail = mailText{
	"en": mail.MustContent("passkey-added",
		`A passkey was added to your {{.Brand.Product}} account`,
		`A passkey named "{{.Data.Passkey}}" was added to your account ({{.Data.Email}}) on {{.Data.When}}. It can sign you in from now on, without your password.

If you did not add it, remove it now and change your password:
{{.Data.Link}}`,
		`<p>A passkey named <strong>{{.Data.Passkey}}</strong> was added to your account ({{.Data.Email}}) on {{.Data.When}}. It can sign you in from now on, without your password.</p>
<p>If you did not add it, remove it now and change your password.</p>
{{.Button .Data.Link "Review your passkeys"}}`),
	"de": mail.MustContent("passkey-added",
		`Ihrem Konto bei {{.Brand.Product}} wurde ein Passkey hinzugefügt`,
		`Ihrem Konto ({{.Data.Email}}) wurde am {{.Data.When}} ein Passkey mit dem Namen „{{.Data.Passkey}}" hinzugefügt. Mit ihm können Sie sich ab jetzt ohne Passwort anmelden.

Wenn Sie ihn nicht hinzugefügt haben, entfernen Sie ihn sofort und ändern Sie Ihr Passwort:
{{.Data.Link}}`,
		`<p>Ihrem Konto ({{.Data.Email}}) wurde am {{.Data.When}} ein Passkey mit dem Namen <strong>{{.Data.Passkey}}</strong> hinzugefügt. Mit ihm können Sie sich ab jetzt ohne Passwort anmelden.</p>
<p>Wenn Sie ihn nicht hinzugefügt haben, entfernen Sie ihn sofort und ändern Sie Ihr Passwort.</p>
{{.Button .Data.Link "Ihre Passkeys ansehen"}}`),
}

type passkeyMailData struct {
	Passkey, Email, When, Link string
}

// mailPasskeyAdded tells the person a passkey was added. A mail that cannot be sent is logged; the
// passkey stays (the person is looking at the page that lists it).
func (s *Service) mailPasskeyAdded(ctx context.Context, rt *runtime, u *users.User, p *passkey.Passkey, lang string) {
	m, err := passkeyAddedMail.render(lang, mailBrand(rt, rt.rp.Name), passkeyMailData{
		Passkey: p.Name, Email: u.Email, When: whenIn(lang, p.Created), Link: rt.issuer + "/account/passkeys"})
	if err == nil {
		m.To, m.ID = []string{u.Email}, "passkey-added."+p.ID
		err = s.sendMail(ctx, m)
	}
	if err != nil {
		s.log.Warn("the passkey-added mail could not be sent", "user", u.ID, "err", err)
	}
}

// passkeyEvent records an audit event of the passkeys page: a passkey added (or refused, with the
// reason), renamed, removed. Identifiers and a closed vocabulary of reasons only, never a secret.
func (s *Service) passkeyEvent(ctx context.Context, kind audit.Kind, outcome audit.Outcome, reason, userID string, detail map[string]string) {
	s.audit.Record(ctx, audit.Event{Kind: kind, Outcome: outcome, Reason: reason, User: userID, Detail: detail})
}
