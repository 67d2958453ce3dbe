package config

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
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
		keys, _, err := ClientKeys(c.JWKS)
		if err == nil && c.JWKSFile == "" {
			_, err = ClientSigningAlg(keys, c.TokenEndpointAuthSigningAlg)
		}
		if err != nil {
			at("jwks: %v", err)
		}
	}
	return errs
}

// ClientKey is what the configuration checks of one of a client's public keys (RFC 7517); the auth
// service parses the set with go-jose (services/auth/realm), which this package does not link, so that
// the forms-only binary stays without it (D31).
type ClientKey struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	N   string `json:"n"`
	X   string `json:"x"`
	Y   string `json:"y"`
	// The private members: a key with any of them is refused.
	D  string `json:"d"`
	P  string `json:"p"`
	Q  string `json:"q"`
	DP string `json:"dp"`
	DQ string `json:"dq"`
	QI string `json:"qi"`
	K  string `json:"k"`
}

// ClientKeys checks a client's JSON Web Key Set and returns its keys and the set as JSON: public RSA
// (2048 bits or more) or EC (P-256, P-384, P-521) keys for signing (use sig, or none: fosite then reads
// it as sig). A private key is refused, since whoever holds the configuration must not be able to act
// as the client. The set may also come as JSON text in a string (as the CRD carries it).
func ClientKeys(raw []byte) ([]ClientKey, []byte, error) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		raw = []byte(text)
	}
	var set struct {
		Keys []ClientKey `json:"keys"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, nil, fmt.Errorf("not a JSON Web Key Set: %v", err)
	}
	if len(set.Keys) == 0 {
		return nil, nil, errors.New("no keys")
	}
	for i, k := range set.Keys {
		if k.D != "" || k.P != "" || k.Q != "" || k.DP != "" || k.DQ != "" || k.QI != "" || k.K != "" {
			return nil, nil, fmt.Errorf("key %d (kid %q) is a private key: register the public half only", i, k.Kid)
		}
		if k.Use != "" && k.Use != "sig" {
			return nil, nil, fmt.Errorf("key %d (kid %q): use %q: want sig", i, k.Kid, k.Use)
		}
		switch k.Kty {
		case "RSA":
			n, err := base64.RawURLEncoding.DecodeString(k.N)
			if err != nil || len(n) == 0 {
				return nil, nil, fmt.Errorf("key %d (kid %q): an RSA key needs its modulus n (base64url)", i, k.Kid)
			}
			if bits := new(big.Int).SetBytes(n).BitLen(); bits < minRSABits {
				return nil, nil, fmt.Errorf("key %d (kid %q): RSA key of %d bits: want at least %d", i, k.Kid, bits, minRSABits)
			}
		case "EC":
			if ecAlgs[k.Crv] == "" || k.X == "" || k.Y == "" {
				return nil, nil, fmt.Errorf("key %d (kid %q): an EC key needs crv P-256, P-384 or P-521, x and y", i, k.Kid)
			}
		default:
			return nil, nil, fmt.Errorf("key %d (kid %q): kty %q: want an RSA or EC public key", i, k.Kid, k.Kty)
		}
	}
	return set.Keys, raw, nil
}

// ecAlgs is the ECDSA algorithm of each curve.
var ecAlgs = map[string]string{"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}

// ClientSigningAlg is the algorithm a client's assertions must use: alg when set (one of the keys must
// fit it), else the algorithm of the first key (RS256 for RSA, ES256/ES384/ES512 by the EC key's curve).
func ClientSigningAlg(keys []ClientKey, alg string) (string, error) {
	if alg == "" {
		return keyAlg(keys[0]), nil
	}
	for _, k := range keys {
		if k.Kty == "RSA" && (strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")) || k.Kty == "EC" && keyAlg(k) == alg {
			return alg, nil
		}
	}
	return "", fmt.Errorf("no key fits tokenEndpointAuthSigningAlg %s", alg)
}

func keyAlg(k ClientKey) string {
	if k.Kty == "EC" {
		return ecAlgs[k.Crv]
	}
	return "RS256"
}
