package auth_test

import (
	"net/http"
	"net/url"
	"testing"
)

// An answer without a body carries no Content-Type, as fosite's answers on net/http do: a strict
// client (oidc-client-ts) throws on a revocation's 200 that says text/plain. The answers that have a
// body keep their JSON type.
func TestHeaders_BodylessAnswersHaveNoContentType(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	tk, _ := p.fullSignIn(testEmail, testPassword)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	check := func(name string, res *http.Response, err error, status int, contentType string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != status || res.Header.Get("Content-Type") != contentType {
			t.Errorf("%s: %d Content-Type %q, want %d %q", name, res.StatusCode, res.Header.Get("Content-Type"), status, contentType)
		}
		if _, present := res.Header["Content-Type"]; contentType == "" && present {
			t.Errorf("%s: a Content-Type header on an answer without a body", name)
		}
	}

	res, err := http.PostForm(p.base+"/oauth2/revoke", url.Values{"token": {tk.RefreshToken}, "client_id": {clientID}})
	check("revocation", res, err, http.StatusOK, "")
	res, err = http.PostForm(p.base+"/oauth2/revoke", url.Values{"token": {tk.RefreshToken}, "client_id": {"nobody"}})
	check("revocation by an unknown client", res, err, http.StatusUnauthorized, "application/json;charset=UTF-8")

	// An authorize error goes back to the client in a 303 without a body.
	res, err = noRedirect.Get(p.oauth2Config().AuthCodeURL("state-0123456789")) // no PKCE
	check("authorize error redirect", res, err, http.StatusSeeOther, "")

	res, err = http.PostForm(p.base+"/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tk.RefreshToken},
		"client_id": {clientID}})
	check("token error", res, err, http.StatusBadRequest, "application/json;charset=UTF-8")
}
