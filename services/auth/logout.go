package auth

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/ory/fosite/token/jwt"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/page"
)

// logout is /oauth2/logout (OpenID Connect RP-Initiated Logout 1.0). With a valid id_token_hint the
// browser is signed out at once; without one the user confirms on a page (a POST with a CSRF token), so
// that another site cannot sign people out with a link. post_logout_redirect_uri must be registered for
// the client; anything else gets an error page, never a redirect.
func (s *Service) logout(w http.ResponseWriter, r *http.Request) {
	rt := s.rt()
	ctx := r.Context()
	bad := func(msg string) {
		s.pages.RenderError(w, http.StatusBadRequest, page.Error{Title: "This sign-out link is not valid", Message: msg})
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
	clientID := f.Get("client_id")
	hintValid := false
	if hint := f.Get("id_token_hint"); hint != "" {
		tok, err := s.signer.Decode(ctx, hint)
		var ve *jwt.ValidationError
		if err != nil && !(errors.As(err, &ve) && ve.Errors == jwt.ValidationErrorExpired) {
			bad("The id_token_hint is not an ID token issued here.")
			return
		}
		if !isIDToken(tok) {
			bad("The id_token_hint is not an ID token issued here.")
			return
		}
		if iss, _ := tok.Claims["iss"].(string); iss != rt.issuer {
			bad("The id_token_hint was issued by someone else.")
			return
		}
		aud := audiences(tok.Claims["aud"])
		if clientID == "" && len(aud) > 0 {
			clientID = aud[0]
		} else if clientID != "" && !slices.Contains(aud, clientID) {
			bad("The id_token_hint was not issued to this client.")
			return
		}
		// Someone else's id_token (an attacker's own) must not sign this browser out without asking.
		sess, _, err := s.signedIn(ctx, r, rt)
		if err != nil {
			s.pages.RenderError(w, http.StatusServiceUnavailable, page.Error{Title: "Try again", Message: "Signing out is briefly unavailable. Please try again in a moment."})
			return
		}
		sub, _ := tok.Claims["sub"].(string)
		hintValid = sess == nil || sess.UserID == sub
	}
	redirect := f.Get("post_logout_redirect_uri")
	if redirect != "" {
		cl, ok := rt.clients[clientID]
		if !ok || !cl.postLogout[redirect] {
			s.refusePage(ctx, w, refusedPostLogoutURI, page.Error{Title: "This sign-out link is not valid",
				Message: "The return address after signing out is not registered for the application."},
				"refused a sign-out: the post_logout_redirect_uri is not one of the client's postLogoutRedirectURIs (compared exactly)",
				fact{"client_id", clientID}, fact{"post_logout_redirect_uri sent", redirect}, fact{"registered post-logout URIs", rt.postLogoutURIs(clientID)})
			return
		}
	}
	formActions := []string{originOf(redirect)}

	if !hintValid && r.Method != http.MethodPost {
		hidden := map[string]string{}
		for _, p := range []string{"post_logout_redirect_uri", "state", "client_id"} {
			if v := f.Get(p); v != "" {
				hidden[p] = v
			}
		}
		s.pages.RenderLogout(w, page.Logout{Action: rt.basePath + "/oauth2/logout", CSRF: csrfToken(w, r, rt), Hidden: hidden}, formActions)
		return
	}
	if !hintValid && !csrfValid(r, rt) {
		s.pages.RenderError(w, http.StatusForbidden, page.Error{Title: "Sign-out not confirmed", Message: "This form has expired or was not sent from this page. Please try again."})
		return
	}

	if token := readCookie(r, rt, sessionCookie); token != "" {
		// Logout ends the sign-in session and revokes every grant started in it: the applications signed
		// in through this session can no longer refresh.
		// Revoked before the session ends, so that a failure leaves the list for the retry.
		families, err := s.sessionGrants(ctx, rt, token)
		if err == nil {
			err = s.store.RevokeFamilies(ctx, families)
		}
		var user string
		if err == nil {
			user, _, err = s.sessions.End(ctx, token)
		}
		if err != nil {
			s.log.Warn("logout: session store unavailable", "err", err)
			s.pages.RenderError(w, http.StatusServiceUnavailable, page.Error{Title: "Try again", Message: "Signing out is briefly unavailable. Please try again in a moment."})
			return
		}
		if len(families) > 0 {
			s.metrics.revocations.WithLabelValues("logout").Add(float64(len(families)))
		}
		if user != "" {
			s.audit.Record(ctx, audit.Event{Kind: audit.Logout, Outcome: audit.Success, User: user, Client: knownClient(rt, clientID),
				Detail: map[string]string{"grants": count(len(families))}})
		}
	}
	setCookie(w, rt, sessionCookie, "", -1)
	if redirect == "" {
		s.pages.RenderSignedOut(w)
		return
	}
	u, _ := url.Parse(redirect)
	if st := f.Get("state"); st != "" {
		q := u.Query()
		q.Set("state", st)
		u.RawQuery = q.Encode()
	}
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
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

// sessionGrants marks the sign-in session token ended and lists every grant started in it: those the
// user's index holds with the session, whatever their number, and those the session lists itself (at
// most sso.MaxFamiliesPerSession; grants of an earlier version are only there). The mark is set in the
// step that reads the index, so an authorize of this session racing the logout either wrote its code
// before (it is listed) or is refused (store.ErrSessionEnded).
func (s *Service) sessionGrants(ctx context.Context, rt *runtime, token string) ([]string, error) {
	listed, err := s.sessions.Families(ctx, token)
	if err != nil {
		return nil, err
	}
	sess, err := s.sessions.Get(ctx, token)
	if err != nil || sess == nil {
		return listed, err
	}
	indexed, err := s.store.EndSession(ctx, sess.UserID, sess.ID, rt.cfg.Auth.SessionLifetime.D())
	if err != nil {
		return nil, err
	}
	return union(indexed, listed), nil
}

// union is a and the elements of b that a does not hold.
func union(a, b []string) []string {
	seen := make(map[string]bool, len(a))
	for _, x := range a {
		seen[x] = true
	}
	for _, x := range b {
		if !seen[x] {
			seen[x] = true
			a = append(a, x)
		}
	}
	return a
}
