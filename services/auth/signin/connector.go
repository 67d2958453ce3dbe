package signin

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/formsservice/formsservice/services/auth/acr"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/federation"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/samlsp"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/upstream"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Signing in through an upstream provider (a connector, D58). The page's button (a link to the
// authorization request with connector_id, which a client may send itself) sends the browser to the upstream with the authorization request kept in the
// trip's state (package federation); the upstream's answer comes back to Callback, which finds the
// local account and ends the sign-in exactly as a password does: the second step when the account has
// a factor or the client requires one, then the session and the code.

// brandOf is the look of connector c's button: GitHub's own for a github connector (D64), else the
// page's.
func brandOf(c config.Connector) string {
	if c.Type == config.TypeGitHub {
		return "github"
	}
	return ""
}

// offersConnector reports whether cl's sign-in offers the connector id.
func offersConnector(cl *realm.Client, id string) bool { return slices.Contains(cl.Connectors, id) }

// connectorStart sends the browser to connector id's upstream for the attempt's authorization request.
func (h *Handler) connectorStart(a *attempt, id string) {
	if !offersConnector(a.cl, id) {
		h.renderSignIn(a, http.StatusBadRequest, page.SignIn{Error: "This way of signing in is not offered here."})
		return
	}
	if d, ok := directoryOf(a); ok {
		h.directory.show(d, http.StatusOK, "", "") // a directory asks here, not by a redirect (directory.go)
		return
	}
	extra := map[string]string{}
	if hint := a.ar.GetRequestForm().Get("login_hint"); hint != "" && len(hint) <= 254 {
		extra["login_hint"] = hint
	}
	err := h.federation.Begin(a.w, a.r, a.rt, federation.Pending{Connector: id, Purpose: federation.PurposeSignIn, Query: a.r.URL.RawQuery}, extra)
	if err != nil {
		h.connectorFailed(a, id, err)
	}
}

// Callback is /oauth2/callback: an upstream's answer to a trip Begin started.
func (h *Handler) Callback(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := h.web.Realm.Current()
	ctx := r.Context()
	if !h.web.RateAllowed(w, r, rt, "authorize-ip", clientKey, rt.Config.Auth.RateLimit.PerIP) {
		return
	}
	res, err := h.federation.Finish(w, r, rt)
	if res == nil {
		h.counted(signinConnectorRefused)
		if web.IsUnavailable(err) {
			w.Header().Set("Retry-After", "5")
			h.web.Pages.RenderError(w, http.StatusServiceUnavailable, page.Error{Title: "Signing in is briefly unavailable", Message: "Please try again in a moment."})
			return
		}
		h.audit.Record(ctx, audit.Event{Kind: audit.SignInConnector, Outcome: audit.Failure, Reason: "state"})
		h.web.Pages.RenderError(w, http.StatusBadRequest, page.Error{Title: "This sign-in cannot go on",
			Message: "It has expired, was used already, or was started in another browser. Please start again from the app."})
		return
	}
	if res.Purpose == federation.PurposeLink {
		h.finishLink(w, r, rt, res, err)
		return
	}
	// The authorization request the trip kept, checked again as on the page (the configuration may have
	// changed since): the attempt answers as if the page had posted it.
	areq := r.Clone(ctx)
	u := *r.URL
	u.Path, u.RawQuery = rt.BasePath+"/oauth2/authorize", res.Query
	areq.URL, areq.Form, areq.PostForm = &u, nil, nil
	cl, ok := h.checkClient(ctx, w, rt, areq.URL.Query(), func() bool { return true })
	if !ok {
		return
	}
	a := &attempt{w: w, r: areq, rt: rt, cl: cl, clientKey: clientKey}
	ar, aerr := rt.Provider.NewAuthorizeRequest(ctx, areq)
	if aerr == nil {
		aerr = checkAuthorizeParams(ar, cl)
	}
	a.ar = ar
	if aerr != nil {
		h.authorizeError(a, aerr)
		return
	}
	if err == nil && !offersConnector(cl, res.Connector) {
		err = fmt.Errorf("%w: %q is no longer offered to this client", federation.ErrUnknown, res.Connector)
	}
	if err != nil {
		h.connectorFailed(a, res.Connector, err)
		return
	}
	h.connectorSignedIn(a, res.Conn, res.Identity, []string{acr.FED})
}

// connectorSignedIn ends the sign-in of the upstream account id through connector conn, which vouched
// for it (an OpenID provider's answer, a directory's bind): the local account found by
// federation.Resolve, its groups under the connector's prefix, what its grant keeps for re-checks at
// refresh (D78), then the second step or the session with amr.
func (h *Handler) connectorSignedIn(a *attempt, conn federation.Configured, id *upstream.Identity, amr []string) {
	ctx := a.r.Context()
	c := conn.Config()
	user, how, err := h.federation.Resolve(ctx, h.users, c, id)
	if err != nil {
		h.connectorFailed(a, c.ID, err)
		return
	}
	if synced, err := h.federation.SyncGroups(ctx, h.users, c, user, id.Groups); err != nil {
		// The sign-in goes on with the groups it had: a group bound reached is the operator's to fix.
		h.log.Warn("sign-in through a connector: the upstream's groups were not applied", "connector", c.ID, "user", user.ID, "err", err)
	} else {
		user = synced
	}
	h.counted(signinConnector)
	a.upstream = h.federation.KeepForRecheck(conn, user.ID, id)
	if _, isSAML := conn.(*samlsp.Connector); isSAML && id.Logout != "" {
		if p, err := samlsp.ParsePrincipal(id.Logout); err == nil {
			if a.logout, err = h.federation.SealLogout(user.ID, c.ID, p.NameID, id.Logout); err != nil {
				h.log.Warn("sign-in through a SAML connector: no single logout for it", "connector", c.ID, "err", err)
			}
		}
	}
	detail := map[string]string{"connector": c.ID, "account": how}
	if len(id.AMR) > 0 {
		detail["upstreamAMR"] = strings.Join(id.AMR, " ")
	}
	h.audit.Record(ctx, audit.Event{Kind: audit.SignInConnector, Outcome: audit.Success, User: user.ID, Client: a.cl.GetID(), Detail: detail})
	// An upstream's word proves the browser's owner as a password or a passkey does: it earns the
	// browser its device cookie, and a browser never seen for the account is mailed (D66).
	if gen, err := h.signOn.Generation(ctx, user.ID, nil); err == nil {
		account := signon.AccountKey(user.Email)
		a.newBrowser = h.signOn.KnownDevice(a.r, a.rt, account, gen) == ""
		h.signOn.RememberDevice(a.w, a.r, a.rt, account, gen)
	}
	h.startSession(a, user, amr)
}

// connectorFailed answers a sign-in through connector id that did not find an account to sign in to:
// the sign-in page again, saying why in words the person can act on.
func (h *Handler) connectorFailed(a *attempt, id string, err error) {
	ctx := a.r.Context()
	name := id
	if c, ok := a.rt.Config.Auth.ConnectorByID(id); ok {
		name = c.Name
	}
	reason, status, msg := "refused", http.StatusBadGateway, fmt.Sprintf("Signing in with %s did not work. Please try again, or sign in another way.", name)
	switch {
	case web.IsUnavailable(err):
		h.unavailablePage(a, "", err)
		return
	case errors.Is(err, federation.ErrUnknown):
		reason, status, msg = "unknown_connector", http.StatusBadRequest, "This way of signing in is not offered here."
	case errors.Is(err, upstream.ErrUnreachable):
		reason, status, msg = "unreachable", http.StatusBadGateway, fmt.Sprintf("%s did not answer. Please try again in a moment, or sign in another way.", name)
	case errors.Is(err, federation.ErrUpstream):
		reason, status, msg = "upstream_error", http.StatusUnauthorized, fmt.Sprintf("Signing in with %s was cancelled or refused.", name)
	case errors.Is(err, upstream.ErrNotAllowed):
		reason, status, msg = "not_allowed", http.StatusForbidden, fmt.Sprintf("Your %s account may not sign in here: it is not in an organisation this sign-in lets in.", name)
	case errors.Is(err, federation.ErrNoEmail):
		reason, status, msg = "no_email", http.StatusForbidden, fmt.Sprintf("%s did not tell us your e-mail address, which an account here needs.", name)
	case errors.Is(err, federation.ErrLinkRequired):
		reason, status, msg = "link_required", http.StatusConflict, fmt.Sprintf("An account with your e-mail address exists already. Sign in to it another way, then link %s on your account page.", name)
	case errors.Is(err, federation.ErrDisabled), errors.Is(err, users.ErrDisabled):
		reason, status, msg = "disabled", http.StatusForbidden, "This account is disabled."
	case errors.Is(err, users.ErrIdentityTaken):
		reason, status, msg = "taken", http.StatusConflict, fmt.Sprintf("This %s account is linked to another account here.", name)
	}
	if reason == "refused" || reason == "unreachable" {
		h.log.Warn("sign-in through a connector failed", "connector", id, "err", err)
	}
	h.counted(signinConnectorRefused)
	detail := map[string]string{"connector": id}
	if saml := (samlsp.Refusal{}); errors.As(err, &saml) {
		detail["saml"] = saml.Reason // which of the SAML checks refused the answer (D76)
	}
	h.audit.Record(ctx, audit.Event{Kind: audit.SignInConnector, Outcome: audit.Failure, Reason: reason, Client: a.cl.GetID(), Detail: detail})
	h.renderSignIn(a, status, page.SignIn{Error: msg})
}

// finishLink ends a trip the account page started to link an upstream account to the signed-in user.
func (h *Handler) finishLink(w http.ResponseWriter, r *http.Request, rt *realm.Realm, res *federation.Result, err error) {
	ctx := r.Context()
	back := rt.BasePath + "/account"
	reason := ""
	if err == nil {
		_, user, serr := h.signOn.SignedIn(ctx, r, rt)
		switch {
		case serr != nil:
			err = serr
		case user == nil || user.ID != res.User:
			err = federation.ErrState // signed out, or another person, since the link began
		default:
			err = h.users.LinkIdentity(ctx, user.ID, res.Connector, res.Identity.Subject, res.Identity.Email, h.now())
		}
	}
	switch {
	case err == nil:
		h.audit.Record(ctx, audit.Event{Kind: audit.IdentityLinked, Outcome: audit.Success, User: res.User, Detail: map[string]string{"connector": res.Connector}})
		http.Redirect(w, r, back+"?done=linked", http.StatusSeeOther)
		return
	case errors.Is(err, users.ErrIdentityTaken):
		reason = "taken"
	case errors.Is(err, users.ErrConnectorLinked):
		reason = "connector_linked"
	case errors.Is(err, upstream.ErrUnreachable):
		reason = "unreachable"
	case errors.Is(err, upstream.ErrNotAllowed):
		reason = "not_allowed"
	case errors.Is(err, federation.ErrState):
		reason = "state"
	case web.IsUnavailable(err):
		reason = "unavailable"
	default:
		reason = "refused"
	}
	h.audit.Record(ctx, audit.Event{Kind: audit.IdentityLinked, Outcome: audit.Failure, Reason: reason, User: res.User, Detail: map[string]string{"connector": res.Connector}})
	http.Redirect(w, r, back+"?link_error="+reason, http.StatusSeeOther)
}
