package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/ory/fosite/token/jwt"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/web"
)

// Logout is /oauth2/logout (OpenID Connect RP-Initiated Logout 1.0). With a valid id_token_hint the
// browser is signed out at once; without one the user confirms on a page (a POST with a CSRF token), so
// that another site cannot sign people out with a link. post_logout_redirect_uri must be registered for
// the client; anything else gets an error page, never a redirect.
func (h *Handler) Logout(w http.ResponseWriter, r *http.Request) {
	rt := h.realm()
	ctx := r.Context()
	bad := func(msg string) {
		h.web.Pages.RenderError(w, http.StatusBadRequest, page.Error{Title: "This sign-out link is not valid", Message: msg})
	}
	if err := r.ParseForm(); err != nil {
		bad("The request could not be read.")
		return
	}
	f := r.Form
	for _, p := range []string{"id_token_hint", "post_logout_redirect_uri", "state", "client_id"} {
		if len(f[p]) > 1 {
			bad("The parameter " + p + " was given more than once.")
			return
		}
	}
	clientID, hintValid, ok := h.checkHint(w, r, rt, bad)
	if !ok {
		return
	}
	redirect := f.Get("post_logout_redirect_uri")
	if redirect != "" {
		cl, ok := rt.Clients[clientID]
		if !ok || !cl.PostLogout[redirect] {
			h.web.RefusePage(ctx, w, web.RefusedPostLogoutURI, page.Error{Title: "This sign-out link is not valid",
				Message: "The return address after signing out is not registered for the application."},
				"refused a sign-out: the post_logout_redirect_uri is not one of the client's postLogoutRedirectURIs (compared exactly)",
				web.Fact{Name: "client_id", Value: clientID}, web.Fact{Name: "post_logout_redirect_uri sent", Value: redirect}, web.Fact{Name: "registered post-logout URIs", Value: rt.PostLogoutURIs(clientID)})
			return
		}
	}
	if !hintValid && r.Method != http.MethodPost {
		hidden := map[string]string{}
		for _, p := range []string{"post_logout_redirect_uri", "state", "client_id"} {
			if v := f.Get(p); v != "" {
				hidden[p] = v
			}
		}
		h.web.Pages.RenderLogout(w, page.Logout{Action: rt.BasePath + "/oauth2/logout", CSRF: web.CSRFToken(w, r, rt), Hidden: hidden}, []string{realm.OriginOf(redirect)})
		return
	}
	if !hintValid && !web.CSRFValid(r, rt) {
		h.web.Pages.RenderError(w, http.StatusForbidden, page.Error{Title: "Sign-out not confirmed", Message: "This form has expired or was not sent from this page. Please try again."})
		return
	}
	upstreamLogout := h.upstreamLogoutOf(ctx, r, rt)
	if !h.endBrowserSession(w, r, rt, clientID) {
		return
	}
	web.SetCookie(w, rt, web.SessionCookie, "", -1)
	if redirect != "" {
		u, _ := url.Parse(redirect)
		if st := f.Get("state"); st != "" {
			q := u.Query()
			q.Set("state", st)
			u.RawQuery = q.Encode()
		}
		redirect = u.String()
	}
	// Signed in through a SAML IdP with single logout: the IdP ends its session too, and its answer
	// at our SLO endpoint continues to redirect (D89).
	if upstreamLogout != nil && h.startUpstreamLogout(w, r, rt, upstreamLogout, redirect) {
		return
	}
	h.loggedOut(w, r, redirect)
}

// loggedOut ends a logout: the client's post_logout_redirect_uri (with its state), or our page.
func (h *Handler) loggedOut(w http.ResponseWriter, r *http.Request, redirect string) {
	if redirect == "" {
		h.web.Pages.RenderSignedOut(w)
		return
	}
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, redirect, http.StatusSeeOther)
}

// checkHint checks the request's id_token_hint, if any: an ID token issued here to the client (its
// first audience names the client when the request does not), expired or not. hintValid says the
// browser may be signed out without asking: the hint is this browser's own user's (someone else's
// id_token, an attacker's own, must not sign this browser out without asking). ok is false when the
// request was answered (bad, or 503).
func (h *Handler) checkHint(w http.ResponseWriter, r *http.Request, rt *realm.Realm, bad func(string)) (clientID string, hintValid, ok bool) {
	ctx := r.Context()
	clientID = r.Form.Get("client_id")
	hint := r.Form.Get("id_token_hint")
	if hint == "" {
		return clientID, false, true
	}
	tok, err := h.signer.Decode(ctx, hint)
	var ve *jwt.ValidationError
	if err != nil && !(errors.As(err, &ve) && ve.Errors == jwt.ValidationErrorExpired) {
		bad("The id_token_hint is not an ID token issued here.")
		return "", false, false
	}
	if !isIDToken(tok) {
		bad("The id_token_hint is not an ID token issued here.")
		return "", false, false
	}
	if iss, _ := tok.Claims["iss"].(string); iss != rt.Issuer {
		bad("The id_token_hint was issued by someone else.")
		return "", false, false
	}
	aud := audiences(tok.Claims["aud"])
	if clientID == "" && len(aud) > 0 {
		clientID = aud[0]
	} else if clientID != "" && !slices.Contains(aud, clientID) {
		bad("The id_token_hint was not issued to this client.")
		return "", false, false
	}
	sess, _, err := h.signOn.SignedIn(ctx, r, rt)
	if err != nil {
		h.signOutUnavailable(w)
		return "", false, false
	}
	sub, _ := tok.Claims["sub"].(string)
	return clientID, sess == nil || sess.UserID == sub, true
}

// endBrowserSession ends the browser's sign-in session and revokes every grant started in it: the
// applications signed in through this session can no longer refresh. The grants are revoked before the
// session ends, so that a failure leaves the list for the retry. false: answered (503).
func (h *Handler) endBrowserSession(w http.ResponseWriter, r *http.Request, rt *realm.Realm, clientID string) bool {
	ctx := r.Context()
	token := web.ReadCookie(r, rt, web.SessionCookie)
	if token == "" {
		return true
	}
	families, err := h.signOn.SessionGrants(ctx, rt, token)
	if err == nil {
		err = h.tellRelyingParties(ctx, token, families)
	}
	if err == nil {
		err = h.store.RevokeFamilies(ctx, families)
	}
	var user string
	if err == nil {
		user, _, err = h.signOn.Sessions.End(ctx, token)
	}
	if err != nil {
		h.log.Warn("logout: session store unavailable", "err", err)
		h.signOutUnavailable(w)
		return false
	}
	if len(families) > 0 {
		h.signOn.Revoked("logout", len(families))
	}
	if user != "" {
		h.audit.Record(ctx, audit.Event{Kind: audit.Logout, Outcome: audit.Success, User: user, Client: rt.KnownClient(clientID),
			Detail: map[string]string{"grants": strconv.Itoa(len(families))}})
	}
	return true
}

// tellRelyingParties queues the logout tokens of the session that ends (back-channel logout, D60), for
// the clients of the grants started in it, before anything is revoked: a failure leaves it all to the
// retry. Without a client that hears of logouts it reads nothing.
func (h *Handler) tellRelyingParties(ctx context.Context, token string, families []string) error {
	if !h.backchannel.Enabled() || len(families) == 0 {
		return nil
	}
	sess, err := h.signOn.Sessions.Get(ctx, token)
	if err != nil || sess == nil {
		return err
	}
	return h.backchannel.BeforeSessionEnds(ctx, h.store, sess.UserID, sess.ID, families)
}

func (h *Handler) signOutUnavailable(w http.ResponseWriter) {
	h.web.Pages.RenderError(w, http.StatusServiceUnavailable, page.Error{Title: "Try again", Message: "Signing out is briefly unavailable. Please try again in a moment."})
}

// isIDToken tells an ID token from the other JWTs this provider signs with the same key: access tokens
// carry the RFC 9068 type at+jwt (fosite's default for ID tokens is JWT) and the client_id and scope
// claims, which an ID token never has.
func isIDToken(tok *jwt.Token) bool {
	if typ, _ := tok.Header["typ"].(string); typ != "" && !strings.EqualFold(typ, "JWT") {
		return false
	}
	for _, c := range []string{"client_id", "scp", "scope"} {
		if _, ok := tok.Claims[c]; ok {
			return false
		}
	}
	sub, _ := tok.Claims["sub"].(string)
	return sub != "" && len(audiences(tok.Claims["aud"])) > 0
}

func audiences(v any) []string {
	switch a := v.(type) {
	case string:
		return []string{a}
	case []string:
		return a
	case []any:
		var out []string
		for _, x := range a {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
