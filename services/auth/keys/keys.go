// Package keys holds the provider's signing keys: the current ES256 (P-256) key that signs every token,
// the previous one that still verifies during a rotation, the JWKS that publishes both, and the HMAC
// secrets for opaque tokens, derived from the same keys so that every replica agrees without another
// secret to distribute.
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

	"github.com/go-jose/go-jose/v3"
)

// Key is one P-256 signing key and its key ID (the RFC 7638 thumbprint, the same on every replica).
type Key struct {
	Private *ecdsa.PrivateKey
	ID      string
	jwk     *jose.JSONWebKey
}

// Set is the current key and, during a rotation, the previous one.
type Set struct {
	Current  *Key
	Previous *Key
	jwks     []byte
}

// Load reads the current key file and, when previousFile is not empty, the previous one.
func Load(currentFile, previousFile string) (*Set, error) {
	cur, err := loadFile(currentFile)
	if err != nil {
		return nil, err
	}
	var prev *ecdsa.PrivateKey
	if previousFile != "" {
		if prev, err = loadFile(previousFile); err != nil {
			return nil, err
		}
	}
	return NewSet(cur, prev)
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
	if current == nil {
		return nil, errors.New("signing key: missing")
	}
	s := &Set{}
	var err error
	if s.Current, err = newKey(current); err != nil {
		return nil, err
	}
	pub := []jose.JSONWebKey{s.Current.jwk.Public()}
	if previous != nil {
		if s.Previous, err = newKey(previous); err != nil {
			return nil, err
		}
		if s.Previous.ID != s.Current.ID {
			pub = append(pub, s.Previous.jwk.Public())
		}
	}
	if s.jwks, err = json.Marshal(jose.JSONWebKeySet{Keys: pub}); err != nil {
		return nil, err
	}
	return s, nil
}

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

// JWKS is the JSON Web Key Set document: the public halves of the current and previous keys.
func (s *Set) JWKS() []byte { return s.jwks }

// Verifying returns the public key for kid, or nil when kid names neither key.
func (s *Set) Verifying(kid string) *ecdsa.PublicKey {
	for _, k := range []*Key{s.Current, s.Previous} {
		if k != nil && k.ID == kid {
			return &k.Private.PublicKey
		}
	}
	return nil
}

// HMACSecrets derives the secret for opaque tokens (authorization codes, refresh tokens) from the
// current key, and the rotated secret from the previous key, so that refresh tokens issued before a key
// rotation keep working until they are next rotated.
func (s *Set) HMACSecrets() (current []byte, rotated [][]byte, err error) {
	if current, err = hmacSecret(s.Current); err != nil {
		return nil, nil, err
	}
	if s.Previous != nil {
		prev, err := hmacSecret(s.Previous)
		if err != nil {
			return nil, nil, err
		}
		rotated = append(rotated, prev)
	}
	return current, rotated, nil
}

func hmacSecret(k *Key) ([]byte, error) { return derive(k, "formsservice auth opaque-token hmac v1") }

// Secrets derives a 32-byte secret for purpose (an HKDF info string, one per use) from the current key,
// and one from the previous key during a rotation, so that what was signed before a rotation still
// verifies.
func (s *Set) Secrets(purpose string) (current []byte, previous [][]byte, err error) {
	if current, err = derive(s.Current, purpose); err != nil {
		return nil, nil, err
	}
	if s.Previous != nil {
		prev, err := derive(s.Previous, purpose)
		if err != nil {
			return nil, nil, err
		}
		previous = append(previous, prev)
	}
	return current, previous, nil
}

func derive(k *Key, purpose string) ([]byte, error) {
	d, err := k.Private.Bytes()
	if err != nil {
		return nil, err
	}
	return hkdf.Key(sha256.New, d, nil, purpose, 32)
}
