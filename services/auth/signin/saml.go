package signin

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/federation"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/samlsp"
	"github.com/formsservice/formsservice/services/auth/web"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Signing in through a SAML 2.0 identity provider (a connector of type saml, D76). The button starts
// the trip as every connector's does (an AuthnRequest by HTTP-Redirect); the IdP posts its answer to
// the ACS (SAMLEndpoints.ACS), a cross-site POST that carries no SameSite=Lax cookie of ours. So the ACS checks the
// answer against the trip its RelayState names, keeps the outcome, and sends the browser on (303) to
// /oauth2/callback: a top-level GET, which carries the fs_fed cookie; there the sign-in goes on
// exactly as an OpenID connector's, and another browser's answer stops.

// SAMLEndpoints are the two routes of SAML connectors, with only what they use: the web kit (realm,
// rate limit, pages), the federation kit that checks the answers, the audit trail and the sign-in
// counter. The sign-in itself goes on in Handler.Callback.
type SAMLEndpoints struct {
	web        *web.Kit
	federation *federation.Kit
	audit      *audit.Recorder
	log        *slog.Logger
	counted    func(result string)
}

// SAML is h's SAML endpoints.
func (h *Handler) SAML() *SAMLEndpoints {
	return &SAMLEndpoints{web: h.web, federation: h.federation, audit: h.audit, log: h.log, counted: h.counted}
}

// samlConnectorID is the :connector element of a /oauth2/saml/<id>/… path ("" if none).
func samlConnectorID(path, last string) string {
	_, rest, ok := strings.Cut(path, "/oauth2/saml/")
	if !ok {
		return ""
	}
	id, tail, ok := strings.Cut(rest, "/")
	if !ok || tail != last {
		return ""
	}
	return id
}

// connector is the realm's SAML connector named in the path, or nil (answered: 404).
func (h *SAMLEndpoints) connector(w http.ResponseWriter, r *http.Request, last string) *samlsp.Connector {
	rt := h.web.Realm.Current()
	id := samlConnectorID(r.URL.Path, last)
	if c, ok := rt.Config.Auth.ConnectorByID(id); ok && c.Type == config.TypeSAML {
		if conn, err := h.federation.Connector(rt, id); err == nil {
			if sp, ok := conn.(*samlsp.Connector); ok {
				return sp
			}
		}
	}
	h.web.Pages.RenderError(w, http.StatusNotFound, page.Error{Title: "This sign-in cannot go on", Message: "There is no SAML connector here by that name."})
	return nil
}

// Metadata is GET /oauth2/saml/<id>/metadata: our SP's metadata for the IdP (entity ID, ACS URL,
// our certificate). Public: it holds nothing secret.
func (h *SAMLEndpoints) Metadata(w http.ResponseWriter, r *http.Request) {
	sp := h.connector(w, r, "metadata")
	if sp == nil {
		return
	}
	b, err := sp.Metadata()
	if err != nil {
		h.log.Error("SAML metadata", "connector", sp.Config().ID, "err", err)
		h.web.Pages.RenderError(w, http.StatusServiceUnavailable, page.Error{Title: "Signing in is briefly unavailable", Message: "Please try again in a moment."})
		return
	}
	w.Header().Set("Content-Type", "application/samlmetadata+xml")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_, _ = w.Write(b)
}

// ACS is POST /oauth2/saml/<id>/acs: the IdP's answer (HTTP-POST binding). It answers with the
// redirect to the callback, or a page saying why the sign-in cannot go on.
func (h *SAMLEndpoints) ACS(w http.ResponseWriter, r *http.Request, clientKey string) {
	rt := h.web.Realm.Current()
	if !h.web.RateAllowed(w, r, rt, "authorize-ip", clientKey, rt.Config.Auth.RateLimit.PerIP) {
		return
	}
	sp := h.connector(w, r, "acs")
	if sp == nil {
		return
	}
	id := sp.Config().ID
	if r.ParseForm() != nil {
		h.refused(w, r, id, "malformed", http.StatusBadRequest)
		return
	}
	to, err := h.federation.AcceptSAML(r, rt, id)
	switch {
	case err == nil:
		http.Redirect(w, r, to, http.StatusSeeOther)
	case web.IsUnavailable(err):
		h.counted(signinConnectorRefused)
		w.Header().Set("Retry-After", "5")
		h.web.Pages.RenderError(w, http.StatusServiceUnavailable, page.Error{Title: "Signing in is briefly unavailable", Message: "Please try again in a moment."})
	case errors.Is(err, federation.ErrIdPInitiated):
		h.refused(w, r, id, "idp_initiated", http.StatusBadRequest)
	case errors.Is(err, samlsp.ErrAnswered):
		h.refused(w, r, id, "answered", http.StatusBadRequest)
	default: // federation.ErrState, ErrUnknown
		h.refused(w, r, id, "state", http.StatusBadRequest)
	}
}

// refused answers an ACS post that leads to no sign-in here.
func (h *SAMLEndpoints) refused(w http.ResponseWriter, r *http.Request, id, reason string, status int) {
	h.counted(signinConnectorRefused)
	h.audit.Record(r.Context(), audit.Event{Kind: audit.SignInConnector, Outcome: audit.Failure, Reason: reason, Detail: map[string]string{"connector": id}})
	e := page.Error{Title: "This sign-in cannot go on",
		Message: "It has expired, was used already, or was started in another browser. Please start again from the app."}
	if reason == "idp_initiated" {
		e = page.Error{Title: "Please start signing in from the app",
			Message: "Signing in here must start from the app you want to use, not from your organisation's portal. Open the app and choose its sign-in button."}
	}
	h.web.Pages.RenderError(w, status, e)
}
