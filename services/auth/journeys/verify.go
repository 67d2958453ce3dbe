package journeys

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/authmail"
	"github.com/formsservice/formsservice/services/auth/link"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
)

// E-mail verification (docs/auth.md "E-mail verification", docs/architecture.md D29). The sign-up's mail
// carries a link; following it sets the account's address verified, and from then on email_verified is
// true in ID tokens and at userinfo. A client with requireVerifiedEmail refuses the sign-in of an
// unverified account, and the page offers to send the link again; so does every refused link's page.
// Asking again is throttled and answered the same whether the address has an account or not. The link
// and its mail are package accounts' (VerificationLink, SendVerificationMail).

// VerifyEmail is GET /account/verify?token=…: the link from the mail. It verifies the address at once,
// without a form: the link proves that its reader got the mail, which is all verification asks (a mail
// scanner that opens it first verifies the address for its owner, and the owner's click is then answered
// "already used", with a way to sign in).
func (h *Handler) VerifyEmail(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := h.web.Realm.Current()
	ctx := r.Context()
	if !h.web.RateAllowed(w, r, rt, "link-ip", clientKey, rt.Config.Auth.RateLimit.PerIP) {
		return
	}
	l, err := h.links.Use(ctx, r.URL.Query().Get("token"), linkVerify)
	if err != nil {
		h.refusedLink(w, r, rt, audit.EmailVerified, linkVerify, err)
		return
	}
	u, err := h.signOn.ActiveUser(ctx, l.User)
	if err == nil {
		err = h.users.SetVerified(ctx, u.ID, l.Bind)
	}
	if errors.Is(err, users.ErrNotFound) { // deleted, disabled, or no longer at this address
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
