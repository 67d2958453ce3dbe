package auth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// TestFlow_AuthorizationCodePKCE_RefreshRevokeUserinfo drives the whole flow with real clients: x/oauth2
// builds the PKCE request and exchanges the code, an HTTP client with a cookie jar plays the browser on
// the hosted page (CSRF token included), go-oidc verifies the id_token against the JWKS and calls
// userinfo.
func TestFlow_AuthorizationCodePKCE_RefreshRevokeUserinfo(t *testing.T) {
	p := startProvider(t, setup{})
	sub := p.user(testEmail, testPassword)
	ctx := context.Background()
	conf := p.oauth2Config()
	b := newBrowser(t)

	verifier := oauth2.GenerateVerifier()
	state := "st-" + oauth2.GenerateVerifier()[:20]
	nonce := "n-" + oauth2.GenerateVerifier()[:20]
	authURL := conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce))

	page := b.get(authURL)
	if page.StatusCode != http.StatusOK || !strings.Contains(page.body, "Test App") {
		t.Fatalf("sign-in page: %d\n%.500s", page.StatusCode, page.body)
	}
	code, gotState := codeFrom(t, b.signIn(p.base, page.body, "ADA@example.com", testPassword), p.redirect)
	if gotState != state {
		t.Fatalf("state %q, want %q", gotState, state)
	}

	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	if tok.RefreshToken == "" || tok.AccessToken == "" {
		t.Fatalf("want access and refresh tokens, got %+v", tok)
	}

	provider, err := oidc.NewProvider(ctx, p.base)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	rawID, _ := tok.Extra("id_token").(string)
	idt, err := provider.Verifier(&oidc.Config{ClientID: clientID}).Verify(ctx, rawID)
	if err != nil {
		t.Fatalf("id_token: %v", err)
	}
	var idClaims struct {
		Email    string `json:"email"`
		Name     string `json:"name"`
		Nonce    string `json:"nonce"`
		AuthTime int64  `json:"auth_time"`
	}
	if err := idt.Claims(&idClaims); err != nil {
		t.Fatal(err)
	}
	if idt.Subject != sub || idClaims.Email != testEmail || idClaims.Name != "Ada Lovelace" || idClaims.Nonce != nonce || idClaims.AuthTime == 0 {
		t.Fatalf("id_token claims: sub %q %+v", idt.Subject, idClaims)
	}
	if err := idt.VerifyAccessToken(tok.AccessToken); err != nil {
		t.Fatalf("at_hash: %v", err)
	}

	// The access token is an RFC 9068 JWT signed with the same key.
	at, err := provider.Verifier(&oidc.Config{SkipClientIDCheck: true}).Verify(ctx, tok.AccessToken)
	if err != nil {
		t.Fatalf("access token JWT: %v", err)
	}
	var atClaims struct {
		ClientID string `json:"client_id"`
		Scope    string `json:"scope"`
		JTI      string `json:"jti"`
	}
	_ = at.Claims(&atClaims)
	if at.Subject != sub || atClaims.ClientID != clientID || !strings.Contains(atClaims.Scope, "openid") || atClaims.JTI == "" ||
		len(at.Audience) == 0 || at.IssuedAt.IsZero() || at.Issuer != p.base {
		t.Fatalf("access token claims: iss %q sub %q aud %v iat %v %+v", at.Issuer, at.Subject, at.Audience, at.IssuedAt, atClaims)
	}
	// RFC 9068 2.1: the header says what the token is (typ at+jwt), so that it cannot pass as an id_token,
	// and names its key for verification after a rotation.
	var atHeader struct {
		Typ string `json:"typ"`
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if hdr, err := base64.RawURLEncoding.DecodeString(strings.Split(tok.AccessToken, ".")[0]); err != nil || json.Unmarshal(hdr, &atHeader) != nil {
		t.Fatalf("access token header: %v", err)
	}
	if atHeader.Typ != "at+jwt" || atHeader.Alg != "ES256" || atHeader.Kid == "" {
		t.Fatalf("access token header: %+v, want typ at+jwt, alg ES256 and a kid", atHeader)
	}

	// userinfo
	ui, err := provider.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		t.Fatalf("userinfo: %v", err)
	}
	if ui.Subject != sub || ui.Email != testEmail {
		t.Fatalf("userinfo: %+v", ui)
	}

	// refresh: a new refresh token (rotation) and a new id_token
	refreshed, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if refreshed.RefreshToken == "" || refreshed.RefreshToken == tok.RefreshToken || refreshed.AccessToken == tok.AccessToken {
		t.Fatal("refresh must rotate the refresh token and issue a new access token")
	}
	rawID2, _ := refreshed.Extra("id_token").(string)
	if _, err := provider.Verifier(&oidc.Config{ClientID: clientID}).Verify(ctx, rawID2); err != nil {
		t.Fatalf("refreshed id_token: %v", err)
	}

	// A second authorize in the same browser skips the form (SSO session).
	verifier2 := oauth2.GenerateVerifier()
	again := b.get(conf.AuthCodeURL("state-second-1", oauth2.S256ChallengeOption(verifier2)))
	code2, _ := codeFrom(t, again, p.redirect)
	if _, err := conf.Exchange(ctx, code2, oauth2.VerifierOption(verifier2)); err != nil {
		t.Fatalf("exchange after SSO: %v", err)
	}

	// revoke the refresh token: the grant is gone, refresh and userinfo fail.
	res, err := http.PostForm(p.base+"/oauth2/revoke", url.Values{"token": {refreshed.RefreshToken}, "token_type_hint": {"refresh_token"}, "client_id": {clientID}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d", res.StatusCode)
	}
	if tk := p.refresh(refreshed.RefreshToken); tk.status != http.StatusBadRequest || tk.Error != "invalid_grant" {
		t.Fatalf("refresh after revoke: %d %s", tk.status, tk.Error)
	}
	if st := p.userinfoStatus(refreshed.AccessToken); st != http.StatusUnauthorized {
		t.Fatalf("userinfo after revoke: %d", st)
	}
	if _, err := provider.UserInfo(ctx, oauth2.StaticTokenSource(refreshed)); err == nil {
		t.Fatal("userinfo with a revoked token succeeded")
	}
}
