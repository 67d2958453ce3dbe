package interop_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/services/platform/config"
)

// TestGoOIDC is golang.org/x/oauth2 with github.com/coreos/go-oidc/v3 (versions in go.mod), the way a Go
// web app signs people in: a confidential client (client_secret_basic, found by x/oauth2's auto
// detection) with PKCE S256. x/oauth2 and go-oidc have no revocation or logout client: the test sends
// those two requests from the discovery document (RFC 7009, RP-Initiated Logout), and the library's own
// refresh shows the revocation took.
func TestGoOIDC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	app := listen(t)
	base := "http://" + app.Addr().String()
	const clientID, secret = "go-app", "go-app-secret-0123456789"
	p := startProvider(t, config.OAuthClient{
		ClientID: clientID, Name: "Go app", SecretFile: secretFile(t, secret),
		RedirectURIs: []string{base + "/callback"}, PostLogoutRedirectURIs: []string{base + "/signed-out"},
	})

	// Discovery: go-oidc checks that the document's issuer is the one it asked for.
	provider, err := oidc.NewProvider(ctx, p.Issuer)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	var meta struct {
		Revocation string `json:"revocation_endpoint"`
		EndSession string `json:"end_session_endpoint"`
	}
	if err := provider.Claims(&meta); err != nil || meta.Revocation == "" || meta.EndSession == "" {
		t.Fatalf("discovery lacks revocation_endpoint or end_session_endpoint (%v): %+v", err, meta)
	}
	conf := oauth2.Config{ClientID: clientID, ClientSecret: secret, Endpoint: provider.Endpoint(),
		RedirectURL: base + "/callback", Scopes: []string{oidc.ScopeOpenID, "profile", "email", oidc.ScopeOfflineAccess}}
	verifyID := provider.Verifier(&oidc.Config{ClientID: clientID}).Verify
	b := newBrowser(t)

	// authorize signs in through the hosted page and returns the code of the redirect.
	authorize := func(verifier, nonce string) string {
		t.Helper()
		state := oauth2.GenerateVerifier()
		cb, _ := b.visit(conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce)), conf.RedirectURL)
		q := cb.Query()
		if q.Get("error") != "" || q.Get("state") != state || q.Get("code") == "" {
			t.Fatalf("redirect to the app: %s (want a code and state %q)", cb, state)
		}
		return q.Get("code")
	}

	// Code + PKCE, then the ID token as go-oidc checks it (signature against the JWKS, iss, aud, exp)
	// and its nonce and at_hash.
	verifier, nonce := oauth2.GenerateVerifier(), oauth2.GenerateVerifier()
	tok, err := conf.Exchange(ctx, authorize(verifier, nonce), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("code exchange: %v", err)
	}
	checkIDToken := func(tok *oauth2.Token) *oidc.IDToken {
		t.Helper()
		raw, _ := tok.Extra("id_token").(string)
		idt, err := verifyID(ctx, raw)
		if err != nil {
			t.Fatalf("ID token: %v", err)
		}
		if err := idt.VerifyAccessToken(tok.AccessToken); err != nil {
			t.Fatalf("at_hash: %v", err)
		}
		var claims struct {
			Email string `json:"email"`
			Name  string `json:"name"`
		}
		if err := idt.Claims(&claims); err != nil || claims.Email != email || claims.Name != userName {
			t.Fatalf("ID token claims %+v (%v), want %s / %s", claims, err, email, userName)
		}
		return idt
	}
	idt := checkIDToken(tok)
	if idt.Nonce != nonce {
		t.Fatalf("nonce = %q, want %q", idt.Nonce, nonce)
	}
	if tok.RefreshToken == "" {
		t.Fatal("no refresh token for offline_access")
	}

	// Userinfo through go-oidc: the subject must be the ID token's.
	info, err := provider.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		t.Fatalf("userinfo: %v", err)
	}
	if info.Subject != idt.Subject || info.Email != email {
		t.Fatalf("userinfo sub %q email %q, want %q %q", info.Subject, info.Email, idt.Subject, email)
	}

	// Refresh with rotation: x/oauth2 refreshes an expired token by itself.
	refresh := func(rt string) (*oauth2.Token, error) {
		return conf.TokenSource(ctx, &oauth2.Token{RefreshToken: rt, Expiry: time.Now().Add(-time.Hour)}).Token()
	}
	rotated, err := refresh(tok.RefreshToken)
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if rotated.RefreshToken == "" || rotated.RefreshToken == tok.RefreshToken || rotated.AccessToken == tok.AccessToken {
		t.Fatal("the refresh grant did not rotate the refresh token and issue a new access token")
	}
	if got := checkIDToken(rotated); got.Subject != idt.Subject {
		t.Fatalf("refreshed ID token sub %q, want %q", got.Subject, idt.Subject)
	}

	// Error paths, as x/oauth2 reports them.
	t.Run("wrong verifier", func(t *testing.T) {
		code := authorize(oauth2.GenerateVerifier(), "n") // the browser is signed in: straight back
		_, err := conf.Exchange(ctx, code, oauth2.VerifierOption(oauth2.GenerateVerifier()))
		wantOAuthError(t, err, "invalid_grant")
	})
	t.Run("foreign redirect URI", func(t *testing.T) {
		for _, foreign := range []string{"http://127.0.0.1:1/callback", base + "/callback/", base + "/other"} {
			c := conf
			c.RedirectURL = foreign
			_, pg := b.visit(c.AuthCodeURL("state-after-logout", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())), foreign)
			if pg.Status != http.StatusBadRequest || pg.Header.Get("Location") != "" {
				t.Errorf("redirect_uri %s: %d Location %q, want a 400 page and no redirect", foreign, pg.Status, pg.Header.Get("Location"))
			}
		}
	})

	// Revocation (RFC 7009, client_secret_basic); afterwards the library's refresh fails, and so does the
	// rotated-away token.
	form := url.Values{"token": {rotated.RefreshToken}, "token_type_hint": {"refresh_token"}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, meta.Revocation, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(clientID), url.QueryEscape(secret))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("revocation: %d", res.StatusCode)
	}
	_, err = refresh(rotated.RefreshToken)
	wantOAuthError(t, err, "invalid_grant")
	_, err = refresh(tok.RefreshToken)
	wantOAuthError(t, err, "invalid_grant")
	if _, err := provider.UserInfo(ctx, oauth2.StaticTokenSource(rotated)); err == nil {
		t.Error("userinfo accepts an access token of a revoked grant")
	}

	// RP-initiated logout with the ID token as hint: back to the post-logout URI with the state, and the
	// browser is signed out (prompt=none now needs a sign-in).
	raw, _ := rotated.Extra("id_token").(string)
	logout, _ := url.Parse(meta.EndSession)
	logout.RawQuery = url.Values{"id_token_hint": {raw}, "post_logout_redirect_uri": {base + "/signed-out"}, "state": {"bye"}}.Encode()
	back, _ := b.visit(logout.String(), base+"/signed-out")
	if back.Path != "/signed-out" || back.Query().Get("state") != "bye" {
		t.Fatalf("logout went to %s, want %s/signed-out?state=bye", back, base)
	}
	cb, _ := b.visit(conf.AuthCodeURL("state-after-logout", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("prompt", "none")), conf.RedirectURL)
	if cb.Query().Get("error") != "login_required" {
		t.Fatalf("after logout, prompt=none went to %s, want error=login_required", cb)
	}
}

// wantOAuthError checks that x/oauth2 reported the token endpoint's OAuth error code.
func wantOAuthError(t *testing.T, err error, code string) {
	t.Helper()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != code {
		t.Fatalf("got %v, want the OAuth error %s", err, code)
	}
}
