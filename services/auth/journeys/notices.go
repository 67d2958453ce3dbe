package journeys

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/authmail"
	"github.com/formsservice/formsservice/services/auth/link"
	"github.com/formsservice/formsservice/services/auth/notify"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
)

// The pages of the notices' links (package notify, D66). Each GET shows what its button will do and
// acts on nothing (a mail scanner or a link preview follows links, and never posts a form); the button
// posts with the browser's CSRF token, and its link is used up then.
//
//   - "This wasn't me" (/account/not-me, from the mail of a sign-in in a new browser): every grant and
//     sign-in session of the account ends (accounts.Ops.SignOutEverywhere: back-channel logout, and the
//     account's device cookies of the old generation are unknown browsers from then on), and a reset link
//     is mailed for a new password.
//   - Unblock (/account/unblock, from the mail of a lockout): the browser the link is opened in gets a
//     new device cookie of the account (signon.Kit.NewDevice), and so a sign-in budget of its own. The
//     budgets the failures used up stay used up: the guesser's browsers are still refused.

// noticeLink checks a notice's link (and, with use, uses it up) and returns its active account.
func (h *Handler) noticeLink(ctx context.Context, token, purpose string, use bool) (*link.Link, *users.User, error) {
	read := h.links.Peek
	if use {
		read = h.links.Use
	}
	l, err := read(ctx, token, purpose)
	if err != nil {
		return nil, nil, err
	}
	u, err := h.signOn.ActiveUser(ctx, l.User)
	if errors.Is(err, users.ErrNotFound) {
		return nil, nil, link.ErrInvalid
	}
	if err != nil {
		return nil, nil, err
	}
	return l, u, nil
}

// notMeForm is the "this wasn't me" link's page.
func notMeForm(rt *realm.Realm, u *users.User, token string) page.Journey {
	return page.Journey{Title: "Was it not you?", Form: "notme", Action: rt.BasePath + "/account/not-me", Token: token, Email: u.Email,
		Lead: fmt.Sprintf("Sign every browser and app out of %s. We then send you a link to choose a new password.", u.Email)}
}

// unblockForm is the lockout link's page.
func unblockForm(rt *realm.Realm, u *users.User, token string) page.Journey {
	return page.Journey{Title: "Let this browser sign in", Form: "unblock", Action: rt.BasePath + "/account/unblock", Token: token, Email: u.Email,
		Lead: fmt.Sprintf("Signing in to %s was paused after too many wrong passwords. If you tried, let this browser sign in again: it gets attempts of its own, and the browsers that guessed stay paused.", u.Email)}
}

// NotMePage is GET /account/not-me?token=…: the button that signs the account out everywhere.
func (h *Handler) NotMePage(w http.ResponseWriter, r *http.Request, clientKey string) {
	h.noticePage(w, r, clientKey, notify.LinkNotMe, audit.NotMe, notMeForm)
}

// UnblockPage is GET /account/unblock?token=…: the button that lets this browser sign in.
func (h *Handler) UnblockPage(w http.ResponseWriter, r *http.Request, clientKey string) {
	h.noticePage(w, r, clientKey, notify.LinkUnblock, audit.Unblocked, unblockForm)
}

func (h *Handler) noticePage(w http.ResponseWriter, r *http.Request, clientKey, purpose string, kind audit.Kind, form func(*realm.Realm, *users.User, string) page.Journey) {
	rt := h.web.Realm.Current()
	if !h.web.RateAllowed(w, r, rt, "link-ip", clientKey, rt.Config.Auth.RateLimit.PerIP) {
		return
	}
	token := r.URL.Query().Get("token")
	_, u, err := h.noticeLink(r.Context(), token, purpose, false)
	if err != nil {
		h.refusedLink(w, r, rt, kind, purpose, err)
		return
	}
	h.renderJourney(w, r, rt, http.StatusOK, form(rt, u, token))
}

// noticeButton checks the post of a notice link's button (rate, form, link, CSRF) and uses the link up;
// it answers the refusals itself and returns the link and its account, or nils.
func (h *Handler) noticeButton(w http.ResponseWriter, r *http.Request, rt *realm.Realm, clientKey, purpose string, kind audit.Kind, form func(*realm.Realm, *users.User, string) page.Journey) (*link.Link, *users.User) {
	ctx := r.Context()
	if !h.web.RateAllowed(w, r, rt, "link-ip", clientKey, rt.Config.Auth.RateLimit.PerIP) {
		return nil, nil
	}
	if err := r.ParseForm(); err != nil {
		h.web.BadForm(w)
		return nil, nil
	}
	token := r.PostForm.Get("token")
	_, u, err := h.noticeLink(ctx, token, purpose, false)
	if err != nil {
		h.refusedLink(w, r, rt, kind, purpose, err)
		return nil, nil
	}
	if !web.CSRFValid(r, rt) {
		h.audit.Record(ctx, audit.Event{Kind: kind, Outcome: audit.Failure, Reason: "csrf", User: u.ID})
		d := form(rt, u, token)
		d.Error = "This form has expired or was not sent from this page. Please try again."
		h.renderJourney(w, r, rt, http.StatusForbidden, d)
		return nil, nil
	}
	l, u, err := h.noticeLink(ctx, token, purpose, true) // of parallel posts of one link, one gets here
	if err != nil {
		h.refusedLink(w, r, rt, kind, purpose, err)
		return nil, nil
	}
	return l, u
}

// NotMe is POST /account/not-me: every grant and sign-in session of the account ends, and a reset link
// is mailed.
func (h *Handler) NotMe(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := h.web.Realm.Current()
	ctx := r.Context()
	l, u := h.noticeButton(w, r, rt, clientKey, notify.LinkNotMe, audit.NotMe, notMeForm)
	if u == nil {
		return
	}
	grants, sessions, err := h.accounts.SignOutEverywhere(ctx, u.ID)
	if err != nil {
		h.web.AccountUnavailable(w, err)
		return
	}
	h.audit.Record(ctx, audit.Event{Kind: audit.NotMe, Outcome: audit.Success, User: u.ID, Client: l.Client,
		Detail: map[string]string{"grants": strconv.Itoa(grants), "sessions": strconv.Itoa(sessions)}})
	// The same reset link "Forgot password?" sends: the password is replaced only from the mailbox again,
	// within its short lifetime, not by whoever holds this longer-lived link.
	h.mailResetLink(r, rt, u, rt.AppClient(l.Client))
	h.renderJourney(w, r, rt, http.StatusOK, page.Journey{Title: "Your account was signed out everywhere",
		Notice: fmt.Sprintf("Every browser and app signed in to %s was signed out. We have sent you a link to choose a new password: it works for %s.",
			u.Email, authmail.Lifetime(rt.Config.Auth.ResetLinkLifetime.D())),
		Lead: "Choose a new password with the link in the message, then sign in again."})
}

// Unblock is POST /account/unblock: this browser becomes a known browser of the account, with a
// sign-in budget of its own.
func (h *Handler) Unblock(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := h.web.Realm.Current()
	ctx := r.Context()
	l, u := h.noticeButton(w, r, rt, clientKey, notify.LinkUnblock, audit.Unblocked, unblockForm)
	if u == nil {
		return
	}
	gen, err := h.signOn.Generation(ctx, u.ID, nil)
	if err != nil {
		h.web.AccountUnavailable(w, err)
		return
	}
	h.signOn.NewDevice(w, rt, signon.AccountKey(u.Email), gen)
	h.audit.Record(ctx, audit.Event{Kind: audit.Unblocked, Outcome: audit.Success, User: u.ID, Client: l.Client})
	h.renderJourney(w, r, rt, http.StatusOK, page.Journey{Title: "This browser can sign in again",
		Notice: fmt.Sprintf("This browser can sign in to %s now. Browsers that were not yours stay paused.", u.Email),
		Lead:   "Sign in with your password.", Links: appLinks(rt.AppClient(l.Client))})
}
