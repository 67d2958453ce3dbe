package auth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/link"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/users"
)

// Password reset (docs/auth.md "Password reset", docs/architecture.md D30). "Forgot password?" on the
// sign-in page asks for an address and answers every well-formed one alike; an active account with it
// gets a link that works once, for minutes (resetLinkLifetime). The link's page asks for the new password
// under the sign-up policy; setting it ends every grant and session of the user (SignOutEverywhere, as
// `formsservice users set-password` does) and mails the user that the password changed. A link is bound
// to the password it would replace: once the password changes, by any way, the link is used up.

// passwordTag binds a reset link to the password hash it replaces (a digest; the hash stays in the
// user's record).
func passwordTag(u *users.User) string {
	h := sha256.Sum256([]byte("reset-link\x00" + u.Hash))
	return base64.RawURLEncoding.EncodeToString(h[:16])
}

// forgotPage is GET /account/forgot: the address to send a reset link to. The sign-in page links here
// with its client (so that the mail and the pages name the app) and its own address (to go back to).
func (s *Service) forgotPage(w http.ResponseWriter, r *http.Request, _ string) {
	rt := s.rt()
	q := r.URL.Query()
	d := s.forgotForm(rt)
	d.Return = sameSiteReturn(rt, q.Get("return"))
	if cl := journeyClient(rt, q.Get("client_id")); cl != nil {
		d.ClientID = cl.GetID()
		d.Lead = fmt.Sprintf("Enter the address of your %s account. We will send it a link to choose a new password.", cl.name)
	}
	if d.Return != "" {
		d.Links = []page.Link{{Href: d.Return, Text: "Back to sign-in"}}
	}
	s.renderJourney(w, r, rt, http.StatusOK, d)
}

func (s *Service) forgotForm(rt *runtime) page.Journey {
	return page.Journey{Title: "Reset your password", Form: "forgot", Action: rt.basePath + "/account/forgot",
		Lead: "Enter the address of your account. We will send it a link to choose a new password."}
}

// forgot is POST /account/forgot: the same answer for every well-formed address; an active account with
// it gets the reset link by mail (sent after the answer, so that its time tells nothing either).
func (s *Service) forgot(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := s.rt()
	ctx := r.Context()
	req, u, ok := s.readMailRequest(w, r, rt, audit.ResetRequested, linkReset, clientKey, s.forgotForm(rt))
	if !ok {
		return
	}
	e := audit.Event{Kind: audit.ResetRequested, Outcome: audit.Failure}
	if req.cl != nil {
		e.Client = req.cl.GetID()
	}
	switch {
	case u == nil:
		e.Reason = "unknown_account"
	case u.Disabled:
		e.Reason, e.User = "disabled", u.ID
	default:
		e.Outcome, e.User = audit.Success, u.ID
		valid, lang := rt.cfg.Auth.ResetLinkLifetime.D(), requestLang(r)
		s.sendLater(ctx, "password reset", func(ctx context.Context) error {
			tok, err := s.links.Issue(ctx, link.Link{Purpose: linkReset, User: u.ID, Client: e.Client, Bind: passwordTag(u)}, valid)
			if err != nil {
				return err
			}
			return s.sendLinkMail(ctx, rt, resetMail, lang, u, appName(req.cl), linkURL(rt, "/account/reset", tok), valid)
		})
	}
	s.audit.Record(ctx, e)
	d := page.Journey{Title: "Check your mail", Lead: "Open the link in the message to choose a new password.",
		Notice: fmt.Sprintf("If %s has an account, we have sent it a link to reset the password. It works for %s.", req.email,
			lifetime(rt.cfg.Auth.ResetLinkLifetime.D()))}
	if req.ret != "" {
		d.Links = []page.Link{{Href: req.ret, Text: "Back to sign-in"}}
	}
	s.renderJourney(w, r, rt, http.StatusOK, d)
}

// resetLink checks a reset link without using it up: signed, not expired, not used, its account active
// and its password unchanged since the link was sent.
func (s *Service) resetLink(ctx context.Context, token string) (*link.Link, *users.User, error) {
	l, err := s.links.Peek(ctx, token, linkReset)
	if err != nil {
		return nil, nil, err
	}
	u, err := s.activeUser(ctx, l.User)
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

func (s *Service) resetForm(rt *runtime, u *users.User, token string) page.Journey {
	return page.Journey{Title: "Choose a new password", Lead: "for " + u.Email, Form: "reset", Action: rt.basePath + "/account/reset",
		Token: token, Email: u.Email}
}

// resetPage is GET /account/reset?token=…: the new password's form (the link is used when it is sent).
func (s *Service) resetPage(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := s.rt()
	if !s.rateAllowed(w, r, rt, "link-ip", clientKey, rt.cfg.Auth.RateLimit.PerIP) {
		return
	}
	token := r.URL.Query().Get("token")
	_, u, err := s.resetLink(r.Context(), token)
	if err != nil {
		s.refusedLink(w, r, rt, audit.PasswordReset, linkReset, err)
		return
	}
	s.renderJourney(w, r, rt, http.StatusOK, s.resetForm(rt, u, token))
}

// reset is POST /account/reset: the new password under the sign-up policy, then the link is used up,
// the password set, every grant and session of the user ended, and the user told by mail.
func (s *Service) reset(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := s.rt()
	ctx := r.Context()
	if !s.rateAllowed(w, r, rt, "link-ip", clientKey, rt.cfg.Auth.RateLimit.PerIP) {
		return
	}
	if err := r.ParseForm(); err != nil {
		s.pages.RenderError(w, http.StatusBadRequest, page.Error{Title: "Bad request", Message: "The form could not be read."})
		return
	}
	token, next := r.PostForm.Get("token"), r.PostForm.Get("new_password")
	_, u, err := s.resetLink(ctx, token)
	if err != nil {
		s.refusedLink(w, r, rt, audit.PasswordReset, linkReset, err)
		return
	}
	form := s.resetForm(rt, u, token)
	if !csrfValid(r, rt) {
		s.audit.Record(ctx, audit.Event{Kind: audit.PasswordReset, Outcome: audit.Failure, Reason: "csrf", User: u.ID})
		form.Error = "This form has expired or was not sent from this page. Please try again."
		s.renderJourney(w, r, rt, http.StatusForbidden, form)
		return
	}
	if users.CheckPassword(next) != nil {
		s.audit.Record(ctx, audit.Event{Kind: audit.PasswordReset, Outcome: audit.Failure, Reason: "weak_password", User: u.ID})
		form.Error = "Your password was not changed."
		form.Fields = map[string]string{"new_password": fmt.Sprintf("Use %d to %d characters.", users.MinPasswordLen, users.MaxPasswordLen)}
		s.renderJourney(w, r, rt, http.StatusBadRequest, form)
		return
	}
	l, err := s.links.Use(ctx, token, linkReset) // of parallel posts of one link, one gets here
	if err != nil {
		s.refusedLink(w, r, rt, audit.PasswordReset, linkReset, err)
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
	s.audit.Record(ctx, audit.Event{Kind: audit.PasswordReset, Outcome: audit.Success, User: u.ID, Client: l.Client,
		Detail: map[string]string{"grants": count(grants), "sessions": count(sessions)}})
	notice := "Your password was changed. Every browser and app signed in to your account was signed out, and we sent you a mail about it."
	if err := s.sendPasswordChanged(ctx, rt, u, r); err != nil {
		s.log.Warn("password reset: the password-changed mail was not sent", "user", u.ID, "err", err)
		notice = "Your password was changed. Every browser and app signed in to your account was signed out."
	}
	s.renderJourney(w, r, rt, http.StatusOK, page.Journey{Title: "Your password was changed", Notice: notice,
		Lead: "Sign in with your new password.", Links: appLinks(journeyClient(rt, l.Client))})
}
