package account

import (
	"errors"
	"net/http"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/authmail"
	"github.com/formsservice/formsservice/services/auth/federation"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Linked accounts at upstream providers (D58): the account page lists them with a button that removes
// each, and offers every connector not linked yet (an ldap connector through its own form: directory.go). Linking proves both sides: the person is signed in
// here (the form's session and CSRF token) and signs in at the upstream, whose answer comes back to
// /oauth2/callback (package signin) for the same user. An account whose address is not verified links
// nothing (D51: it may have been made by someone else in advance).

// linkErrors are the account page's words for a link that did not happen (?link_error=).
var linkErrors = map[string]string{
	"taken":            "That account at the provider is linked to another account here.",
	"connector_linked": "An account at that provider is linked already: remove it first.",
	"refused":          "Linking did not work. Please try again.",
	"unreachable":      "Linking did not work. Please try again.",
	"not_allowed":      "That account at the provider may not sign in here.",
	"state":            "Linking did not work. Please try again.",
	"unavailable":      "Linking did not work. Please try again.",
}

// identities fills the page's linked accounts and the connectors that may be linked.
func (h *Handler) identities(r *http.Request, rt *realm.Realm, u *users.User, d *page.Account) error {
	if len(rt.Config.Auth.Connectors) == 0 || h.federation == nil {
		return nil
	}
	ctx := r.Context()
	ids, err := h.signOn.Users.Identities(ctx, u.ID)
	if err != nil {
		return err
	}
	linked := map[string]bool{}
	for _, id := range ids {
		linked[id.Connector] = true
		name := id.Connector
		if c, ok := rt.Config.Auth.ConnectorByID(id.Connector); ok {
			name = c.Name
		}
		d.Identities = append(d.Identities, page.IdentityRow{Connector: id.Connector, Name: name, Email: id.Email, Linked: authmail.When(id.Linked)})
	}
	if !u.EmailVerified {
		return nil
	}
	for _, c := range rt.Config.Auth.Connectors {
		if linked[c.ID] {
			continue
		}
		if c.Type == config.TypeLDAP { // no trip: the account page asks for the directory's password (directory.go)
			if _, ok := h.linkableDirectory(rt, u, c.ID); ok {
				d.Linkable = append(d.Linkable, page.Connector{ID: c.ID, Name: c.Name, URL: directoryLinkURL(rt, c.ID)})
			}
			continue
		}
		conn, err := h.federation.Connector(rt, c.ID)
		if err != nil {
			continue
		}
		origin, err := conn.AuthOrigin(ctx)
		if err != nil {
			h.log.Warn("account page: a connector is not offered for linking: its provider did not answer", "connector", c.ID, "err", err)
			continue
		}
		d.Linkable = append(d.Linkable, page.Connector{ID: c.ID, Name: c.Name})
		d.FormActions = append(d.FormActions, origin)
	}
	return nil
}

// LinkIdentity is POST /account/connectors/link: to the upstream, to come back linked.
func (h *Handler) LinkIdentity(w http.ResponseWriter, r *http.Request, _ string) {
	rt := h.web.Realm.Current()
	u, _, ok := h.accountForm(w, r, rt)
	if !ok {
		return
	}
	id := r.PostForm.Get("connector")
	c, known := rt.Config.Auth.ConnectorByID(id)
	if !known || !u.EmailVerified {
		http.Redirect(w, r, rt.BasePath+"/account?link_error=refused", http.StatusSeeOther)
		return
	}
	if c.Type == config.TypeLDAP {
		http.Redirect(w, r, directoryLinkURL(rt, id), http.StatusSeeOther) // its form, not a trip
		return
	}
	err := h.federation.Begin(w, r, rt, federation.Pending{Connector: id, Purpose: federation.PurposeLink, User: u.ID}, nil)
	if err != nil {
		h.log.Warn("account page: a link could not start", "connector", id, "err", err)
		h.audit.Record(r.Context(), audit.Event{Kind: audit.IdentityLinked, Outcome: audit.Failure, Reason: "unreachable", User: u.ID,
			Client: realm.AccountClientID, Detail: map[string]string{"connector": id}})
		http.Redirect(w, r, rt.BasePath+"/account?link_error=unreachable", http.StatusSeeOther)
	}
}

// UnlinkIdentity is POST /account/connectors/unlink: the linked account at the connector removed.
func (h *Handler) UnlinkIdentity(w http.ResponseWriter, r *http.Request, _ string) {
	rt := h.web.Realm.Current()
	ctx := r.Context()
	u, _, ok := h.accountForm(w, r, rt)
	if !ok {
		return
	}
	id := r.PostForm.Get("connector")
	_, err := h.signOn.Users.Unlink(ctx, u.ID, id)
	switch {
	case errors.Is(err, users.ErrNotFound):
		h.audit.Record(ctx, audit.Event{Kind: audit.IdentityUnlinked, Outcome: audit.Failure, Reason: "not_found", User: u.ID,
			Client: realm.AccountClientID, Detail: map[string]string{"connector": id}})
	case err != nil:
		h.web.AccountUnavailable(w, err)
		return
	default:
		h.accountEvent(ctx, audit.IdentityUnlinked, u, map[string]string{"connector": id})
	}
	http.Redirect(w, r, rt.BasePath+"/account?done=unlinked", http.StatusSeeOther)
}
