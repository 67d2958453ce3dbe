package mfa

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/formsservice/formsservice/services/platform/secretfile"
)

// A TOTP secret must be readable to check a code, so it cannot be hashed like a password. With a key
// (auth.mfa.secretKeyFile) it is stored sealed with AES-256-GCM, the user's ID as additional data (a
// sealed secret copied to another user does not open); without one it is stored as it is, and a copy of
// Redis holds every user's second factor (docs/security.md says so). Stored values say which:
// "s1.<base64url(nonce|ciphertext)>" or "p.<secret>".

// Sealer seals and opens stored secrets; the zero value (no key) stores them in the clear.
type Sealer struct{ aead cipher.AEAD }

// ErrSealed is a stored secret that needs the key, which is not configured (or another key's).
var ErrSealed = errors.New("mfa: the TOTP secret is sealed with a key this server does not have (auth.mfa.secretKeyFile)")

// LoadSealer reads a key file: 32 random bytes in base64 (`openssl rand -base64 32`). An empty path
// is the zero Sealer.
func LoadSealer(path string) (Sealer, error) {
	if path == "" {
		return Sealer{}, nil
	}
	s, err := secretfile.Read(path)
	if err != nil {
		return Sealer{}, fmt.Errorf("auth.mfa.secretKeyFile: %w", err)
	}
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(key) != 32 {
		return Sealer{}, fmt.Errorf("auth.mfa.secretKeyFile %s: want 32 random bytes in base64 (openssl rand -base64 32)", path)
	}
	return NewSealer(key)
}

// NewSealer seals with a 32-byte key.
func NewSealer(key []byte) (Sealer, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return Sealer{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return Sealer{}, err
	}
	return Sealer{aead: aead}, nil
}

func (s Sealer) seal(userID, secret string) string {
	if s.aead == nil {
		return "p." + secret
	}
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return "s1." + base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, []byte(secret), []byte(userID)))
}

func (s Sealer) open(userID, stored string) (string, error) {
	switch {
	case strings.HasPrefix(stored, "p."):
		return stored[2:], nil
	case strings.HasPrefix(stored, "s1."):
		if s.aead == nil {
			return "", ErrSealed
		}
		b, err := base64.RawURLEncoding.DecodeString(stored[3:])
		n := s.aead.NonceSize()
		if err != nil || len(b) < n {
			return "", ErrSealed
		}
		plain, err := s.aead.Open(nil, b[:n], b[n:], []byte(userID))
		if err != nil {
			return "", ErrSealed
		}
		return string(plain), nil
	}
	return "", fmt.Errorf("mfa: a stored secret of unknown form")
}
