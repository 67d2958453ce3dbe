package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v3"
)

func jwksOf(t *testing.T, keys ...jose.JSONWebKey) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A machine client's grants and keys are checked when the configuration is read, each mistake with
// the client and the field in its message.
func TestValidate_MachineClients(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	ecJWKS := jwksOf(t, jose.JSONWebKey{Key: &ec.PublicKey, KeyID: "k"})
	machine := func(mod func(*OAuthClient)) OAuthClient {
		c := OAuthClient{ClientID: "m", GrantTypes: []string{GrantClientCredentials}, TokenEndpointAuthMethod: AuthPrivateKeyJWT, JWKS: ecJWKS}
		mod(&c)
		return c
	}
	for name, c := range map[string]struct {
		client OAuthClient
		want   string // "" when valid
	}{
		"private_key_jwt, no redirect URIs":    {machine(func(*OAuthClient) {}), ""},
		"a secret, client_credentials only":    {machine(func(c *OAuthClient) { c.TokenEndpointAuthMethod, c.JWKS, c.SecretFile = "", nil, "/s" }), ""},
		"ES256 named":                          {machine(func(c *OAuthClient) { c.TokenEndpointAuthSigningAlg = "ES256" }), ""},
		"keys from a file only":                {machine(func(c *OAuthClient) { c.JWKS, c.JWKSFile = nil, "/keys.json" }), ""},
		"an unknown grant":                     {machine(func(c *OAuthClient) { c.GrantTypes = []string{"password"} }), `grantTypes: "password"`},
		"refresh without code":                 {machine(func(c *OAuthClient) { c.GrantTypes = []string{GrantClientCredentials, GrantRefreshToken} }), "refresh_token comes with authorization_code"},
		"a public client's client_credentials": {machine(func(c *OAuthClient) { c.TokenEndpointAuthMethod, c.JWKS = "", nil }), "needs a confidential client"},
		"an unknown method":                    {machine(func(c *OAuthClient) { c.TokenEndpointAuthMethod, c.SecretFile = "client_secret_jwt", "/s" }), `tokenEndpointAuthMethod "client_secret_jwt"`},
		"private_key_jwt without keys":         {machine(func(c *OAuthClient) { c.JWKS = nil }), "needs the client's public keys"},
		"private_key_jwt and a secret":         {machine(func(c *OAuthClient) { c.SecretFile = "/s" }), "remove secretFile"},
		"a symmetric algorithm":                {machine(func(c *OAuthClient) { c.TokenEndpointAuthSigningAlg = "HS256" }), `tokenEndpointAuthSigningAlg "HS256"`},
		"EdDSA, which fosite cannot verify":    {machine(func(c *OAuthClient) { c.TokenEndpointAuthSigningAlg = "EdDSA" }), `tokenEndpointAuthSigningAlg "EdDSA"`},
		"an algorithm no key fits":             {machine(func(c *OAuthClient) { c.TokenEndpointAuthSigningAlg = "RS256" }), "no key fits"},
		"a private key":                        {machine(func(c *OAuthClient) { c.JWKS = jwksOf(t, jose.JSONWebKey{Key: ec, KeyID: "p"}) }), "is a private key"},
		"a short RSA key":                      {machine(func(c *OAuthClient) { c.JWKS = jwksOf(t, jose.JSONWebKey{Key: &small.PublicKey, KeyID: "r"}) }), "at least 2048"},
		"an encryption key":                    {machine(func(c *OAuthClient) { c.JWKS = jwksOf(t, jose.JSONWebKey{Key: &ec.PublicKey, KeyID: "e", Use: "enc"}) }), `use "enc"`},
		"not a key set":                        {machine(func(c *OAuthClient) { c.JWKS = json.RawMessage(`{"keys":"x"}`) }), "not a JSON Web Key Set"},
		"keys without private_key_jwt":         {machine(func(c *OAuthClient) { c.TokenEndpointAuthMethod, c.SecretFile = "", "/s" }), "need tokenEndpointAuthMethod private_key_jwt"},
		"a code client without redirect URIs":  {OAuthClient{ClientID: "m", GrantTypes: []string{GrantAuthorizationCode}}, "at least one redirectURI"},
	} {
		errs := Auth{Clients: []OAuthClient{c.client}}.validate()
		switch {
		case c.want == "" && len(errs) > 0:
			t.Errorf("%s: %v", name, errs)
		case c.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want) || !strings.Contains(errs[0].Error(), "auth.clients[m]")):
			t.Errorf("%s: %v; want one error with %q", name, errs, c.want)
		}
	}
}

// A client states its grants; by default the code and refresh grants, as before.
func TestDefaults_ClientGrantTypesAndAdminGroup(t *testing.T) {
	a := Auth{Clients: []OAuthClient{{ClientID: "app"}}}
	a.applyDefaults(&Config{})
	if g := a.Clients[0].GrantTypes; len(g) != 2 || g[0] != GrantAuthorizationCode || g[1] != GrantRefreshToken {
		t.Fatalf("default grantTypes %v", g)
	}
	if a.Admin.Group != DefaultAdminGroup {
		t.Fatalf("default admin group %q", a.Admin.Group)
	}
}

// The default algorithm is the first key's: ES384 for a P-384 key.
func TestClientSigningAlg_FirstKeysByDefault(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	keys, _, err := ClientKeys(jwksOf(t, jose.JSONWebKey{Key: &ec.PublicKey, KeyID: "k"}))
	if err != nil {
		t.Fatal(err)
	}
	if alg, err := ClientSigningAlg(keys, ""); err != nil || alg != "ES384" {
		t.Fatalf("default algorithm of a P-384 key: %q %v", alg, err)
	}
	if _, err := ClientSigningAlg(keys, "ES256"); err == nil {
		t.Fatal("ES256 fits a P-384 key")
	}
}
