package journeys

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/formsservice/formsservice/services/auth/accounts"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/authmail"
	"github.com/formsservice/formsservice/services/auth/link"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/passwords"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
)

// Password reset (docs/auth.md "Password reset", docs/architecture.md D30). "Forgot password?" on the
// sign-in page asks for an address and answers every well-formed one alike; an active account with it
// gets a link that works once, for minutes (resetLinkLifetime). The link's page asks for the new password
// under the sign-up policy; setting it ends every grant and session of the user (accounts.Ops.SetPassword
// signs out everywhere, as `formsservice users set-password` does) and mails the user that the password
// changed. A link is bound to the password it would replace: once the password changes, by any way, the
// link is used up.

// passwordTag binds a reset link to the password hash it replaces (a digest; the hash stays in the
// user's record).
func passwordTag(u *users.User) string {
	sum := sha256.Sum256([]byte("reset-link\x00" + u.Hash))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// ForgotPage is GET /account/forgot: the address to send a reset link to. The sign-in page links here
// with its client (so that the mail and the pages name the app) and its own address (to go back to).
func (h *Handler) ForgotPage(w http.ResponseWriter, r *http.Request, _ string) {
	rt := h.web.Realm.Current()
	q := r.URL.Query()
	d := forgotForm(rt)
	d.Return = sameSiteReturn(rt, q.Get("return"))
	if cl := rt.AppClient(q.Get("client_id")); cl != nil {
		d.ClientID = cl.GetID()
		d.Lead = fmt.Sprintf("Enter the address of your %s account. We will send it a link to choose a new password.", cl.Name)
	}
	if d.Return != "" {
		d.Links = []page.Link{{Href: d.Return, Text: "Back to sign-in"}}
	}
	h.renderJourney(w, r, rt, http.StatusOK, d)
}

func forgotForm(rt *realm.Realm) page.Journey {
	return page.Journey{Title: "Reset your password", Form: "forgot", Action: rt.BasePath + "/account/forgot",
		Lead: "Enter the address of your account. We will send it a link to choose a new password."}
}

// Forgot is POST /account/forgot: the same answer for every well-formed address; an active account with
// it gets the reset link by mail (sent after the answer, so that its time tells nothing either).
func (h *Handler) Forgot(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := h.web.Realm.Current()
	ctx := r.Context()
	req, u, ok := h.readMailRequest(w, r, rt, audit.ResetRequested, linkReset, clientKey, forgotForm(rt))
	if !ok {
		return
	}
	e := audit.Event{Kind: audit.ResetRequested, Outcome: audit.Failure}
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
	default:
		e.Outcome, e.User = audit.Success, u.ID
		h.mailResetLink(r, rt, u, req.cl)
	}
	h.audit.Record(ctx, e)
	d := page.Journey{Title: "Check your mail", Lead: "Open the link in the message to choose a new password.",
		Notice: fmt.Sprintf("If %s has an account, we have sent it a link to reset the password. It works for %s.", req.email,
			authmail.Lifetime(rt.Config.Auth.ResetLinkLifetime.D()))}
	if req.ret != "" {
		d.Links = []page.Link{{Href: req.ret, Text: "Back to sign-in"}}
	}
	h.renderJourney(w, r, rt, http.StatusOK, d)
}

// mailResetLink sends u a reset link, after the answer, in the request's language, for the client cl
// (nil for none).
func (h *Handler) mailResetLink(r *http.Request, rt *realm.Realm, u *users.User, cl *realm.Client) {
	valid, lang, issuer, clientID := rt.Config.Auth.ResetLinkLifetime.D(), web.RequestLang(r), rt.Issuer, ""
	if cl != nil {
		clientID = cl.GetID()
	}
	authmail.SendLater(r.Context(), h.log, "password reset", func(ctx context.Context) error {
		tok, err := h.links.Issue(ctx, link.Link{Purpose: linkReset, User: u.ID, Client: clientID, Bind: passwordTag(u)}, valid)
		if err != nil {
			return err
		}
		return h.accounts.SendLinkMail(ctx, resetMail, lang, u, appName(cl), authmail.LinkURL(issuer, "/account/reset", tok), valid)
	})
}

// resetLink checks a reset link without using it up: signed, not expired, not used, its account active
// and its password unchanged since the link was sent.
func (h *Handler) resetLink(ctx context.Context, token string) (*link.Link, *users.User, error) {
	l, err := h.links.Peek(ctx, token, linkReset)
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
	if l.Bind != passwordTag(u) {
		return nil, nil, link.ErrUsed // the password changed since: this link did its job, or lost it
	}
	return l, u, nil
}

// resetForm is the new password's form: for a verified account, with the choice to remove the other
// ways to sign in too; for an unverified one, saying that they go (resetDone).
func resetForm(rt *realm.Realm, u *users.User, token string) page.Journey {
	d := page.Journey{Title: "Choose a new password", Lead: "for " + u.Email, Form: "reset", Action: rt.BasePath + "/account/reset",
		Token: token, Email: u.Email, OfferRemoveFactors: u.EmailVerified}
	if !u.EmailVerified {
		d.Notice = "This account's address was never confirmed. Setting a password confirms it and removes any passkey and two-step sign-in on the account, since someone else may have added them."
	}
	return d
}

// ResetPage is GET /account/reset?token=…: the new password's form (the link is used when it is sent).
func (h *Handler) ResetPage(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := h.web.Realm.Current()
	if !h.web.RateAllowed(w, r, rt, "link-ip", clientKey, rt.Config.Auth.RateLimit.PerIP) {
		return
	}
	token := r.URL.Query().Get("token")
	_, u, err := h.resetLink(r.Context(), token)
	if err != nil {
		h.refusedLink(w, r, rt, audit.PasswordReset, linkReset, err)
		return
	}
	h.renderJourney(w, r, rt, http.StatusOK, resetForm(rt, u, token))
}

// Reset is POST /account/reset: the new password under the sign-up policy, then the link is used up,
// the password set, every grant and session of the user ended, and the user told by mail.
func (h *Handler) Reset(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := h.web.Realm.Current()
	ctx := r.Context()
	if !h.web.RateAllowed(w, r, rt, "link-ip", clientKey, rt.Config.Auth.RateLimit.PerIP) {
		return
	}
	if err := r.ParseForm(); err != nil {
		h.web.BadForm(w)
		return
	}
	token, next := r.PostForm.Get("token"), r.PostForm.Get("new_password")
	_, u, err := h.resetLink(ctx, token)
	if err != nil {
		h.refusedLink(w, r, rt, audit.PasswordReset, linkReset, err)
		return
	}
	form := resetForm(rt, u, token)
	if !web.CSRFValid(r, rt) {
		h.audit.Record(ctx, audit.Event{Kind: audit.PasswordReset, Outcome: audit.Failure, Reason: "csrf", User: u.ID})
		form.Error = "This form has expired or was not sent from this page. Please try again."
		h.renderJourney(w, r, rt, http.StatusForbidden, form)
		return
	}
	if weak := passwords.Judge(next, u.Email, u.Name); weak != passwords.OK {
		h.audit.Record(ctx, audit.Event{Kind: audit.PasswordReset, Outcome: audit.Failure, Reason: "weak_password", User: u.ID,
			Detail: map[string]string{"rule": string(weak)}})
		form.Error = "Your password was not changed."
		form.Fields = map[string]string{"new_password": weak.Message()}
		h.renderJourney(w, r, rt, http.StatusBadRequest, form)
		return
	}
	l, err := h.links.Use(ctx, token, linkReset) // of parallel posts of one link, one gets here
	if err != nil {
		h.refusedLink(w, r, rt, audit.PasswordReset, linkReset, err)
		return
	}
	h.resetDone(w, r, rt, u, l, next, r.PostForm.Get("remove_factors") == "1")
}

// resetDone sets the new password of a used link (and so signs the user out everywhere), records it,
// mails the user, and says so. A reset is also an account recovery (D51): for an account whose address
// was never verified — whoever added a passkey or a second factor to it may not be the address's owner,
// who has now shown up through the mail — and for a verified one whose owner asks for it
// (removeFactors), every credential but the new password is removed; the link proves the mailbox, so the
// address is verified too.
func (h *Handler) resetDone(w http.ResponseWriter, r *http.Request, rt *realm.Realm, u *users.User, l *link.Link, next string, removeFactors bool) {
	ctx := r.Context()
	grants, sessions, err := h.accounts.SetPassword(ctx, u, next)
	if err != nil {
		h.web.AccountUnavailable(w, err)
		return
	}
	var removed accounts.Removed
	if !u.EmailVerified || removeFactors {
		if removed, err = h.accounts.RemoveFactors(ctx, u.ID); err != nil {
			h.web.AccountUnavailable(w, err)
			return
		}
	}
	if !u.EmailVerified {
		if err := h.users.SetVerified(ctx, u.ID, u.Email); err != nil && !errors.Is(err, users.ErrNotFound) {
			h.web.AccountUnavailable(w, err)
			return
		}
	}
	detail := map[string]string{"grants": strconv.Itoa(grants), "sessions": strconv.Itoa(sessions)}
	if !u.EmailVerified || removeFactors {
		detail["passkeysRemoved"], detail["secondFactorRemoved"] = strconv.Itoa(removed.Passkeys), strconv.FormatBool(removed.SecondFactor)
	}
	if !u.EmailVerified {
		detail["verified"] = "true"
	}
	h.audit.Record(ctx, audit.Event{Kind: audit.PasswordReset, Outcome: audit.Success, User: u.ID, Client: l.Client, Detail: detail})
	// The browser that set the password through the mail is its owner's: it becomes a known browser of
	// the account (a device cookie of the new sign-out generation), so that the sign-in that follows
	// counts against its own budget, not the unknown browsers' an attacker may have used up (D51).
	if gen, err := h.signOn.Generation(ctx, u.ID, nil); err == nil {
		h.signOn.RememberDevice(w, r, rt, signon.AccountKey(u.Email), gen)
	}
	lang := web.RequestLang(r)
	notice := "Your password was changed. Every browser and app signed in to your account was signed out, and we sent you a mail about it."
	if err := h.accounts.PasswordChanged(ctx, u, lang, r.UserAgent(), removed); err != nil {
		h.log.Warn("password reset: the password-changed mail was not sent", "user", u.ID, "err", err)
		notice = "Your password was changed. Every browser and app signed in to your account was signed out."
	}
	d := page.Journey{Title: "Your password was changed", Notice: notice,
		Lead: "Sign in with your new password.", Links: appLinks(rt.AppClient(l.Client))}
	d.Said = accounts.RemovedIn(lang, removed)
	h.renderJourney(w, r, rt, http.StatusOK, d)
}
