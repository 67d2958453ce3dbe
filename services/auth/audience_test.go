package auth_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/services/platform/config"
)

const (
	ordersAPI  = "https://api.example/orders"
	billingAPI = "https://api.example/billing"
)

// verifyAccessToken is what a resource server does with a well-known JWT library (go-jose): fetch the
// JWKS, check the signature, the issuer, its own audience, the expiry, and the RFC 9068 type.
func verifyAccessToken(t *testing.T, p *provider, token, audience string) (*josejwt.Claims, error) {
	t.Helper()
	res, err := http.Get(p.base + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var jwks jose.JSONWebKeySet
	b, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(b, &jwks); err != nil {
		t.Fatal(err)
	}
	tok, err := josejwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return nil, err
	}
	if typ, _ := tok.Headers[0].ExtraHeaders["typ"].(string); typ != "at+jwt" {
		t.Fatalf("typ %q, want at+jwt", typ)
	}
	var claims josejwt.Claims
	if err := tok.Claims(&jwks, &claims); err != nil {
		return nil, err
	}
	return &claims, claims.ValidateWithLeeway(josejwt.Expected{Issuer: p.base, AnyAudience: josejwt.Audience{audience}, Time: time.Now()}, time.Minute)
}

// Access tokens carry the client's APIs as aud, not the client ID the ID token has: an API accepts only
// tokens meant for it. RFC 8707 resource narrows them to the client's configured APIs, and a resource the
// client may not ask for is invalid_target.
func TestAccessToken_AudienceIsTheClientsAPIs_ResourceIndicatorsLimited(t *testing.T) {
	p := startProvider(t, setup{mutate: func(c *config.Config) {
		c.Auth.Clients[0].Audiences = []string{ordersAPI, billingAPI}
	}})
	p.user(testEmail, testPassword)

	tk, _ := p.fullSignIn(testEmail, testPassword)
	claims, err := verifyAccessToken(t, p, tk.AccessToken, ordersAPI)
	if err != nil || !slices.Equal([]string(claims.Audience), []string{ordersAPI, billingAPI}) {
		t.Fatalf("access token without resource: aud %v, %v; want both APIs", claims.Audience, err)
	}
	if _, err := verifyAccessToken(t, p, tk.AccessToken, clientID); err == nil {
		t.Fatal("the access token verifies for the client ID's audience")
	}
	var id josejwt.Claims
	idt, _ := josejwt.ParseSigned(tk.IDToken, []jose.SignatureAlgorithm{jose.ES256})
	_ = idt.UnsafeClaimsWithoutVerification(&id)
	if !slices.Equal([]string(id.Audience), []string{clientID}) {
		t.Fatalf("ID token aud %v, want the client ID", id.Audience)
	}

	// resource= one API: the token (and its refresh) is for that API only.
	b := newBrowser(t)
	verifier := oauth2.GenerateVerifier()
	page := b.get(p.authorizeURL("state-resource-1", verifier, oauth2.SetAuthURLParam("resource", ordersAPI)))
	code, _ := codeFrom(t, b.signIn(p.base, page.body, testEmail, testPassword), p.redirect)
	narrow := p.exchange(code, verifier)
	refreshed := p.refresh(narrow.RefreshToken)
	for _, at := range []string{narrow.AccessToken, refreshed.AccessToken} {
		if _, err := verifyAccessToken(t, p, at, billingAPI); err == nil {
			t.Fatal("a token requested for the orders API verifies for billing")
		}
		if c, err := verifyAccessToken(t, p, at, ordersAPI); err != nil || len(c.Audience) != 1 {
			t.Fatalf("token for the orders API: %v %v", c, err)
		}
	}

	// A resource the client may not ask for: invalid_target, before the page.
	u := p.authorizeURL("state-resource-2", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("resource", "https://evil.example/api"))
	authorizeError(t, newBrowser(t).get(u), p.redirect, "invalid_target", "state-resource-2")
}

// A client with no API configured keeps today's audience, its own client ID.
func TestAccessToken_NoAPIConfigured_AudienceIsTheClientID(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	tk, _ := p.fullSignIn(testEmail, testPassword)
	if c, err := verifyAccessToken(t, p, tk.AccessToken, clientID); err != nil || !slices.Equal([]string(c.Audience), []string{clientID}) {
		t.Fatalf("aud %v, %v", c, err)
	}
}

// audience and resource are matched exactly against the client's APIs (fosite's default audience
// matching accepted any sub-path: a client allowed https://api.example/ got a token for
// https://api.example/admin/billing, kept across refresh), at authorize and again at every refresh.
func TestAudience_ExactlyTheClientsAPIs_AtAuthorizeAndRefresh(t *testing.T) {
	const root = "https://api.example/"
	p := startProvider(t, setup{mutate: func(c *config.Config) { c.Auth.Clients[0].Audiences = []string{root, ordersAPI} }})
	p.user(testEmail, testPassword)

	for i, param := range []string{"audience", "resource"} {
		for j, bad := range []string{root + "admin/billing", "https://api.example", "https://API.example/", ordersAPI + "/", root + "?x=1", "http://api.example/"} {
			state := fmt.Sprintf("state-exact-%d-%d", i, j)
			u := p.authorizeURL(state, oauth2.GenerateVerifier(), oauth2.SetAuthURLParam(param, bad))
			authorizeError(t, newBrowser(t).get(u), p.redirect, "invalid_target", state)
		}
	}

	// Exactly one of the client's APIs: the token is for it alone, and so is its refresh.
	b := newBrowser(t)
	verifier := oauth2.GenerateVerifier()
	page := b.get(p.authorizeURL("state-exact-ok", verifier, oauth2.SetAuthURLParam("audience", root)))
	code, _ := codeFrom(t, b.signIn(p.base, page.body, testEmail, testPassword), p.redirect)
	tk := p.exchange(code, verifier)
	refreshed := p.refresh(tk.RefreshToken)
	for _, at := range []string{tk.AccessToken, refreshed.AccessToken} {
		if c, err := verifyAccessToken(t, p, at, root); err != nil || !slices.Equal([]string(c.Audience), []string{root}) {
			t.Fatalf("token for %s: %v %v", root, c, err)
		}
	}

	// The client loses that API: the grant's next refresh is refused, not renewed for an API it no
	// longer may call.
	cfg := *p.live.Current()
	cfg.Auth.Clients = slices.Clone(cfg.Auth.Clients)
	cfg.Auth.Clients[0].Audiences = []string{ordersAPI}
	p.live.c.Store(&cfg)
	if r := p.refresh(refreshed.RefreshToken); r.status != http.StatusBadRequest || r.Error != "invalid_target" {
		t.Fatalf("refresh of a grant for an API the client no longer has: %d %s, want 400 invalid_target", r.status, r.Error)
	}
}
