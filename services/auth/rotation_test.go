package auth_test

import (
	"crypto"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
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

// TestKeyRotation_NextKeyFirst_ACachingVerifierNeverRefuses is a rotation in two steps against a relying
// party that caches the JWKS for its whole max-age and never re-fetches inside it (go-oidc v2, which
// kube-apiserver still uses, behaves so): the new key is first published as next, and only then
// promoted. Tokens signed by the promoted key verify with the JWKS the relying party cached before the
// promotion; while the promotion rolls out, a replica that has not promoted yet accepts the promoted
// replica's access and refresh tokens. With the key promoted at once (the old single-step rotation),
// the cached JWKS does not hold it and the verifier refuses.
func TestKeyRotation_NextKeyFirst_ACachingVerifierNeverRefuses(t *testing.T) {
	srv := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	a, _ := keys.Generate()
	b, _ := keys.Generate()
	publishing, err := keys.NewRotatingSet(a.Current.Private, nil, b.Current.Private)
	if err != nil {
		t.Fatal(err)
	}
	before := startProvider(t, setup{rdb: rdb, keys: publishing})
	before.user(testEmail, testPassword)

	// The relying party fetches the JWKS once, while the next key is published, and keeps it.
	cached, maxAge := fetchJWKS(t, before.base)
	if maxAge <= 0 || maxAge > keys.JWKSMaxAge {
		t.Fatalf("JWKS max-age %v: want at most the promotion wait %v", maxAge, keys.JWKSMaxAge)
	}
	if len(cached.Keys) != 2 || cached.Keys[0].KeyID != a.Current.ID || cached.Keys[1].KeyID != b.Current.ID {
		t.Fatalf("JWKS while the next key is published: %v", kids(cached))
	}
	verifier := oidc.NewVerifier(before.base, &oidc.StaticKeySet{PublicKeys: publicKeys(cached)},
		&oidc.Config{ClientID: clientID, SupportedSigningAlgs: []string{oidc.ES256}})

	// The next key signs nothing yet.
	first, _ := before.fullSignIn(testEmail, testPassword)
	if kid := splitJWT(t, first.IDToken)["kid"]; kid != a.Current.ID {
		t.Fatalf("signed before the promotion with %v, want the current key %s", kid, a.Current.ID)
	}

	// Promotion: a replica restarts with next as current and the old current as previous; the other
	// replica (before) has not promoted yet.
	promoted, err := keys.NewSet(b.Current.Private, a.Current.Private)
	if err != nil {
		t.Fatal(err)
	}
	after := startProvider(t, setup{rdb: rdb, keys: promoted, mutate: func(c *config.Config) {
		c.Auth.Issuer = before.base
		c.Auth.Clients[0].RedirectURIs = []string{before.redirect}
	}})
	after.redirect = before.redirect
	tk, _ := after.fullSignIn(testEmail, testPassword)
	if kid := splitJWT(t, tk.IDToken)["kid"]; kid != b.Current.ID {
		t.Fatalf("signed after the promotion with %v, want %s", kid, b.Current.ID)
	}
	for name, tok := range map[string]string{"before": first.IDToken, "after": tk.IDToken} {
		if _, err := verifier.Verify(t.Context(), tok); err != nil {
			t.Fatalf("the JWKS cached before the promotion refuses the ID token signed %s it: %v", name, err)
		}
	}
	if st := before.userinfoStatus(tk.AccessToken); st != http.StatusOK {
		t.Fatalf("the replica not yet promoted refuses the promoted key's access token: userinfo %d", st)
	}
	if r := before.refresh(tk.RefreshToken); r.status != http.StatusOK {
		t.Fatalf("the replica not yet promoted refuses the promoted replica's refresh token: %d %s", r.status, r.Error)
	}

	// The single-step rotation this replaces: a JWKS cached before it lacks the new key.
	oneStep, _ := keys.Generate()
	if slices.Contains(kids(cached), oneStep.Current.ID) {
		t.Fatal("a key never published is in the cached JWKS")
	}
}

func fetchJWKS(t *testing.T, base string) (jose.JSONWebKeySet, time.Duration) {
	t.Helper()
	res, err := http.Get(base + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(res.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	var maxAge time.Duration
	for _, d := range strings.Split(res.Header.Get("Cache-Control"), ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(d), "max-age="); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("Cache-Control %q", res.Header.Get("Cache-Control"))
			}
			maxAge = time.Duration(n) * time.Second
		}
	}
	return set, maxAge
}

func kids(set jose.JSONWebKeySet) []string {
	var out []string
	for _, k := range set.Keys {
		out = append(out, k.KeyID)
	}
	return out
}

func publicKeys(set jose.JSONWebKeySet) []crypto.PublicKey {
	var out []crypto.PublicKey
	for _, k := range set.Keys {
		out = append(out, k.Key)
	}
	return out
}
