package account

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/directory"
	"github.com/formsservice/formsservice/services/auth/federation"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/upstream"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Linking an account in a directory (a connector of type ldap, D75, D82). A directory makes no trip
// to an upstream, so the account page asks for the directory's username and password itself
// (GET /account/connectors/ldap) and binds as that person (POST): both sides proven, signed in here
// (the session and the CSRF token) and the directory's password. The bind counts against the same
// throttle budgets as a sign-in through the directory (federation.CheckLogin), so the account page is
// no way around them; every outcome is audited with the connector.

// directoryLinkPath is where the step lives (below the issuer).
const directoryLinkPath = "/account/connectors/ldap"

// linkableDirectory is the realm's ldap connector id, when u may link it: its client is made, and u's
// address is verified (as for every link: an unverified account may have been made by someone else).
func (h *Handler) linkableDirectory(rt *realm.Realm, u *users.User, id string) (config.Connector, bool) {
	c, ok := rt.Config.Auth.ConnectorByID(id)
	if !ok || c.Type != config.TypeLDAP || !u.EmailVerified || h.federation == nil {
		return config.Connector{}, false
	}
	if _, err := h.federation.Directory(rt, id); err != nil {
		return config.Connector{}, false
	}
	return c, true
}

// directoryLinkURL is the step of linking the ldap connector id.
func directoryLinkURL(rt *realm.Realm, id string) string {
	return rt.BasePath + directoryLinkPath + "?" + url.Values{"connector": {id}}.Encode()
}

// DirectoryLinkPage is GET /account/connectors/ldap?connector=<id>: the username and password form.
func (h *Handler) DirectoryLinkPage(w http.ResponseWriter, r *http.Request, _ string) {
	rt := h.web.Realm.Current()
	u, _, ok := h.accountUser(w, r, rt)
	if !ok {
		return
	}
	c, ok := h.linkableDirectory(rt, u, r.URL.Query().Get("connector"))
	if !ok {
		http.Redirect(w, r, rt.BasePath+"/account?link_error=refused", http.StatusSeeOther)
		return
	}
	h.renderDirectoryLink(w, r, rt, c, http.StatusOK, "", "")
}

// LinkDirectory is POST /account/connectors/ldap: the directory binds as the person, and their entry
// is linked to the signed-in account. A refusal shows the form again, saying why.
func (h *Handler) LinkDirectory(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := h.web.Realm.Current()
	ctx := r.Context()
	u, _, ok := h.accountForm(w, r, rt)
	if !ok {
		return
	}
	c, ok := h.linkableDirectory(rt, u, r.PostForm.Get("connector"))
	if !ok {
		http.Redirect(w, r, rt.BasePath+"/account?link_error=refused", http.StatusSeeOther)
		return
	}
	username := federation.Username(r.PostForm.Get("username"))
	refused := func(status int, reason string, detail map[string]string, msg string) {
		if detail == nil {
			detail = map[string]string{}
		}
		detail["connector"] = c.ID
		h.audit.Record(ctx, audit.Event{Kind: audit.IdentityLinked, Outcome: audit.Failure, Reason: reason, User: u.ID,
			Client: realm.AccountClientID, Detail: detail})
		h.renderDirectoryLink(w, r, rt, c, status, username, msg)
	}
	checked, err := h.federation.CheckLogin(ctx, rt, h.signOn.Throttle, signon.Limits(rt),
		federation.Login{Connector: c.ID, Username: username, Password: r.PostForm.Get("password"), ClientKey: clientKey})
	switch {
	case errors.Is(err, directory.ErrBadCredentials):
		msg, status := "Wrong username or password.", http.StatusUnauthorized
		if checked.Wait > 0 {
			msg = web.WaitMessage(msg, checked.Wait)
			web.RetryAfter(w, checked.Wait)
		}
		if len(checked.UsedUp) > 0 {
			status = http.StatusTooManyRequests
			h.audit.Record(ctx, signon.LockoutEvent(realm.AccountClientID, u, checked.UsedUp, checked.Wait, "unknown"))
		}
		refused(status, "bad_credentials", nil, msg)
		return
	case err != nil:
		// err never holds the password: the directory's errors name the DN and the server's answer.
		h.log.Warn("account page: a directory could not check a link", "connector", c.ID, "err", err)
		reason, msg := "unavailable", "Linking did not work. Please try again."
		if errors.Is(err, upstream.ErrUnreachable) {
			reason, msg = "unreachable", fmt.Sprintf("%s did not answer. Please try again in a moment.", c.Name)
		} else if errors.Is(err, upstream.ErrRefused) {
			reason = "refused"
		}
		w.Header().Set("Retry-After", "5")
		refused(http.StatusServiceUnavailable, reason, nil, msg)
		return
	case checked.Refusal != nil:
		web.RetryAfter(w, checked.Refusal.Wait)
		lead := "Too many failed sign-ins."
		if !checked.Refusal.Locked {
			lead = "Please wait a moment after a failed sign-in."
		}
		refused(http.StatusTooManyRequests, "throttled", signon.RefusalDetail(checked.Refusal), web.WaitMessage(lead, checked.Refusal.Wait))
		return
	}
	err = h.signOn.Users.LinkIdentity(ctx, u.ID, c.ID, checked.Identity.Subject, checked.Identity.Email, time.Now())
	switch {
	case err == nil:
		h.accountEvent(ctx, audit.IdentityLinked, u, map[string]string{"connector": c.ID})
		http.Redirect(w, r, rt.BasePath+"/account?done=linked", http.StatusSeeOther)
	case errors.Is(err, users.ErrIdentityTaken):
		refused(http.StatusConflict, "taken", nil, fmt.Sprintf("This %s account is linked to another account here.", c.Name))
	case errors.Is(err, users.ErrConnectorLinked):
		refused(http.StatusConflict, "connector_linked", nil, linkErrors["connector_linked"])
	default:
		h.web.AccountUnavailable(w, err)
	}
}

// renderDirectoryLink writes the form of linking the ldap connector c.
func (h *Handler) renderDirectoryLink(w http.ResponseWriter, r *http.Request, rt *realm.Realm, c config.Connector, status int, username, msg string) {
	h.pages.RenderDirectoryLink(w, status, page.DirectoryLink{Frame: page.Frame{CSRF: web.CSRFToken(w, r, rt), Base: rt.BasePath},
		Connector: c.ID, Name: c.Name, Prompt: c.LDAP.UsernamePrompt, Username: username, Error: msg})
}
