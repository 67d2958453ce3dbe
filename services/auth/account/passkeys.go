package account

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/passkey"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
)

// The page at /account/passkeys where a signed-in person lists, adds, renames and removes their
// passkeys (package passkey does the WebAuthn ceremonies and the storage; signing in with one is the
// sign-in area's). docs/auth.md, "Passkeys", describes the journey.

// passkeysPath is the passkeys page below the issuer's path.
func passkeysPath(rt *realm.Realm) string { return rt.BasePath + "/account/passkeys" }

// Passkeys is /account/passkeys: GET lists the signed-in person's passkeys with the form to add one;
// POST removes one (action=remove) or finishes adding one (action=add, the answer to the ceremony the
// script began at /account/passkeys/begin), then redirects back (303) to the list with a notice.
func (h *Handler) Passkeys(w http.ResponseWriter, r *http.Request, _ string) {
	rt := h.web.Realm.Current()
	ctx := r.Context()
	if rt.RP == nil {
		h.web.Pages.RenderError(w, http.StatusNotFound, page.Error{Title: "Passkeys are not enabled", Message: "This service does not offer passkeys."})
		return
	}
	_, u, err := h.currentSession(w, r, rt)
	if err != nil {
		h.passkeysUnavailable(w)
		return
	}
	if u == nil {
		h.web.Pages.RenderError(w, http.StatusUnauthorized, page.Error{Title: "Sign in first",
			Message: "Your passkeys are shown to you once you are signed in. Sign in to an application that uses this service in this browser, then open this page again."})
		return
	}
	d := page.Passkeys{Action: passkeysPath(rt), BeginURL: passkeysPath(rt) + "/begin", CSRF: web.CSRFToken(w, r, rt), Email: u.Email, AccountURL: rt.BasePath + "/account"}
	d.VerifyFirst = verifyFirst(rt, u, d.CSRF)
	status := http.StatusOK
	switch r.Method {
	case http.MethodPost:
		if r.ParseForm() != nil || !web.CSRFValid(r, rt) {
			status, d.Error = http.StatusForbidden, "This form has expired or was not sent from this page. Please try again."
			break
		}
		switch r.PostForm.Get("action") {
		case "add":
			status, d.Error = h.passkeyAdd(w, r, rt, u)
		case "remove":
			status, d.Error = h.passkeyRemove(w, r, rt, u)
		case "rename":
			status, d.Error = h.passkeyRename(w, r, rt, u)
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
	list, err := h.passkeys.List(ctx, u.ID)
	if err != nil {
		h.passkeysUnavailable(w)
		return
	}
	for _, p := range list {
		d.List = append(d.List, page.PasskeyRow{ID: p.ID, Name: p.Name, Created: p.Created, LastUsed: p.LastUsed, Synced: p.Synced, ClonedAt: p.ClonedAt})
	}
	d.Full = len(list) >= passkey.MaxPerUser
	h.web.Pages.RenderPasskeys(w, status, d)
}

// passkeysUnavailable answers the passkeys page when its store did not answer: 503 with Retry-After.
func (h *Handler) passkeysUnavailable(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "5")
	h.web.Pages.RenderError(w, http.StatusServiceUnavailable, page.Error{Title: "Briefly unavailable", Message: "Please try again in a moment."})
}

func accountOf(u *users.User) passkey.Account {
	return passkey.Account{ID: u.ID, Email: u.Email, Name: u.Name, Disabled: u.Disabled}
}

// passkeyAdd finishes adding a passkey; on success it redirects (303) and tells the person by mail.
func (h *Handler) passkeyAdd(w http.ResponseWriter, r *http.Request, rt *realm.Realm, u *users.User) (int, string) {
	ctx := r.Context()
	if !u.EmailVerified { // the ceremony could not have begun (PasskeyRegisterBegin): a forged post
		h.passkeyEvent(ctx, audit.PasskeyAdded, audit.Failure, "unverified", u.ID, nil)
		return http.StatusForbidden, "Confirm your e-mail address first, then add the passkey."
	}
	p, err := h.passkeys.FinishRegistration(ctx, rt.RP, accountOf(u), r.PostForm.Get("ceremony"), web.ReadCookie(r, rt, web.SessionCookie), []byte(r.PostForm.Get("credential")))
	var refusal *passkey.Refusal
	switch {
	case errors.As(err, &refusal):
		h.passkeyEvent(ctx, audit.PasskeyAdded, audit.Failure, refusal.Reason, u.ID, nil)
		switch refusal.Reason {
		case passkey.ReasonExpired:
			return http.StatusBadRequest, "Adding the passkey took too long or was already done. Please try again."
		case passkey.ReasonExists:
			return http.StatusConflict, "This passkey is registered already."
		}
		return http.StatusBadRequest, "The passkey was not added: the browser's answer was not accepted."
	case errors.Is(err, passkey.ErrTooMany):
		h.passkeyEvent(ctx, audit.PasskeyAdded, audit.Failure, "too_many", u.ID, nil)
		return http.StatusConflict, fmt.Sprintf("An account can have at most %d passkeys. Remove one to add another.", passkey.MaxPerUser)
	case err != nil:
		h.log.Warn("passkey could not be added", "err", err)
		w.Header().Set("Retry-After", "5")
		return http.StatusServiceUnavailable, "Passkeys are briefly unavailable. Please try again in a moment."
	}
	h.passkeyEvent(ctx, audit.PasskeyAdded, audit.Success, "", u.ID, map[string]string{"passkey": p.ID, "synced": strconv.FormatBool(p.Synced)})
	h.accounts.PasskeyAdded(ctx, u, p, rt.RP.Name, web.RequestLang(r), r.UserAgent())
	http.Redirect(w, r, passkeysPath(rt)+"?done=added", http.StatusSeeOther)
	return http.StatusSeeOther, ""
}

// passkeyRemove removes one of the person's passkeys and redirects (303).
func (h *Handler) passkeyRemove(w http.ResponseWriter, r *http.Request, rt *realm.Realm, u *users.User) (int, string) {
	ctx := r.Context()
	p, err := h.passkeys.Remove(ctx, u.ID, r.PostForm.Get("id"))
	switch {
	case errors.Is(err, passkey.ErrNotFound):
		h.passkeyEvent(ctx, audit.PasskeyRemoved, audit.Failure, "not_found", u.ID, map[string]string{"passkey": r.PostForm.Get("id")})
		return http.StatusNotFound, "That passkey is not one of yours, or was removed already."
	case err != nil:
		h.log.Warn("passkey could not be removed", "err", err)
		w.Header().Set("Retry-After", "5")
		return http.StatusServiceUnavailable, "Passkeys are briefly unavailable. Please try again in a moment."
	}
	h.passkeyEvent(ctx, audit.PasskeyRemoved, audit.Success, "", u.ID, map[string]string{"passkey": p.ID})
	http.Redirect(w, r, passkeysPath(rt)+"?done=removed", http.StatusSeeOther)
	return http.StatusSeeOther, ""
}

// passkeyRename gives one of the person's passkeys another name and redirects (303).
func (h *Handler) passkeyRename(w http.ResponseWriter, r *http.Request, rt *realm.Realm, u *users.User) (int, string) {
	ctx := r.Context()
	p, err := h.passkeys.Rename(ctx, u.ID, r.PostForm.Get("id"), r.PostForm.Get("name"))
	switch {
	case errors.Is(err, passkey.ErrName):
		return http.StatusBadRequest, fmt.Sprintf("Give the passkey a name of 1 to %d characters.", passkey.MaxNameLen)
	case errors.Is(err, passkey.ErrNotFound):
		h.passkeyEvent(ctx, audit.PasskeyRenamed, audit.Failure, "not_found", u.ID, map[string]string{"passkey": r.PostForm.Get("id")})
		return http.StatusNotFound, "That passkey is not one of yours, or was removed already."
	case err != nil:
		h.log.Warn("passkey could not be renamed", "err", err)
		w.Header().Set("Retry-After", "5")
		return http.StatusServiceUnavailable, "Passkeys are briefly unavailable. Please try again in a moment."
	}
	h.passkeyEvent(ctx, audit.PasskeyRenamed, audit.Success, "", u.ID, map[string]string{"passkey": p.ID})
	http.Redirect(w, r, passkeysPath(rt)+"?done=renamed", http.StatusSeeOther)
	return http.StatusSeeOther, ""
}
