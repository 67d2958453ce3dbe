package oauth

import (
	"errors"
	"net/http"
	"slices"

	"github.com/ory/fosite"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/bearer"
	"github.com/formsservice/formsservice/services/auth/claims"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/web"
)

// Revoke is /oauth2/revoke (RFC 7009): revoking any token of a grant revokes the whole grant.
func (h *Handler) Revoke(w http.ResponseWriter, r *http.Request) {
	rt := h.realm()
	err := rt.Provider.NewRevocationRequest(r.Context(), r)
	if err == nil {
		h.signOn.Revoked("revoke", 1)
		h.revoked(r.Context(), callerID(r), r.PostForm.Get("token"))
	} else if web.IsUnavailable(err) {
		err = fosite.ErrTemporarilyUnavailable
	}
	rt.Provider.WriteRevocationResponse(r.Context(), w, err)
}

// Introspect is /oauth2/introspect (RFC 7662) for resource servers (a confidential client). A token of a user who no longer exists is inactive.
func (h *Handler) Introspect(w http.ResponseWriter, r *http.Request) {
	rt := h.realm()
	ctx := r.Context()
	// Only a resource server may introspect: a confidential client authenticated with HTTP Basic (fosite
	// checks the secret). fosite would also take any access token as the caller's credential (a bearer
	// header, or access_token in the form), which would let every user's app probe every token.
	_ = r.ParseForm()
	id, _, basic := r.BasicAuth()
	if cl, ok := rt.Clients[id]; !basic || !ok || cl.IsPublic() || r.Form.Has("access_token") {
		h.audit.Record(ctx, audit.Event{Kind: audit.Introspection, Outcome: audit.Failure, Reason: "unauthorized", Client: rt.KnownClient(id)})
		w.Header().Set("WWW-Authenticate", `Basic realm="`+rt.Issuer+`"`)
		rt.Provider.WriteIntrospectionError(ctx, w, fosite.ErrRequestUnauthorized.WithHint("Introspection needs a confidential client's credentials (HTTP Basic)."))
		return
	}
	resp, err := rt.Provider.NewIntrospectionRequest(ctx, r, claims.NewSession())
	if err != nil {
		switch {
		case web.IsUnavailable(err):
			err = fosite.ErrTemporarilyUnavailable
		case errors.Is(err, fosite.ErrInactiveToken):
			h.audit.Record(ctx, audit.Event{Kind: audit.Introspection, Outcome: audit.Failure, Reason: "inactive", Client: id})
		default: // the caller's credentials
			h.audit.Record(ctx, audit.Event{Kind: audit.Introspection, Outcome: audit.Failure, Reason: "unauthorized", Client: id})
		}
		rt.Provider.WriteIntrospectionError(ctx, w, err)
		return
	}
	inactive := audit.Event{Kind: audit.Introspection, Outcome: audit.Failure, Reason: "inactive", Client: id}
	if !resp.IsActive() {
		h.audit.Record(ctx, inactive)
		rt.Provider.WriteIntrospectionResponse(ctx, w, resp)
		return
	}
	ar := resp.GetAccessRequester()
	if !disclosedTo(rt.Clients[id], resp.GetTokenUse(), ar) {
		inactive.Reason, inactive.Detail = "not_for_caller", map[string]string{"tokenClient": ar.GetClient().GetID()}
		h.audit.Record(ctx, inactive)
		web.WriteJSON(w, http.StatusOK, map[string]bool{"active": false})
		return
	}
	if _, err := bearer.Owner(ctx, rt, h.users, ar); err != nil { // a user gone, or a machine client no more
		if web.IsUnavailable(err) {
			rt.Provider.WriteIntrospectionError(ctx, w, fosite.ErrTemporarilyUnavailable)
			return
		}
		inactive.User, inactive.Grant = ar.GetSession().GetSubject(), ar.GetID()
		h.audit.Record(ctx, inactive)
		web.WriteJSON(w, http.StatusOK, map[string]bool{"active": false})
		return
	}
	// Client is the resource server that asked; the token's own client is in detail.
	h.audit.Record(ctx, audit.Event{Kind: audit.Introspection, Outcome: audit.Success, Client: id, User: ar.GetSession().GetSubject(),
		Grant: ar.GetID(), Detail: map[string]string{"tokenClient": ar.GetClient().GetID()}})
	rt.Provider.WriteIntrospectionResponse(ctx, w, resp)
}

// disclosedTo says whether the resource server caller may learn about a token: an access token whose aud
// names it (its client ID or one of its resources), or a token of its own (a confidential client that
// introspects its own refresh token). Any other token introspects as inactive, as RFC 7662 (2.2, 4)
// lets the server decide: before, any confidential client could read any token, other clients' refresh
// tokens included, and learn whose they were.
func disclosedTo(caller *realm.Client, use fosite.TokenUse, ar fosite.Requester) bool {
	if ar.GetClient().GetID() == caller.GetID() {
		return true
	}
	if use != fosite.AccessToken {
		return false
	}
	for _, a := range ar.GetGrantedAudience() {
		if a == caller.GetID() || slices.Contains(caller.Resources, a) {
			return true
		}
	}
	return false
}

// Userinfo is /oauth2/userinfo (OpenID Connect Core 5.3): the claims of the access token's user that its
// scopes allow.
func (h *Handler) Userinfo(w http.ResponseWriter, r *http.Request) {
	rt := h.realm()
	ctx := r.Context()
	deny := func(status int, code, desc string) {
		w.Header().Set("WWW-Authenticate", `Bearer error="`+code+`", error_description="`+desc+`"`)
		web.WriteJSON(w, status, map[string]string{"error": code, "error_description": desc})
	}
	// fail answers a lookup that failed: 503 when the store could not answer, else an invalid token.
	fail := func(err error) {
		if web.IsUnavailable(err) {
			w.Header().Set("Retry-After", "5")
			web.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "temporarily_unavailable"})
			return
		}
		deny(http.StatusUnauthorized, "invalid_token", "The access token is not valid.")
	}
	if r.URL.Query().Has("access_token") {
		// RFC 9700 4.3.2 / RFC 6750 2.3: a token in the URL leaks into logs, history and Referer.
		deny(http.StatusBadRequest, "invalid_request", "Send the access token in the Authorization header, not in the URL.")
		return
	}
	token := fosite.AccessTokenFromRequest(r)
	if token == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+rt.Issuer+`"`)
		web.WriteJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_token", "error_description": "An access token is required."})
		return
	}
	// Only a live access token of a user is a bearer credential here (bearer.Live: never a refresh token
	// or an ID token, RFC 6750, RFC 9700 4.14; a client's own token has no user and no openid scope).
	ar, u, err := bearer.Live(ctx, rt, h.users, token)
	if err != nil {
		fail(err)
		return
	}
	if !ar.GetGrantedScopes().Has("openid") || u == nil {
		deny(http.StatusForbidden, "insufficient_scope", "The access token lacks the openid scope.")
		return
	}
	claims := claims.Identity(u, ar.GetGrantedScopes())
	claims["sub"] = u.ID
	w.Header().Set("Cache-Control", "no-store")
	web.WriteJSON(w, http.StatusOK, claims)
}

// callerID is the client a token or revocation request names: HTTP Basic's user, else client_id in
// the form (fosite has authenticated it by the time this is read).
func callerID(r *http.Request) string {
	if id, _, ok := r.BasicAuth(); ok {
		return id
	}
	return r.PostForm.Get("client_id")
}
