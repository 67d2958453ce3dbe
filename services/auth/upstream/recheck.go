package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Re-checking at a refresh (docs/auth.md "Staying correct after sign-in", D78): the upstream's
// refresh token, kept from the sign-in, is refreshed at its token endpoint. An upstream that refuses it
// (invalid_grant: the account removed, the session or grant revoked) no longer vouches for the person.

// recheckState is Identity.Recheck of an OpenID connector: the upstream's refresh token and whom it
// belongs to (a new ID token must name the same person).
type recheckState struct {
	RefreshToken string `json:"rt"`
	Subject      string `json:"sub"`
	Issuer       string `json:"iss"`
}

func (s recheckState) encode() string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Recheck refreshes the upstream's refresh token of state (an Identity.Recheck of this connector) and
// answers the state to keep: the upstream's rotated refresh token, or the same one. An ID token in the
// answer is verified as at the sign-in and must name the same person. Errors wrap ErrNotAllowed (the
// upstream refused the refresh token, or names another person) or ErrUnreachable.
func (c *Connector) Recheck(ctx context.Context, state string) (string, error) {
	var st recheckState
	if err := json.Unmarshal([]byte(state), &st); err != nil || st.RefreshToken == "" {
		return "", fmt.Errorf("%w: the kept state is not an OpenID connector's", ErrNotAllowed)
	}
	p, err := c.discover(ctx)
	if err != nil {
		return "", err
	}
	// Expiry in the past: the token source refreshes at once, with the kept refresh token.
	ts := c.oauth2(p).TokenSource(oidc.ClientContext(ctx, c.client), &oauth2.Token{RefreshToken: st.RefreshToken})
	tok, err := ts.Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && refusal(re) {
			return "", fmt.Errorf("%w: the upstream refused the refresh: %s", ErrNotAllowed, re.ErrorCode)
		}
		return "", fmt.Errorf("%w: the token endpoint: %v", ErrUnreachable, err)
	}
	if raw, _ := tok.Extra("id_token").(string); raw != "" {
		v := p.Verifier(&oidc.Config{ClientID: c.cfg.ClientID, SupportedSigningAlgs: c.cfg.SigningAlgs, SkipIssuerCheck: c.cfg.MultiTenant()})
		idt, err := v.Verify(ctx, raw)
		if err != nil {
			return "", fmt.Errorf("%w: the refreshed ID token: %v", ErrNotAllowed, err)
		}
		var claims map[string]any
		if err := idt.Claims(&claims); err != nil {
			return "", fmt.Errorf("%w: the refreshed ID token's claims: %v", ErrNotAllowed, err)
		}
		// OpenID Connect Core 12.2: the same iss and sub as the ID token of the sign-in.
		if sub := str(claims[c.cfg.Claims.Subject]); sub != st.Subject || (st.Issuer != "" && idt.Issuer != st.Issuer) {
			return "", fmt.Errorf("%w: the refreshed ID token names another person", ErrNotAllowed)
		}
	}
	if tok.RefreshToken != "" {
		st.RefreshToken = tok.RefreshToken
	}
	return st.encode(), nil
}

// refusal: the token endpoint says the refresh token no longer stands: invalid_grant (RFC 6749 5.2), or
// a 400 invalid_request, which is how Dex answers a refresh token it no longer has (revoked through its
// API, or rotated out) — our refresh request itself is the same well-formed one every time. Any other
// answer says nothing about the person: a server error (Dex's 500 for a deleted account too: it answers
// its own failures the same way), an error page, or invalid_client (our own credentials at the
// upstream are wrong, which must not end every grant of the connector at once).
func refusal(re *oauth2.RetrieveError) bool {
	status := 0
	if re.Response != nil {
		status = re.Response.StatusCode
	}
	if status >= http.StatusInternalServerError {
		return false
	}
	switch re.ErrorCode {
	case "invalid_grant":
		return true
	case "invalid_request":
		return status == http.StatusBadRequest
	}
	return false
}
