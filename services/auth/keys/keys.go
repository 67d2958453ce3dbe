// Package keys holds the provider's signing keys: the current ES256 (P-256) key that signs every token,
// the previous one that still verifies after a rotation, the next one that is published before it signs
// anything, the JWKS that publishes all three, and the HMAC secrets for opaque tokens, derived from the
// same keys so that every replica agrees without another secret to distribute.
//
// A rotation that no verifier notices has two steps (docs/auth.md, "Rotating the signing key"): first
// the new key is added as next on every replica, and only after every replica serves it and JWKSMaxAge
// has passed (so every cached JWKS holds it) is it promoted to current, the old current becoming previous.
package keys

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-jose/go-jose/v3"
)

// Key is one P-256 signing key and its key ID (the RFC 7638 thumbprint, the same on every replica).
type Key struct {
	Private *ecdsa.PrivateKey
	ID      string
	jwk     *jose.JSONWebKey
}

// JWKSMaxAge is how long a verifier may cache the JWKS (its Cache-Control max-age). A next key must be
// served by every replica for at least this long before it is promoted to current.
const JWKSMaxAge = time.Minute

// Set is the current key and, around a rotation, the previous one and the next one.
type Set struct {
	Current  *Key
	Previous *Key
	// Next is published in the JWKS and verifies, but signs nothing until it is promoted to current.
	Next *Key
	jwks []byte
}

// Files names the key files: Current is required, Previous and Next may be empty.
type Files struct{ Current, Previous, Next string }

// Load reads the key files.
func Load(f Files) (*Set, error) {
	cur, err := loadFile(f.Current)
	if err != nil {
		return nil, err
	}
	var prev, next *ecdsa.PrivateKey
	if f.Previous != "" {
		if prev, err = loadFile(f.Previous); err != nil {
			return nil, err
		}
	}
	if f.Next != "" {
		if next, err = loadFile(f.Next); err != nil {
			return nil, err
		}
	}
	return NewRotatingSet(cur, prev, next)
}

func loadFile(path string) (*ecdsa.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	k, err := ParsePEM(data)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	return k, nil
}

// Generate makes a set with a fresh key (the dev server's ephemeral key).
func Generate() (*Set, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return NewSet(k, nil)
}

// NewSet builds a set from keys; previous may be nil.
func NewSet(current, previous *ecdsa.PrivateKey) (*Set, error) {
	return NewRotatingSet(current, previous, nil)
}

// NewRotatingSet builds a set with a next key too; previous and next may be nil. The JWKS lists
// current, previous and next, each once.
func NewRotatingSet(current, previous, next *ecdsa.PrivateKey) (*Set, error) {
	if current == nil {
		return nil, errors.New("signing key: missing")
	}
	s := &Set{}
	var err error
	if s.Current, err = newKey(current); err != nil {
		return nil, err
	}
	if previous != nil {
		if s.Previous, err = newKey(previous); err != nil {
			return nil, err
		}
	}
	if next != nil {
		if s.Next, err = newKey(next); err != nil {
			return nil, err
		}
	}
	var pub []jose.JSONWebKey
	seen := map[string]bool{}
	for _, k := range s.all() {
		if !seen[k.ID] {
			seen[k.ID] = true
			pub = append(pub, k.jwk.Public())
		}
	}
	if s.jwks, err = json.Marshal(jose.JSONWebKeySet{Keys: pub}); err != nil {
		return nil, err
	}
	return s, nil
}

// all is current, previous and next, those that are set, in that order.
func (s *Set) all() []*Key {
	out := []*Key{s.Current}
	for _, k := range []*Key{s.Previous, s.Next} {
		if k != nil {
			out = append(out, k)
		}
	}
	return out
}

// others is previous and next, those that are set: what verifies but does not sign. Next verifies
// because while a promotion rolls out, a replica that has not promoted yet receives tokens signed by
// one that has.
func (s *Set) others() []*Key { return s.all()[1:] }

func newKey(k *ecdsa.PrivateKey) (*Key, error) {
	if k.Curve != elliptic.P256() {
		return nil, errors.New("signing key: want an EC P-256 key (ES256)")
	}
	jwk := &jose.JSONWebKey{Key: k, Algorithm: string(jose.ES256), Use: "sig"}
	tp, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, err
	}
	jwk.KeyID = base64.RawURLEncoding.EncodeToString(tp)
	return &Key{Private: k, ID: jwk.KeyID, jwk: jwk}, nil
}

// ParsePEM reads an EC P-256 private key in SEC 1 ("EC PRIVATE KEY") or PKCS #8 ("PRIVATE KEY") form.
func ParsePEM(data []byte) (*ecdsa.PrivateKey, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no EC private key in PEM data")
		}
		switch block.Type {
		case "EC PRIVATE KEY":
			return x509.ParseECPrivateKey(block.Bytes)
		case "PRIVATE KEY":
			k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
			if err != nil {
				return nil, err
			}
			ec, ok := k.(*ecdsa.PrivateKey)
			if !ok {
				return nil, fmt.Errorf("want an EC private key, got %T", k)
			}
			return ec, nil
		}
		// EC PARAMETERS and other blocks before the key are skipped.
	}
}

// EncodePEM writes k as a PKCS #8 PEM block (what `openssl genpkey -algorithm EC` writes).
func EncodePEM(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// JWKS is the JSON Web Key Set document: the public halves of the current, previous and next keys.
func (s *Set) JWKS() []byte { return s.jwks }

// Verifying returns the public key for kid, or nil when kid names none of the keys.
func (s *Set) Verifying(kid string) *ecdsa.PublicKey {
	for _, k := range s.all() {
		if k.ID == kid {
			return &k.Private.PublicKey
		}
	}
	return nil
}

// HMACSecrets derives the secret for opaque tokens (authorization codes, refresh tokens) from the
// current key, and the rotated secrets from the previous and next keys, so that refresh tokens issued
// before a rotation, or by a replica that promoted first, keep working.
func (s *Set) HMACSecrets() (current []byte, rotated [][]byte, err error) {
	return s.Secrets("formsservice auth opaque-token hmac v1")
}

// Secrets derives a 32-byte secret for purpose (an HKDF info string, one per use) from the current key,
// and one from each of the previous and next keys around a rotation (others), so that what was signed
// before a rotation, or by a replica that promoted first, still verifies.
func (s *Set) Secrets(purpose string) (current []byte, others [][]byte, err error) {
	if current, err = derive(s.Current, purpose); err != nil {
		return nil, nil, err
	}
	for _, k := range s.others() {
		o, err := derive(k, purpose)
		if err != nil {
			return nil, nil, err
		}
		others = append(others, o)
	}
	return current, others, nil
}

func derive(k *Key, purpose string) ([]byte, error) {
	d, err := k.Private.Bytes()
	if err != nil {
		return nil, err
	}
	return hkdf.Key(sha256.New, d, nil, purpose, 32)
}
