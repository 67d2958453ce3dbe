package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-jose/go-jose/v3"
)

// ClientAssertionAlgs are the algorithms a private_key_jwt client may sign its assertions with: the
// asymmetric ones fosite verifies (RSA PKCS#1 v1.5 and PSS, ECDSA). HS* (client_secret_jwt) and none
// are never accepted; EdDSA is not, because fosite does not verify it.
var ClientAssertionAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}

// minRSABits is the smallest RSA key a client may register (NIST SP 800-131A).
const minRSABits = 2048

// validateMachine checks what a machine client states: its grants, and how it authenticates.
func (c OAuthClient) validateMachine() []error {
	var errs []error
	at := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("auth.clients[%s]: "+format, append([]any{c.ClientID}, a...)...))
	}
	for _, g := range c.GrantTypes {
		if !slices.Contains([]string{GrantAuthorizationCode, GrantRefreshToken, GrantClientCredentials}, g) {
			at("grantTypes: %q: want authorization_code, refresh_token or client_credentials", g)
		}
	}
	if c.Allows(GrantRefreshToken) && !c.Allows(GrantAuthorizationCode) {
		at("grantTypes: refresh_token comes with authorization_code (client_credentials gets no refresh token)")
	}
	if c.Allows(GrantClientCredentials) && !c.Confidential() {
		at("grantTypes: client_credentials needs a confidential client (secretFile, or tokenEndpointAuthMethod private_key_jwt)")
	}
	switch c.TokenEndpointAuthMethod {
	case "":
		if len(c.JWKS) > 0 || c.JWKSFile != "" || c.TokenEndpointAuthSigningAlg != "" {
			at("jwks, jwksFile and tokenEndpointAuthSigningAlg need tokenEndpointAuthMethod private_key_jwt")
		}
		return errs
	case AuthPrivateKeyJWT:
	default:
		at("tokenEndpointAuthMethod %q: want private_key_jwt, or leave it empty (a client secret with secretFile; none for a public client)", c.TokenEndpointAuthMethod)
		return errs
	}
	if c.SecretFile != "" {
		at("tokenEndpointAuthMethod private_key_jwt: a client authenticates one way; remove secretFile")
	}
	if len(c.JWKS) == 0 && c.JWKSFile == "" {
		at("tokenEndpointAuthMethod private_key_jwt needs the client's public keys: jwks or jwksFile")
	}
	if a := c.TokenEndpointAuthSigningAlg; a != "" && !slices.Contains(ClientAssertionAlgs, a) {
		at("tokenEndpointAuthSigningAlg %q: want one of %s", a, strings.Join(ClientAssertionAlgs, ", "))
		return errs
	}
	if len(c.JWKS) > 0 {
		set, err := ParseClientKeys(c.JWKS)
		if err == nil && c.JWKSFile == "" {
			_, err = ClientSigningAlg(set, c.TokenEndpointAuthSigningAlg)
		}
		if err != nil {
			at("jwks: %v", err)
		}
	}
	return errs
}

// ParseClientKeys reads a client's JSON Web Key Set: public RSA (2048 bits or more) or EC keys for
// signing only. A key without "use" is taken as a signing key (fosite looks only at use=sig); a private
// key is refused, since whoever holds the configuration must not be able to act as the client.
// The set may also come as JSON text in a string (as the CRD carries it).
func ParseClientKeys(raw []byte) (*jose.JSONWebKeySet, error) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		raw = []byte(text)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("not a JSON Web Key Set: %v", err)
	}
	if len(set.Keys) == 0 {
		return nil, errors.New("no keys")
	}
	for i := range set.Keys {
		k := &set.Keys[i]
		switch {
		case !k.IsPublic():
			return nil, fmt.Errorf("key %d (kid %q) is a private key: register the public half only", i, k.KeyID)
		case k.Use == "":
			k.Use = "sig"
		case k.Use != "sig":
			return nil, fmt.Errorf("key %d (kid %q): use %q: want sig", i, k.KeyID, k.Use)
		}
		switch pk := k.Key.(type) {
		case *rsa.PublicKey:
			if pk.N.BitLen() < minRSABits {
				return nil, fmt.Errorf("key %d (kid %q): RSA key of %d bits: want at least %d", i, k.KeyID, pk.N.BitLen(), minRSABits)
			}
		case *ecdsa.PublicKey:
		default:
			return nil, fmt.Errorf("key %d (kid %q): want an RSA or EC public key", i, k.KeyID)
		}
	}
	return &set, nil
}

// ClientSigningAlg is the algorithm a client's assertions must use: alg when set (one of the keys must
// fit it), else the algorithm of the first key.
func ClientSigningAlg(set *jose.JSONWebKeySet, alg string) (string, error) {
	if alg == "" {
		return keyAlg(set.Keys[0]), nil
	}
	for _, k := range set.Keys {
		if fits(k, alg) {
			return alg, nil
		}
	}
	return "", fmt.Errorf("no key fits tokenEndpointAuthSigningAlg %s", alg)
}

// keyAlg is the default algorithm of a key: RS256 for RSA, ES256/ES384/ES512 by the curve.
func keyAlg(k jose.JSONWebKey) string {
	if pk, ok := k.Key.(*ecdsa.PublicKey); ok {
		switch pk.Curve {
		case elliptic.P384():
			return "ES384"
		case elliptic.P521():
			return "ES512"
		}
		return "ES256"
	}
	return "RS256"
}

func fits(k jose.JSONWebKey, alg string) bool {
	switch pk := k.Key.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case *ecdsa.PublicKey:
		return strings.HasPrefix(alg, "ES") && keyAlg(k) == alg && pk != nil
	}
	return false
}
