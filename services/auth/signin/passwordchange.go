package signin

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/ory/fosite"

	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/web"
)

// askPasswordChange answers a sign-in whose password fails the rules for new passwords (set before
// them, D54): instead of the redirect back to the client, a page that asks for a new password, with the
// way to the account page's password form and, to skip it this time, the client's redirect itself (the
// code is granted already; it keeps its usual lifetime). The account page asks too, for as long as the
// password is not changed (account.go). A redirect to a scheme a page may not link to (an app's own
// scheme) goes as it is: the account page asks there.
func (h *Handler) askPasswordChange(a *attempt, resp fosite.AuthorizeResponder) {
	held := &heldRedirect{ResponseWriter: a.w}
	a.rt.Provider.WriteAuthorizeResponse(a.r.Context(), withIssuer(held, a.rt), a.ar, resp)
	if held.location == "" {
		return // not a redirect: written as it was
	}
	if u, err := url.Parse(held.location); err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		a.w.Header().Set("Location", held.location)
		a.w.WriteHeader(held.status)
		return
	}
	h.web.Pages.RenderJourney(page.WithLook(a.w, web.PageLook(a.r, a.rt, a.cl)), http.StatusOK, page.Journey{
		Title:  "Please choose a new password",
		Notice: "Your password does not meet our rules for passwords: at least 12 characters, not known from data breaches, not easy to guess. It still works, but please replace it now.",
		Links: []page.Link{
			{Href: a.rt.BasePath + "/account#password-title", Text: "Choose a new password now"},
			{Href: held.location, Text: fmt.Sprintf("Not now: continue to %s", a.cl.Name)},
		},
	})
}

// heldRedirect keeps a redirect fosite writes (its Location and status) instead of sending it.
type heldRedirect struct {
	http.ResponseWriter
	location string
	status   int
}

func (w *heldRedirect) WriteHeader(code int) {
	if loc := w.Header().Get("Location"); loc != "" && (code == http.StatusSeeOther || code == http.StatusFound) {
		w.location, w.status = loc, code
		w.Header().Del("Location")
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *heldRedirect) Write(b []byte) (int, error) {
	if w.location != "" {
		return len(b), nil // a redirect's body
	}
	return w.ResponseWriter.Write(b)
}
