package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/link"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/users"
)

// E-mail verification (docs/auth.md "E-mail verification", docs/architecture.md D29). The sign-up's mail
// carries a link; following it sets the account's address verified, and from then on email_verified is
// true in ID tokens and at userinfo. A client with requireVerifiedEmail refuses the sign-in of an
// unverified account, and the page offers to send the link again; so does every refused link's page.
// Asking again is throttled and answered the same whether the address has an account or not.

// verificationLink issues a verification link of u's address, for a sign-up or sign-in at client cl
// (nil for none).
func (s *Service) verificationLink(ctx context.Context, rt *runtime, u *users.User, cl *client) (string, error) {
	l := link.Link{Purpose: linkVerify, User: u.ID, Bind: u.Email}
	if cl != nil {
		l.Client = cl.GetID()
	}
	tok, err := s.links.Issue(ctx, l, rt.cfg.Auth.VerificationLinkLifetime.D())
	if err != nil {
		return "", err
	}
	return linkURL(rt, "/account/verify", tok), nil
}

// verifyEmail is GET /account/verify?token=…: the link from the mail. It verifies the address at once,
// without a form: the link proves that its reader got the mail, which is all verification asks (a mail
// scanner that opens it first verifies the address for its owner, and the owner's click is then answered
// "already used", with a way to sign in).
func (s *Service) verifyEmail(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := s.rt()
	ctx := r.Context()
	if !s.rateAllowed(w, r, rt, "link-ip", clientKey, rt.cfg.Auth.RateLimit.PerIP) {
		return
	}
	l, err := s.links.Use(ctx, r.URL.Query().Get("token"), linkVerify)
	if err != nil {
		s.refusedLink(w, r, rt, audit.EmailVerified, linkVerify, err)
		return
	}
	u, err := s.activeUser(ctx, l.User)
	if err == nil {
		err = s.users.SetVerified(ctx, u.ID, l.Bind)
	}
	if errors.Is(err, users.ErrNotFound) { // deleted, disabled, or no longer at this address
		s.refusedLink(w, r, rt, audit.EmailVerified, linkVerify, link.ErrInvalid)
		return
	}
	if err != nil {
		s.accountUnavailable(w, err)
		return
	}
	cl := journeyClient(rt, l.Client)
	s.audit.Record(ctx, audit.Event{Kind: audit.EmailVerified, Outcome: audit.Success, User: u.ID, Client: l.Client})
	lead := "You can sign in with it now."
	if cl != nil {
		lead = fmt.Sprintf("You can go on to %s and sign in.", cl.name)
	}
	s.renderJourney(w, r, rt, http.StatusOK, page.Journey{Title: "Your e-mail address is confirmed",
		Notice: fmt.Sprintf("%s is confirmed as your address.", u.Email), Lead: lead, Links: appLinks(cl)})
}

// resendVerification is POST /account/verify/resend: the address to send a new verification link to.
// Every well-formed address gets the same answer; only an account that has it and is not yet verified
// gets a mail.
func (s *Service) resendVerification(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := s.rt()
	ctx := r.Context()
	form := page.Journey{Title: "Send the confirmation link again", Form: "resend", Action: rt.basePath + "/account/verify/resend",
		Lead: "Enter the address of your account. We will send it a new link."}
	req, u, ok := s.readMailRequest(w, r, rt, audit.VerificationSent, linkVerify, clientKey, form)
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
		lang := requestLang(r)
		s.sendLater(ctx, "verification", func(ctx context.Context) error {
			href, err := s.verificationLink(ctx, rt, u, req.cl)
			if err != nil {
				return err
			}
			return s.sendLinkMail(ctx, rt, verifyMail, lang, u, appName(req.cl), href, rt.cfg.Auth.VerificationLinkLifetime.D())
		})
	}
	s.audit.Record(ctx, e)
	s.renderJourney(w, r, rt, http.StatusOK, page.Journey{Title: "Check your mail",
		Notice: fmt.Sprintf("If %s has an account that still needs confirming, we have sent it a new link. It works for %s.", req.email,
			lifetime(rt.cfg.Auth.VerificationLinkLifetime.D())),
		Lead: "Open the link in the message to confirm your address.", Links: appLinks(req.cl)})
}

// unverified refuses the sign-in of an account whose address is not verified to a client that requires
// a verified one (requireVerifiedEmail): the sign-in page says so and offers the link again. It reports
// whether it answered.
func (s *Service) unverified(w http.ResponseWriter, r *http.Request, rt *runtime, cl *client, u *users.User) bool {
	if !needsVerification(cl, u) {
		return false
	}
	s.audit.Record(r.Context(), audit.Event{Kind: audit.SignIn, Outcome: audit.Failure, Reason: "unverified", User: u.ID, Client: cl.GetID()})
	s.renderSignIn(w, r, rt, cl, http.StatusForbidden, page.SignIn{Email: u.Email,
		Error:        fmt.Sprintf("Confirm your e-mail address to continue to %s: open the link we sent to %s.", cl.name, u.Email),
		ResendAction: rt.basePath + "/account/verify/resend", ResendClient: cl.GetID()})
	return true
}

// needsVerification: cl requires a verified address and u's is not.
func needsVerification(cl *client, u *users.User) bool {
	return cl != nil && cl.requireVerified && !cl.account && !u.EmailVerified
}

// ErrAlreadyVerified: SendVerification was asked for an account whose address is verified already.
var ErrAlreadyVerified = errors.New("the address is verified already")

// SendVerification mails the account with address email the verification link a sign-up sends (for
// `formsservice users send-verification`, an operator's request: no throttle, no uniform answer). It
// refuses an unknown account (users.ErrNotFound), a disabled one (users.ErrDisabled) and a verified one
// (ErrAlreadyVerified). Without a relay configured nothing is sent and nil returned, as for every auth
// mail: the command checks for a relay first. lang is the mail's language, one of page.Languages
// (the person's, as the operator knows it; English when empty or not one of them).
func (s *Service) SendVerification(ctx context.Context, email, lang string) (*users.User, error) {
	rt := s.rt()
	u, err := s.users.ByEmail(ctx, email)
	switch {
	case err != nil:
		return nil, err
	case u.Disabled:
		return u, users.ErrDisabled
	case u.EmailVerified:
		return u, ErrAlreadyVerified
	}
	href, err := s.verificationLink(ctx, rt, u, nil)
	if err != nil {
		return u, err
	}
	return u, s.sendLinkMail(ctx, rt, verifyMail, page.Match(lang, ""), u, "", href, rt.cfg.Auth.VerificationLinkLifetime.D())
}
