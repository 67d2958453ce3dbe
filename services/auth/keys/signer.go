package keys

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"

	"github.com/go-jose/go-jose/v3"
	"github.com/ory/fosite/token/jwt"
)

// Signer is fosite's jwt.Signer over the set: it signs with the current key (its kid in the header) and
// verifies with whichever of the current and previous keys the token's kid names, so that a rotation
// does not invalidate tokens still in use.
type Signer struct {
	set    *Set
	signer jwt.DefaultSigner
}

// Signer returns the set's jwt.Signer.
func (s *Set) Signer() *Signer {
	jwk := s.Current.jwk
	return &Signer{set: s, signer: jwt.DefaultSigner{GetPrivateKey: func(context.Context) (interface{}, error) { return jwk, nil }}}
}

var _ jwt.Signer = (*Signer)(nil)

// Generate signs claims with the current key.
func (s *Signer) Generate(ctx context.Context, claims jwt.MapClaims, header jwt.Mapper) (string, string, error) {
	return s.signer.Generate(ctx, claims, header)
}

// Validate checks the signature and the time claims and returns the token's signature part.
func (s *Signer) Validate(ctx context.Context, token string) (string, error) {
	if _, err := s.Decode(ctx, token); err != nil {
		return "", err
	}
	return s.GetSignature(ctx, token)
}

// Decode parses and verifies token. Like fosite's DefaultSigner it returns the token together with a
// *jwt.ValidationError when only the time claims fail (an expired id_token_hint is still useful).
func (s *Signer) Decode(_ context.Context, token string) (*jwt.Token, error) {
	return jwt.ParseWithClaims(token, jwt.MapClaims{}, func(t *jwt.Token) (interface{}, error) {
		if t.Method != jose.ES256 {
			return nil, errors.New("unexpected signing algorithm")
		}
		kid, _ := t.Header["kid"].(string)
		if k := s.set.Verifying(kid); k != nil {
			return k, nil
		}
		return nil, errors.New("unknown key id")
	})
}

// GetSignature returns the third part of a compact JWS.
func (s *Signer) GetSignature(_ context.Context, token string) (string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", errors.New("header, body and signature must all be set")
	}
	return parts[2], nil
}

// Hash is SHA-256, the hash that goes with ES256 (at_hash, c_hash).
func (s *Signer) Hash(_ context.Context, in []byte) ([]byte, error) {
	h := sha256.Sum256(in)
	return h[:], nil
}

// GetSigningMethodLength is the size of Hash's output.
func (s *Signer) GetSigningMethodLength(context.Context) int { return sha256.Size }
