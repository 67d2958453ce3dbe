package keys

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/go-jose/go-jose/v3"
	josejson "github.com/go-jose/go-jose/v3/json"
	"github.com/ory/fosite/token/jwt"
)

// Signer is fosite's jwt.Signer over the set: it signs with the current key (its kid in the header) and
// verifies with whichever of the current and previous keys the token's kid names, so that a rotation
// does not invalidate tokens still in use.
//
// It signs as fosite's DefaultSigner does (go-jose's signer, the claims serialized by go-jose's JSON, the
// header {"alg":"ES256","kid":…,"typ":"JWT"} plus the session's extra headers) with one difference: the
// go-jose signer for a header is built once and kept, where DefaultSigner builds one per token and has
// go-jose's JWT builder copy the claims first (docs/architecture.md D42). The tokens are the same byte
// for byte but for the signature (TestSigner_SameTokensAsFositesDefaultSigner).
type Signer struct {
	set      *Set
	key      *jose.JSONWebKey
	fallback jwt.DefaultSigner // headers that are not all strings, or past maxPrepared
	mu       sync.Mutex
	prepared sync.Map // string (headerKey) → jose.Signer
	count    int      // entries in prepared, under mu
}

// maxPrepared bounds the kept signers: a header is one of a handful the provider sets (none today), so
// more than this means headers that vary per token, which sign through DefaultSigner instead.
const maxPrepared = 16

// Signer returns the set's jwt.Signer.
func (s *Set) Signer() *Signer {
	jwk := s.Current.jwk
	return &Signer{set: s, key: jwk, fallback: jwt.DefaultSigner{GetPrivateKey: func(context.Context) (interface{}, error) { return jwk, nil }}}
}

var _ jwt.Signer = (*Signer)(nil)

// Generate signs claims with the current key.
func (s *Signer) Generate(ctx context.Context, claims jwt.MapClaims, header jwt.Mapper) (string, string, error) {
	if header == nil || claims == nil {
		return s.fallback.Generate(ctx, claims, header) // its error
	}
	extra := header.ToMap()
	signer := s.signerFor(extra)
	if signer == nil {
		return s.fallback.Generate(ctx, claims, header)
	}
	// What go-jose's jwt.Signed(signer).Claims(claims).CompactSerialize() does for a map, without its copy.
	payload, err := josejson.Marshal(map[string]interface{}(claims))
	if err != nil {
		return "", "", &jwt.ValidationError{Errors: jwt.ValidationErrorClaimsInvalid, Inner: err}
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", "", &jwt.ValidationError{Errors: jwt.ValidationErrorClaimsInvalid, Inner: err}
	}
	raw, err := jws.CompactSerialize()
	if err != nil {
		return "", "", err
	}
	return raw, raw[strings.LastIndexByte(raw, '.')+1:], nil
}

// signerFor returns the kept go-jose signer for a token's extra headers, building it the first time, or
// nil when the headers are not all strings (then they cannot name a kept signer) or too many differ.
func (s *Signer) signerFor(extra map[string]interface{}) jose.Signer {
	key, ok := headerKey(extra)
	if !ok {
		return nil
	}
	if v, ok := s.prepared.Load(key); ok {
		return v.(jose.Signer)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.prepared.Load(key); ok {
		return v.(jose.Signer)
	}
	if s.count >= maxPrepared {
		return nil
	}
	// The header fosite's Token.SignedString gives go-jose: typ JWT, then the extra headers over it.
	headers := map[jose.HeaderKey]interface{}{"typ": "JWT"}
	for k, v := range extra {
		headers[jose.HeaderKey(k)] = v
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: s.key}, &jose.SignerOptions{ExtraHeaders: headers})
	if err != nil {
		return nil // DefaultSigner reports it
	}
	s.prepared.Store(key, signer)
	s.count++
	return signer
}

// headerKey names a set of string-valued headers: its pairs in key order, each part NUL-terminated (a
// header name or value with a NUL in it is not kept).
func headerKey(extra map[string]interface{}) (string, bool) {
	if len(extra) == 0 {
		return "", true
	}
	names := make([]string, 0, len(extra))
	for k, v := range extra {
		sv, ok := v.(string)
		if !ok || strings.IndexByte(k, 0) >= 0 || strings.IndexByte(sv, 0) >= 0 {
			return "", false
		}
		names = append(names, k)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, k := range names {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(extra[k].(string))
		b.WriteByte(0)
	}
	return b.String(), true
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
