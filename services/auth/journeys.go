package auth

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/link"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
)

// What the mailed journeys (verify.go, reset.go) share: their links (package link, one purpose each),
// the form that asks for a mail (an address, CSRF, a throttle, the same answer whatever the address),
// and the pages that refuse a link.

const (
	linkVerify = "verify" // e-mail verification (D29)
	linkReset  = "reset"  // password reset (D30)
)

// renderJourney writes a journey page with the browser's CSRF token.
func (s *Service) renderJourney(w http.ResponseWriter, r *http.Request, rt *runtime, status int, d page.Journey) {
	d.CSRF = csrfToken(w, r, rt)
	s.pages.RenderJourney(page.WithLook(w, s.pageLook(r, rt, journeyClient(rt, d.ClientID))), status, d)
}

// pageLook is how a request's pages look: the platform's branding, with cl's over it (nil: none), in
// the language the request asks for — its authorization request's ui_locales, then Accept-Language.
func (s *Service) pageLook(r *http.Request, rt *runtime, cl *client) page.Look {
	b := rt.cfg.Auth.Branding
	if cl != nil {
		b = b.Over(cl.branding)
	}
	return page.Look{Lang: requestLang(r), Brand: page.Brand(b)}
}

// journeyClient is the registered client id names, or nil (an unknown ID, or the account page's own).
func journeyClient(rt *runtime, id string) *client {
	if cl := rt.clients[id]; cl != nil && !cl.account {
		return cl
	}
	return nil
}

// appLinks link to the application a journey started from: the origin of its first redirect URI (never
// a redirect URI itself: that would be an authorization response without a request).
func appLinks(cl *client) []page.Link {
	if cl == nil {
		return nil
	}
	for _, r := range cl.RedirectURIs {
		if o := originOf(r); o != "" {
			return []page.Link{{Href: o, Text: "Go to " + cl.name}}
		}
	}
	return nil
}

func appName(cl *client) string {
	if cl == nil {
		return ""
	}
	return cl.name
}

// linkURL is the address of a link page with its token.
func linkURL(rt *runtime, path, token string) string {
	return rt.issuer + path + "?" + url.Values{"token": {token}}.Encode()
}

// refusedLink answers a link that cannot be followed, each case with its own words and a way on:
// 400 for a link that is not ours or was altered, 410 for an expired or used one, 503 when the store did
// not answer (never a 500). It records kind's failure.
func (s *Service) refusedLink(w http.ResponseWriter, r *http.Request, rt *runtime, kind audit.Kind, purpose string, err error) {
	if errors.Is(err, link.ErrUnavailable) || isUnavailable(err) {
		s.accountUnavailable(w, err)
		return
	}
	d := page.Journey{}
	status, reason := http.StatusGone, ""
	again := "Ask for a new link below."
	if purpose == linkReset {
		again = "Ask for a new link if you still need to reset your password."
	}
	switch {
	case errors.Is(err, link.ErrExpired):
		reason, d.Title = "expired", "This link has expired"
		d.Error = "The link in your message works for a limited time only. " + again
	case errors.Is(err, link.ErrUsed):
		reason, d.Title = "used", "This link was already used"
		d.Error = "Each link works once. " + again
		if purpose == linkVerify {
			d.Error = "Each link works once: if you followed it before, your address is confirmed and you can sign in. Otherwise ask for a new link below."
		}
	default:
		reason, d.Title, status = "invalid", "This link is not valid", http.StatusBadRequest
		d.Error = "The link is incomplete or was changed. Open it from your message again (copy the whole address if it is split over lines), or ask for a new one."
	}
	s.audit.Record(r.Context(), audit.Event{Kind: kind, Outcome: audit.Failure, Reason: reason})
	if purpose == linkVerify {
		d.Form, d.Action = "resend", rt.basePath+"/account/verify/resend"
	} else {
		d.Links = []page.Link{{Href: rt.basePath + "/account/forgot", Text: "Ask for a new link"}}
	}
	s.renderJourney(w, r, rt, status, d)
}

// mailRequest is the form that asks for a journey's mail (the address to send a verification link to
// again; the address to send a reset link to), checked the same way for both: CSRF, a well-formed
// address, then the journey's throttle per client address and per e-mail address, reserved before the
// account is looked up. It answers the refusals itself and returns ok=false after them; with ok, u is
// the account with the address or nil (the caller tells the person the same either way).
type mailRequest struct {
	email string
	cl    *client
	ret   string // the sign-in page to go back to (reset only)
}

func (s *Service) readMailRequest(w http.ResponseWriter, r *http.Request, rt *runtime, kind audit.Kind, journey, clientKey string, form page.Journey) (mailRequest, *users.User, bool) {
	ctx := r.Context()
	if err := r.ParseForm(); err != nil {
		s.pages.RenderError(w, http.StatusBadRequest, page.Error{Title: "Bad request", Message: "The form could not be read."})
		return mailRequest{}, nil, false
	}
	req := mailRequest{email: truncate(strings.TrimSpace(r.PostForm.Get("email")), 254), cl: journeyClient(rt, r.PostForm.Get("client_id"))}
	if journey == linkReset {
		req.ret = sameSiteReturn(rt, r.PostForm.Get("return"))
	}
	form.Email, form.Return = req.email, req.ret
	if req.cl != nil {
		form.ClientID = req.cl.GetID()
	}
	fail := func(status int, reason string) {
		s.audit.Record(ctx, audit.Event{Kind: kind, Outcome: audit.Failure, Reason: reason, Client: form.ClientID})
		s.renderJourney(w, r, rt, status, form)
	}
	if !csrfValid(r, rt) {
		form.Error = "This form has expired or was not sent from this page. Please try again."
		fail(http.StatusForbidden, "csrf")
		return req, nil, false
	}
	canonical, err := users.NormalizeEmail(req.email)
	if err != nil {
		form.Fields = map[string]string{"email": "Enter an e-mail address like name@example.com."}
		fail(http.StatusBadRequest, "invalid")
		return req, nil, false
	}
	t := rt.cfg.Auth.Throttle
	_, refusal, err := s.throttle.ReserveMail(ctx, journey, canonical, clientKey, throttle.SignupLimits{PerIP: t.MailsPerIP, PerAddress: t.MailsPerAddress, Window: t.MailWindow.D()})
	if err != nil {
		s.accountUnavailable(w, err)
		return req, nil, false
	}
	if refusal != nil {
		w.Header().Set("Retry-After", strconv.Itoa(int(refusal.Wait/time.Second)))
		form.Error = waitMessage("Too many messages were asked for from here or for this address.", refusal.Wait)
		s.audit.Record(ctx, audit.Event{Kind: kind, Outcome: audit.Failure, Reason: "throttled", Client: form.ClientID,
			Detail: map[string]string{"budget": refusal.Budget, "retryAfter": strconv.Itoa(int(refusal.Wait / time.Second))}})
		s.renderJourney(w, r, rt, http.StatusTooManyRequests, form)
		return req, nil, false
	}
	u, err := s.users.ByEmail(ctx, canonical)
	switch {
	case errors.Is(err, users.ErrNotFound):
		return req, nil, true
	case err != nil:
		s.accountUnavailable(w, err)
		return req, nil, false
	}
	return req, u, true
}

// sameSiteReturn keeps a return address only when it is this provider's sign-in page (host-relative):
// anything else would make the forgot page an open redirector.
func sameSiteReturn(rt *runtime, v string) string {
	prefix := rt.basePath + "/oauth2/authorize?"
	if len(v) > 4096 || !strings.HasPrefix(v, prefix) || strings.ContainsAny(v, "\r\n\\") {
		return ""
	}
	return v
}

// sendLater sends a journey's mail after the answer, so that the time of the answer does not tell an
// address with an account from one without (the mail is the only difference, and it goes to the
// address's owner). A failure is logged.
func (s *Service) sendLater(ctx context.Context, what string, send func(context.Context) error) {
	ctx = context.WithoutCancel(ctx)
	go func() {
		if err := send(ctx); err != nil {
			s.log.Warn(what+": the mail was not sent", "err", err)
		}
	}()
}
