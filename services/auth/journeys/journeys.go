// Package journeys is the mailed journeys — sign-up, e-mail verification, password reset — and their
// mails.
package journeys

import (
	"log/slog"
	"net/http"

	"github.com/formsservice/formsservice/services/auth/accounts"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/link"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// What the mailed journeys (verify.go, reset.go) share: their links (package link, one purpose each),
// the form that asks for a mail (an address, CSRF, a throttle, the same answer whatever the address),
// and the pages that refuse a link (links.go).

const (
	linkVerify = accounts.LinkVerify // e-mail verification (D29)
	linkReset  = "reset"             // password reset (D30)
)

// Options are the journeys' dependencies.
type Options struct {
	Web        *web.Kit
	SignOn     *signon.Kit // ActiveUser
	Accounts   *accounts.Ops
	Links      *link.Store
	Users      *users.Store
	Throttle   *throttle.Limiter
	Audit      *audit.Recorder
	SignupMail SignupMail  // nil: the sign-up mails through Mail
	Mail       mail.Sender // services/platform/mail
	Log        *slog.Logger
}

// Handler serves the mailed journeys' pages.
type Handler struct {
	web        *web.Kit
	signOn     *signon.Kit
	accounts   *accounts.Ops
	links      *link.Store
	users      *users.Store
	throttle   *throttle.Limiter
	audit      *audit.Recorder
	signupMail SignupMail
	log        *slog.Logger
}

// New returns the journeys' handler.
func New(o Options) *Handler {
	h := &Handler{web: o.Web, signOn: o.SignOn, accounts: o.Accounts, links: o.Links, users: o.Users, throttle: o.Throttle,
		audit: o.Audit, signupMail: o.SignupMail, log: o.Log}
	if h.signupMail == nil {
		h.signupMail = mailSignup{sender: o.Mail}
	}
	return h
}

// renderJourney writes a journey page with the browser's CSRF token.
func (h *Handler) renderJourney(w http.ResponseWriter, r *http.Request, rt *realm.Realm, status int, d page.Journey) {
	d.CSRF = web.CSRFToken(w, r, rt)
	h.web.Pages.RenderJourney(page.WithLook(w, web.PageLook(r, rt, rt.AppClient(d.ClientID))), status, d)
}

// appLinks link to the application a journey started from: the origin of its first redirect URI (never
// a redirect URI itself: that would be an authorization response without a request).
func appLinks(cl *realm.Client) []page.Link {
	if cl == nil {
		return nil
	}
	for _, r := range cl.RedirectURIs {
		if o := realm.OriginOf(r); o != "" {
			return []page.Link{{Href: o, Text: "Go to " + cl.Name}}
		}
	}
	return nil
}

func appName(cl *realm.Client) string {
	if cl == nil {
		return ""
	}
	return cl.Name
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}
