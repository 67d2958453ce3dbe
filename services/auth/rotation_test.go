package auth_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/keys"
	"github.com/formsservice/formsservice/services/platform/config"
)

// TestKeyRotation_PreviousKeyKeepsEveryoneSignedIn restarts the provider with a new current key and the
// old one as previous: the JWKS serves both, tokens signed before still verify at userinfo, and refresh
// tokens issued before keep working (their HMAC secret is derived from the previous key).
func TestKeyRotation_PreviousKeyKeepsEveryoneSignedIn(t *testing.T) {
	srv := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	oldKeys, _ := keys.Generate()
	before := startProvider(t, setup{rdb: rdb, keys: oldKeys})
	before.user(testEmail, testPassword)
	tk, _ := before.fullSignIn(testEmail, testPassword)
	before.stop()

	newKeys, _ := keys.Generate()
	rotated, err := keys.NewSet(newKeys.Current.Private, oldKeys.Current.Private)
	if err != nil {
		t.Fatal(err)
	}
	// The same issuer (and client) on a new port: a restarted replica behind the same URL.
	after := startProvider(t, setup{rdb: rdb, keys: rotated, mutate: func(c *config.Config) {
		c.Auth.Issuer = before.base
		c.Auth.Clients[0].RedirectURIs = []string{before.redirect}
	}})
	after.redirect = before.redirect

	res, err := http.Get(after.base + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Keys []struct {
			Kid, Alg, Kty, Crv, Use string
			D                       string `json:"d"`
		} `json:"keys"`
	}
	_ = json.NewDecoder(res.Body).Decode(&set)
	res.Body.Close()
	if len(set.Keys) != 2 || set.Keys[0].Kid != newKeys.Current.ID || set.Keys[1].Kid != oldKeys.Current.ID {
		t.Fatalf("JWKS: %+v", set.Keys)
	}
	for _, k := range set.Keys {
		if k.Alg != "ES256" || k.Crv != "P-256" || k.Use != "sig" || k.D != "" {
			t.Fatalf("JWKS key: %+v", k)
		}
	}

	// The issuer's discovery names the issuer URL; verify against the restarted server's JWKS directly.
	verifier := oidc.NewVerifier(before.base, oidc.NewRemoteKeySet(t.Context(), after.base+"/.well-known/jwks.json"),
		&oidc.Config{ClientID: clientID, SupportedSigningAlgs: []string{oidc.ES256}})
	if _, err := verifier.Verify(t.Context(), tk.IDToken); err != nil {
		t.Fatalf("id_token signed with the previous key: %v", err)
	}
	if st := after.userinfoStatus(tk.AccessToken); st != http.StatusOK {
		t.Fatalf("access token signed with the previous key: userinfo %d", st)
	}
	refreshed := after.refresh(tk.RefreshToken)
	if refreshed.status != http.StatusOK {
		t.Fatalf("refresh token issued before the rotation: %d %s", refreshed.status, refreshed.Error)
	}
	if _, err := verifier.Verify(t.Context(), refreshed.IDToken); err != nil {
		t.Fatalf("id_token signed with the new key: %v", err)
	}
	// New tokens are signed with the new key.
	parts := splitJWT(t, refreshed.AccessToken)
	if parts["kid"] != newKeys.Current.ID {
		t.Fatalf("new access token kid %v, want %s", parts["kid"], newKeys.Current.ID)
	}
}
