package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/token/jwt"
)

// Strategy is fosite's JWT strategy (RFC 9068 access tokens, HMAC-signed opaque codes and refresh
// tokens) with the token's family in front of every signature, which is how the store finds a token's
// Redis Cluster slot and revocation marker from the token alone:
//
//   - codes and refresh tokens read "family~<fosite's token>";
//   - a JWT access token carries "family~<random>" as its jti, and typ "at+jwt" in its header.
type Strategy struct {
	JWT *oauth2.DefaultJWTStrategy
}

var _ oauth2.CoreStrategy = (*Strategy)(nil)

func prefixed(family, token, sig string, err error) (string, string, error) {
	if err != nil {
		return "", "", err
	}
	if !validFamily(family) {
		return "", "", errors.New("request ID is not a token family")
	}
	return family + "~" + token, family + "~" + sig, nil
}

// strip returns the family and the inner token, or empty strings for anything malformed.
func strip(token string) (string, string) {
	family, rest, ok := Family(token)
	if !ok {
		return "", ""
	}
	return family, rest
}

// signature is "family~<the inner strategy's signature of the inner token>", or "" for a malformed token.
func signature(ctx context.Context, token string, inner func(context.Context, string) string) string {
	family, rest := strip(token)
	if family == "" {
		return ""
	}
	return family + "~" + inner(ctx, rest)
}

// GenerateAuthorizeCode issues a code of the request's family.
func (s *Strategy) GenerateAuthorizeCode(ctx context.Context, r fosite.Requester) (string, string, error) {
	tok, sig, err := s.JWT.GenerateAuthorizeCode(ctx, r)
	return prefixed(r.GetID(), tok, sig, err)
}

// AuthorizeCodeSignature is "family~signature", or "" for a malformed code.
func (s *Strategy) AuthorizeCodeSignature(ctx context.Context, token string) string {
	return signature(ctx, token, s.JWT.AuthorizeCodeSignature)
}

// ValidateAuthorizeCode checks the HMAC and the expiry.
func (s *Strategy) ValidateAuthorizeCode(ctx context.Context, r fosite.Requester, token string) error {
	_, rest := strip(token)
	return s.JWT.ValidateAuthorizeCode(ctx, r, rest)
}

// GenerateRefreshToken issues a refresh token of the request's family.
func (s *Strategy) GenerateRefreshToken(ctx context.Context, r fosite.Requester) (string, string, error) {
	tok, sig, err := s.JWT.GenerateRefreshToken(ctx, r)
	return prefixed(r.GetID(), tok, sig, err)
}

// RefreshTokenSignature is "family~signature", or "" for a malformed token.
func (s *Strategy) RefreshTokenSignature(ctx context.Context, token string) string {
	return signature(ctx, token, s.JWT.RefreshTokenSignature)
}

// ValidateRefreshToken checks the HMAC and the expiry.
func (s *Strategy) ValidateRefreshToken(ctx context.Context, r fosite.Requester, token string) error {
	_, rest := strip(token)
	return s.JWT.ValidateRefreshToken(ctx, r, rest)
}

// GenerateAccessToken signs an RFC 9068 access token: typ at+jwt, a fresh jti naming the family, and a
// fresh iat (the session's claims are reused across refreshes).
func (s *Strategy) GenerateAccessToken(ctx context.Context, r fosite.Requester) (string, string, error) {
	sess, ok := r.GetSession().(oauth2.JWTSessionContainer)
	if !ok {
		return "", "", errors.New("session is not a JWT session")
	}
	claims, ok := sess.GetJWTClaims().(*jwt.JWTClaims)
	if !ok {
		return "", "", errors.New("session claims are not *jwt.JWTClaims")
	}
	family := r.GetID()
	claims.JTI = family + "~" + uuid.NewString()
	claims.IssuedAt = time.Time{}
	sess.GetJWTHeader().Add("typ", "at+jwt")
	tok, sig, err := s.JWT.GenerateAccessToken(ctx, r)
	if err != nil {
		return "", "", err
	}
	if !validFamily(family) {
		return "", "", errors.New("request ID is not a token family")
	}
	return tok, family + "~" + sig, nil // the token stays a plain JWT
}

// AccessTokenSignature reads the family from the token's jti (unverified: the signature part that
// follows must also match a stored token, and the token is verified after it is found).
func (s *Strategy) AccessTokenSignature(_ context.Context, token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || len(parts[1]) > 8<<10 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		JTI string `json:"jti"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return ""
	}
	family, _, ok := Family(claims.JTI)
	if !ok || parts[2] == "" {
		return ""
	}
	return family + "~" + parts[2]
}

// ValidateAccessToken verifies the JWT's signature and time claims.
func (s *Strategy) ValidateAccessToken(ctx context.Context, r fosite.Requester, token string) error {
	return s.JWT.ValidateAccessToken(ctx, r, token)
}
