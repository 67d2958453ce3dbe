package oauth

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/federation"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/samlsp"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/sso"
	"github.com/formsservice/formsservice/services/auth/web"
)

// SAML single logout (D89). A person signed in through a SAML IdP who logs out here is sent, once our
// session has ended, to the IdP's SingleLogoutService with our signed LogoutRequest; the IdP's
// LogoutResponse comes back to our SingleLogoutService (GET /oauth2/saml/<id>/slo), named by the
// RelayState that keeps the pending logout (once, 10 minutes), and the logout goes on to the client's
// post_logout_redirect_uri. The IdP's own LogoutRequest at the same endpoint ends the sessions signed
// in as its NameID (and SessionIndex), as logout does, and is answered with our signed LogoutResponse.

// upstreamLogoutOf is the single-logout record of the browser's session (nil: none, or it cannot be
// read now: the logout goes on here alone).
func (h *Handler) upstreamLogoutOf(ctx context.Context, r *http.Request, rt *realm.Realm) *federation.SessionLogout {
	token := web.ReadCookie(r, rt, web.SessionCookie)
	if token == "" || len(token) > 128 || h.federation == nil {
		return nil
	}
	s, err := h.federation.LogoutOf(ctx, sso.ID(token))
	if err != nil {
		h.log.Warn("logout: the single-logout record cannot be read; the IdP's session stays", "err", err)
		return nil
	}
	return s
}

// startUpstreamLogout sends the browser to the IdP with our LogoutRequest for the session's principal;
// false when the connector is gone, has no single logout, or the request cannot be made (logged): the
// logout then ends here as it always did.
func (h *Handler) startUpstreamLogout(w http.ResponseWriter, r *http.Request, rt *realm.Realm, s *federation.SessionLogout, redirect string) bool {
	to, err := h.federation.SingleLogout(r.Context(), rt, s, redirect)
	if err != nil {
		h.log.Warn("logout: no LogoutRequest to the SAML IdP; its session stays", "connector", s.Connector, "err", err)
	}
	if to == "" {
		return false
	}
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, to, http.StatusSeeOther)
	return true
}

// SAMLLogout is GET /oauth2/saml/<id>/slo: the IdP's LogoutResponse to ours, or its own LogoutRequest
// (HTTP-Redirect binding). Anything else, or a message that fails a check, is answered 400 with a page
// (never a redirect to the IdP: an unchecked message earns no answer); 404 for no such connector.
func (h *Handler) SAMLLogout(w http.ResponseWriter, r *http.Request) {
	rt := h.realm()
	sp := h.federation.SAMLConnector(rt, samlSLOConnector(r.URL.Path))
	if sp == nil {
		h.web.Pages.RenderError(w, http.StatusNotFound, page.Error{Title: "This sign-out cannot go on", Message: "There is no SAML connector here by that name."})
		return
	}
	q := r.URL.Query()
	switch {
	case !sp.Config().SAML.SingleLogoutWanted():
		h.web.Pages.RenderError(w, http.StatusNotFound, page.Error{Title: "This sign-out cannot go on", Message: "Single logout is off for this sign-in."})
	case len(q["SAMLResponse"]) == 1 && !q.Has("SAMLRequest"):
		h.samlLogoutResponse(w, r, rt, sp)
	case len(q.Get("RelayState")) > maxRelayState:
		h.sloRefused(w, r, sp, "relay_state", http.StatusBadRequest)
	case len(q["SAMLRequest"]) == 1 && !q.Has("SAMLResponse"):
		h.samlLogoutRequest(w, r, rt, sp)
	default:
		h.sloRefused(w, r, sp, "binding", http.StatusBadRequest)
	}
}

// maxRelayState bounds the IdP's RelayState, which our LogoutResponse echoes (SAML bindings §3.4.3:
// 80 bytes; the library refuses a longer one).
const maxRelayState = 80

// samlSLOConnector is the <id> of …/oauth2/saml/<id>/slo ("" if none).
func samlSLOConnector(path string) string {
	_, rest, ok := strings.Cut(path, "/oauth2/saml/")
	if !ok {
		return ""
	}
	id, tail, ok := strings.Cut(rest, "/")
	if !ok || tail != "slo" {
		return ""
	}
	return id
}

// samlLogoutResponse ends our LogoutRequest's trip: the pending logout its RelayState names (taken
// once), the IdP's answer checked against it, then the client's post_logout_redirect_uri.
func (h *Handler) samlLogoutResponse(w http.ResponseWriter, r *http.Request, rt *realm.Realm, sp *samlsp.Connector) {
	ctx := r.Context()
	id := sp.Config().ID
	pending, err := h.federation.TakeLogout(ctx, r.URL.Query().Get("RelayState"))
	if err != nil {
		h.signOutUnavailable(w)
		return
	}
	if pending == nil || pending.Connector != id {
		h.sloRefused(w, r, sp, "state", http.StatusBadRequest)
		return
	}
	if err := sp.CheckLogoutResponse(ctx, r, pending.RequestID); err != nil {
		h.log.Warn("SAML logout: the IdP's LogoutResponse was refused", "connector", id, "reason", samlsp.Reason(err))
		h.sloRefused(w, r, sp, samlsp.Reason(err), http.StatusBadRequest)
		return
	}
	h.loggedOut(w, r, pending.Redirect)
}

// samlLogoutRequest takes the IdP's LogoutRequest: checked, the sessions signed in as its NameID (with
// one of its SessionIndexes, when it names any) end as at logout, and the IdP gets our LogoutResponse.
func (h *Handler) samlLogoutRequest(w http.ResponseWriter, r *http.Request, rt *realm.Realm, sp *samlsp.Connector) {
	ctx := r.Context()
	id := sp.Config().ID
	req, err := sp.CheckLogoutRequest(ctx, r)
	if errors.Is(err, samlsp.ErrStore) {
		h.signOutUnavailable(w)
		return
	}
	if err != nil {
		h.log.Warn("SAML logout: the IdP's LogoutRequest was refused", "connector", id, "reason", samlsp.Reason(err))
		h.sloRefused(w, r, sp, samlsp.Reason(err), http.StatusBadRequest)
		return
	}
	var indexes []string
	for _, si := range req.AllSessionIndexes() {
		indexes = append(indexes, si.Value)
	}
	ended, err := h.endUpstreamSessions(ctx, rt, id, req.NameID.Value, indexes)
	relay := r.URL.Query().Get("RelayState")
	to, rerr := sp.LogoutResponseURL(ctx, req.ID, relay, err == nil)
	if err != nil {
		h.log.Warn("SAML logout: the sessions could not all be ended", "connector", id, "err", err)
	}
	if rerr != nil {
		h.log.Warn("SAML logout: no LogoutResponse", "connector", id, "err", rerr)
		h.signOutUnavailable(w)
		return
	}
	if ended == 0 {
		h.log.Info("SAML logout: the IdP's LogoutRequest named no session here", "connector", id)
	}
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// endUpstreamSessions ends the sessions signed in through connector as name (those whose SessionIndex
// is one of indexes, when there are any), each as logout ends one: the relying parties told
// (back-channel logout), its grants revoked, the session gone. It returns how many ended.
func (h *Handler) endUpstreamSessions(ctx context.Context, rt *realm.Realm, connector, name string, indexes []string) (int, error) {
	records, err := h.federation.LogoutsNamed(ctx, connector, name)
	if err != nil {
		return 0, err
	}
	ended := 0
	for _, s := range records {
		p, err := samlsp.ParsePrincipal(s.Principal)
		if err != nil || p.NameID != name || (len(indexes) > 0 && !slices.Contains(indexes, p.SessionIndex)) {
			continue
		}
		families, err := h.store.EndSession(ctx, s.User, s.Session, rt.Config.Auth.SessionLifetime.D())
		if err == nil {
			err = h.backchannel.BeforeSessionEnds(ctx, h.store, s.User, s.Session, families)
		}
		if err == nil {
			err = h.store.RevokeFamilies(ctx, families)
		}
		var listed []string
		found := false
		if err == nil {
			listed, found, err = h.signOn.Sessions.EndID(ctx, s.User, s.Session)
		}
		if err == nil {
			err = h.store.RevokeFamilies(ctx, listed)
		}
		if err != nil {
			return ended, err
		}
		if n := len(signon.Union(families, listed)); n > 0 {
			h.signOn.Revoked("logout", n)
		}
		h.federation.ForgetLogout(ctx, connector, name, s.Session)
		if found { // not one ended already (from the account page, say)
			ended++
			h.audit.Record(ctx, audit.Event{Kind: audit.Logout, Outcome: audit.Success, User: s.User,
				Detail: map[string]string{"connector": connector, "initiator": "idp", "grants": strconv.Itoa(len(signon.Union(families, listed)))}})
		}
	}
	return ended, nil
}

// sloRefused answers a message at our SLO endpoint that leads nowhere, audited with its reason.
func (h *Handler) sloRefused(w http.ResponseWriter, r *http.Request, sp *samlsp.Connector, reason string, status int) {
	h.audit.Record(r.Context(), audit.Event{Kind: audit.Logout, Outcome: audit.Failure, Reason: reason,
		Detail: map[string]string{"connector": sp.Config().ID}})
	h.web.Pages.RenderError(w, status, page.Error{Title: "This sign-out cannot go on",
		Message: "The message from your organisation's sign-in could not be checked, has expired or was used already. If you signed out here, you are signed out here."})
}
