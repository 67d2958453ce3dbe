package auth

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/ory/fosite"
)

// The account page signs people in through the hosted page, as a client would: /account without a
// session sends the browser to /oauth2/authorize for the provider's own client accountClientID, so the
// sign-in (password, second step, throttles, audit) is exactly the one every app gets. Once the session
// is there, issueCode answers that client with no code: a 303 back to the account page the person asked
// for (carried in state), so no grant is made and no token exists for it.

// accountClientID is the provider's own client; a configured client may not take the ID.
const accountClientID = "formsservice-account"

// addAccountClient registers the account page's client: public, PKCE, redirect URI the account page.
func addAccountClient(rt *runtime) error {
	if _, taken := rt.clients[accountClientID]; taken {
		return fmt.Errorf("auth.clients: the client ID %q is the account page's own", accountClientID)
	}
	rt.clients[accountClientID] = &client{
		DefaultClient: &fosite.DefaultClient{
			ID:            accountClientID,
			RedirectURIs:  []string{rt.issuer + "/account"},
			GrantTypes:    []string{"authorization_code"},
			ResponseTypes: []string{"code"},
			Scopes:        []string{"openid"},
			Audience:      []string{accountClientID},
			Public:        true,
		},
		name:       "your account",
		postLogout: map[string]bool{}, redirectOrigins: map[string]bool{},
		account: true,
	}
	return nil
}

// accountSignIn sends the browser to the hosted sign-in page, to come back to back (a path under
// /account) once signed in.
func (s *Service) accountSignIn(w http.ResponseWriter, r *http.Request, rt *runtime, back string) {
	if !accountPath(rt, back) {
		back = rt.basePath + "/account"
	}
	verifier := randomToken() // never redeemed: the account client gets no code
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{
		"client_id":             {accountClientID},
		"redirect_uri":          {rt.issuer + "/account"},
		"response_type":         {"code"},
		"scope":                 {"openid"},
		"state":                 {back},
		"code_challenge":        {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"},
	}
	http.Redirect(w, r, rt.basePath+"/oauth2/authorize?"+q.Encode(), http.StatusSeeOther)
}

// accountPath accepts a path of the account page (what state carries back): below the issuer's path,
// /account or under it, no scheme or host, nothing a browser would read as another origin.
func accountPath(rt *runtime, p string) bool {
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || strings.Contains(p, "\\") || strings.Contains(p, "//") {
		return false
	}
	rest, ok := strings.CutPrefix(u.Path, rt.basePath+"/account")
	return ok && (rest == "" || strings.HasPrefix(rest, "/")) && !strings.Contains(u.Path, "/..") && len(p) <= 2048
}

// answerAccountClient ends a sign-in to the account page: back to the page asked for, no code.
func (s *Service) answerAccountClient(w http.ResponseWriter, r *http.Request, rt *runtime, ar fosite.AuthorizeRequester) {
	back := ar.GetState()
	if !accountPath(rt, back) {
		back = rt.basePath + "/account"
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}
