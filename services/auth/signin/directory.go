package signin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/formsservice/formsservice/services/auth/acr"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/directory"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/upstream"
	"github.com/formsservice/formsservice/services/auth/web"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Signing in through a connector of type ldap (D75). Its button leads, like any connector's, to the
// authorization request with connector_id; for a directory that shows this page, whose form posts the
// username and password back to the same request with action=ldap (CSRF-checked as every form here).
// The attempt counts against the same throttle budgets as the password form, keyed by the connector and
// the username (the directory's account is not an address here), before the directory is asked.

// directoryPage shows the username and password page of the ldap connector c.
func (h *Handler) directoryPage(a *attempt, c config.Connector, status int, username, msg string) {
	back := a.r.URL.Query()
	back.Del("connector_id")
	name := a.cl.Name
	if a.cl.Account {
		name = page.T(a.w, a.cl.Name)
	}
	d := page.DirectorySignIn{
		Action: a.rt.BasePath + "/oauth2/authorize?" + a.r.URL.RawQuery, CSRF: web.CSRFToken(a.w, a.r, a.rt), ClientName: name,
		Name: c.Name, Prompt: c.LDAP.UsernamePrompt, Username: username, Error: msg,
		BackURL: a.rt.BasePath + "/oauth2/authorize?" + back.Encode(),
	}
	h.web.Pages.RenderDirectorySignIn(page.WithLook(a.w, web.PageLook(a.r, a.rt, a.cl)), status, d, []string{realm.OriginOf(a.r.URL.Query().Get("redirect_uri"))})
}

// directorySignIn is the page's action=ldap: the throttle, the directory's check, then the sign-in goes
// on as an OpenID connector's does (connectorSignedIn).
func (h *Handler) directorySignIn(a *attempt) {
	ctx := a.r.Context()
	id := a.ar.GetRequestForm().Get("connector_id")
	c, ok := a.rt.Config.Auth.ConnectorByID(id)
	if !ok || c.Type != config.TypeLDAP || !offersConnector(a.cl, id) {
		h.renderSignIn(a, http.StatusBadRequest, page.SignIn{Error: "This way of signing in is not offered here."})
		return
	}
	username := strings.TrimSpace(a.r.PostForm.Get("username"))
	if len(username) > directory.MaxUsername {
		username = username[:directory.MaxUsername]
	}
	// The budgets of an unknown browser: a device cookie names an address, which a directory's username
	// is not.
	attempt := throttle.Attempt{Account: "ldap:" + c.ID + ":" + strings.ToLower(username), IP: a.clientKey}
	res, refusal, err := h.throttle.Reserve(ctx, attempt, signon.Limits(a.rt))
	if err != nil {
		h.directoryUnavailable(a, c, username, err)
		return
	}
	if refusal != nil {
		h.counted(signinThrottled)
		h.audit.Record(ctx, audit.Event{Kind: audit.SignInConnector, Outcome: audit.Failure, Reason: "throttled", Client: a.cl.GetID(),
			Detail: map[string]string{"connector": c.ID, "budget": refusal.Budget}})
		web.RetryAfter(a.w, refusal.Wait)
		lead := "Too many failed sign-ins."
		if !refusal.Locked {
			lead = "Please wait a moment after a failed sign-in."
		}
		h.directoryPage(a, c, http.StatusTooManyRequests, username, web.WaitMessage(lead, refusal.Wait))
		return
	}
	dir, err := h.federation.Directory(a.rt, c.ID)
	var ident *upstream.Identity
	if err == nil {
		ident, err = dir.Authenticate(ctx, username, a.r.PostForm.Get("password"))
	}
	switch {
	case errors.Is(err, directory.ErrBadCredentials):
		h.directoryWrong(a, c, username, res)
		return
	case err != nil:
		res.Release(context.WithoutCancel(ctx))
		h.directoryUnavailable(a, c, username, err)
		return
	}
	if err := res.Succeeded(ctx); err != nil {
		h.log.Warn("sign-in throttle: a success was not recorded", "err", err)
	}
	h.connectorSignedIn(a, dir, ident, []string{acr.FED, acr.PWD})
}

// directoryWrong answers a username or password the directory refused (one message for both).
func (h *Handler) directoryWrong(a *attempt, c config.Connector, username string, res *throttle.Reservation) {
	ctx := a.r.Context()
	h.counted(signinBadCredentials)
	msg, status := "Wrong username or password.", http.StatusUnauthorized
	wait, usedUp, err := res.Failed(ctx)
	if err != nil {
		h.log.Warn("sign-in throttle: a failure's delay was not recorded", "err", err)
	}
	if wait > 0 {
		msg = web.WaitMessage(msg, wait)
		web.RetryAfter(a.w, wait)
	}
	if len(usedUp) > 0 {
		status = http.StatusTooManyRequests
		h.audit.Record(ctx, signon.LockoutEvent(a.cl.GetID(), nil, usedUp, wait, "unknown"))
	}
	h.audit.Record(ctx, audit.Event{Kind: audit.SignInConnector, Outcome: audit.Failure, Reason: "bad_credentials", Client: a.cl.GetID(),
		Detail: map[string]string{"connector": c.ID}})
	h.directoryPage(a, c, status, username, msg)
}

// directoryUnavailable answers a sign-in the directory (or our store) could not check: 503, try again.
func (h *Handler) directoryUnavailable(a *attempt, c config.Connector, username string, err error) {
	reason, msg := "unavailable", "Signing in is briefly unavailable. Please try again in a moment."
	switch {
	case errors.Is(err, upstream.ErrUnreachable):
		reason, msg = "unreachable", fmt.Sprintf("%s did not answer. Please try again in a moment, or sign in another way.", c.Name)
	case errors.Is(err, upstream.ErrRefused):
		reason, msg = "refused", fmt.Sprintf("Signing in with %s did not work. Please try again, or sign in another way.", c.Name)
	}
	// err never holds the password: the directory's errors name the DN and the server's answer.
	h.log.Warn("sign-in through a directory failed", "connector", c.ID, "err", err)
	h.counted(signinConnectorRefused)
	h.audit.Record(a.r.Context(), audit.Event{Kind: audit.SignInConnector, Outcome: audit.Failure, Reason: reason, Client: a.cl.GetID(),
		Detail: map[string]string{"connector": c.ID}})
	a.w.Header().Set("Retry-After", "5")
	h.directoryPage(a, c, http.StatusServiceUnavailable, username, msg)
}
