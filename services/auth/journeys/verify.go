package journeys

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/authmail"
	"github.com/formsservice/formsservice/services/auth/link"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
)

// E-mail verification (docs/auth.md "E-mail verification", D29 as amended by D51). The sign-up's mail
// carries a link; its page shows the account and a button, the button sets the account's address
// verified, and from then on email_verified is true in ID tokens and at userinfo. A client with requireVerifiedEmail refuses the sign-in of an
// unverified account, and the page offers to send the link again; so does every refused link's page.
// Asking again is throttled and answered the same whether the address has an account or not. The link
// and its mail are package accounts' (VerificationLink, SendVerificationMail).

// VerifyPage is GET /account/verify?token=…: the link from the mail. It acts on nothing — a mail
// scanner or a link preview that opens it verifies no address (D29 as amended by D51) — and shows
// whose account the address would confirm, with the button that confirms it; for an account made on the
// sign-up form it also offers "this is not my account: delete it", since someone else may have signed up
// with the address (account pre-hijacking).
func (h *Handler) VerifyPage(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := h.web.Realm.Current()
	if !h.web.RateAllowed(w, r, rt, "link-ip", clientKey, rt.Config.Auth.RateLimit.PerIP) {
		return
	}
	token := r.URL.Query().Get("token")
	l, u, err := h.verifyLink(r.Context(), token, false)
	if err != nil {
		h.refusedLink(w, r, rt, audit.EmailVerified, linkVerify, err)
		return
	}
	h.renderJourney(w, r, rt, http.StatusOK, verifyForm(rt, l, u, token))
}

// verifyForm is the link's page: the account it confirms, and its buttons.
func verifyForm(rt *realm.Realm, l *link.Link, u *users.User, token string) page.Journey {
	d := page.Journey{Title: "Confirm your e-mail address", Form: "verify", Action: rt.BasePath + "/account/verify", Token: token,
		Email: u.Email, ClientID: l.Client, Disown: disownable(u),
		Lead: fmt.Sprintf("An account with the address %s was made on %s. Confirm the address if the account is yours.", u.Email, u.CreatedAt.UTC().Format(time.DateOnly))}
	if cl := rt.AppClient(l.Client); cl != nil {
		d.Lead = fmt.Sprintf("An account for %s with the address %s was made on %s. Confirm the address if the account is yours.", cl.Name, u.Email, u.CreatedAt.UTC().Format(time.DateOnly))
	}
	return d
}

// disownable: the account was made on the sign-up form and never verified, so the owner of the address
// may delete it from the link (an operator's account is the operator's to delete).
func disownable(u *users.User) bool { return u.SelfSignup && !u.EmailVerified }

// verifyLink checks a verification link (and, with use, uses it up) and returns its active account.
func (h *Handler) verifyLink(ctx context.Context, token string, use bool) (*link.Link, *users.User, error) {
	read := h.links.Peek
	if use {
		read = h.links.Use
	}
	l, err := read(ctx, token, linkVerify)
	if err != nil {
		return nil, nil, err
	}
	u, err := h.signOn.ActiveUser(ctx, l.User)
	if errors.Is(err, users.ErrNotFound) || (err == nil && u.Email != l.Bind) { // deleted, disabled, or moved to another address
		return nil, nil, link.ErrInvalid
	}
	if err != nil {
		return nil, nil, err
	}
	return l, u, nil
}

// VerifyEmail is POST /account/verify, the link's page's buttons: action=confirm verifies the address;
// action=delete deletes an unverified account made on the sign-up form (its owner did not make it). The
// link is used up either way.
func (h *Handler) VerifyEmail(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := h.web.Realm.Current()
	ctx := r.Context()
	if !h.web.RateAllowed(w, r, rt, "link-ip", clientKey, rt.Config.Auth.RateLimit.PerIP) {
		return
	}
	if err := r.ParseForm(); err != nil {
		h.web.BadForm(w)
		return
	}
	token, action := r.PostForm.Get("token"), r.PostForm.Get("action")
	l, u, err := h.verifyLink(ctx, token, false)
	if err != nil {
		h.refusedLink(w, r, rt, audit.EmailVerified, linkVerify, err)
		return
	}
	form := verifyForm(rt, l, u, token)
	if !web.CSRFValid(r, rt) {
		h.audit.Record(ctx, audit.Event{Kind: audit.EmailVerified, Outcome: audit.Failure, Reason: "csrf", User: u.ID})
		form.Error = "This form has expired or was not sent from this page. Please try again."
		h.renderJourney(w, r, rt, http.StatusForbidden, form)
		return
	}
	if action != "confirm" && (action != "delete" || !form.Disown) {
		form.Error = "Choose one of the buttons below."
		h.renderJourney(w, r, rt, http.StatusBadRequest, form)
		return
	}
	if l, u, err = h.verifyLink(ctx, token, true); err != nil { // of parallel posts of one link, one gets here
		h.refusedLink(w, r, rt, audit.EmailVerified, linkVerify, err)
		return
	}
	if action == "delete" {
		h.disown(w, r, rt, l, u)
		return
	}
	err = h.users.SetVerified(ctx, u.ID, l.Bind)
	if errors.Is(err, users.ErrNotFound) { // deleted or moved meanwhile
		h.refusedLink(w, r, rt, audit.EmailVerified, linkVerify, link.ErrInvalid)
		return
	}
	if err != nil {
		h.web.AccountUnavailable(w, err)
		return
	}
	cl := rt.AppClient(l.Client)
	h.audit.Record(ctx, audit.Event{Kind: audit.EmailVerified, Outcome: audit.Success, User: u.ID, Client: l.Client})
	lead := "You can sign in with it now."
	if cl != nil {
		lead = fmt.Sprintf("You can go on to %s and sign in.", cl.Name)
	}
	h.renderJourney(w, r, rt, http.StatusOK, page.Journey{Title: "Your e-mail address is confirmed",
		Notice: fmt.Sprintf("%s is confirmed as your address.", u.Email), Lead: lead, Links: appLinks(cl)})
}

// disown deletes the account of a used verification link whose reader did not make it.
func (h *Handler) disown(w http.ResponseWriter, r *http.Request, rt *realm.Realm, l *link.Link, u *users.User) {
	ctx := r.Context()
	deleted, err := h.accounts.DeleteUnclaimed(ctx, u)
	if err != nil && !deleted {
		h.web.AccountUnavailable(w, err)
		return
	}
	if err != nil {
		h.log.Warn("verification link: an unclaimed account was deleted, not all it held", "user", u.ID, "err", err)
	}
	if !deleted { // verified meanwhile (another link of the same mailbox): not the squatter's any more
		h.refusedLink(w, r, rt, audit.EmailVerified, linkVerify, link.ErrUsed)
		return
	}
	h.audit.Record(ctx, audit.Event{Kind: audit.UserDeleted, Outcome: audit.Success, User: u.ID, Client: l.Client,
		Detail: map[string]string{"by": "address_owner"}})
	h.renderJourney(w, r, rt, http.StatusOK, page.Journey{Title: "The account was deleted",
		Notice: fmt.Sprintf("The account with %s was deleted. Nobody can sign in to it.", u.Email),
		Lead:   "Your address is free: you can make an account of your own with it at any time."})
}

// ResendVerification is POST /account/verify/resend: the address to send a new verification link to.
// Every well-formed address gets the same answer; only an account that has it and is not yet verified
// gets a mail.
func (h *Handler) ResendVerification(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := h.web.Realm.Current()
	ctx := r.Context()
	form := page.Journey{Title: "Send the confirmation link again", Form: "resend", Action: rt.BasePath + "/account/verify/resend",
		Lead: "Enter the address of your account. We will send it a new link."}
	req, u, ok := h.readMailRequest(w, r, rt, audit.VerificationSent, linkVerify, clientKey, form)
	if !ok {
		return
	}
	e := audit.Event{Kind: audit.VerificationSent, Outcome: audit.Failure, Client: form.ClientID}
	if req.cl != nil {
		e.Client = req.cl.GetID()
	}
	switch {
	case req.dropped != nil:
		e.Reason, e.Detail = "throttled", droppedDetail(req.dropped)
	case u == nil:
		e.Reason = "unknown_account"
	case u.Disabled:
		e.Reason, e.User = "disabled", u.ID
	case u.EmailVerified:
		e.Reason, e.User = "already_verified", u.ID
	default:
		e.Outcome, e.User, e.Detail = audit.Success, u.ID, map[string]string{"trigger": "resend"}
		lang, app, clientID := web.RequestLang(r), appName(req.cl), e.Client
		authmail.SendLater(ctx, h.log, "verification", func(ctx context.Context) error {
			return h.accounts.SendVerificationMail(ctx, u, app, clientID, lang)
		})
	}
	h.audit.Record(ctx, e)
	h.renderJourney(w, r, rt, http.StatusOK, page.Journey{Title: "Check your mail",
		Notice: fmt.Sprintf("If %s has an account that still needs confirming, we have sent it a new link. It works for %s.", req.email,
			authmail.Lifetime(rt.Config.Auth.VerificationLinkLifetime.D())),
		Lead: "Open the link in the message to confirm your address.", Links: appLinks(req.cl)})
}
