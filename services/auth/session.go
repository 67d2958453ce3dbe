package auth

import (
	"maps"
	"slices"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/handler/openid"
	"github.com/ory/fosite/token/jwt"
)

// Session is what fosite carries from the sign-in to every token: the subject, the id_token claims and
// the access token (RFC 9068) claims. It is stored as JSON with each code and token.
type Session struct {
	Subject   string                         `json:"sub"`
	Username  string                         `json:"username,omitempty"`
	ExpiresAt map[fosite.TokenType]time.Time `json:"exp,omitempty"`
	IDClaims  *jwt.IDTokenClaims             `json:"idt"`
	ATClaims  *jwt.JWTClaims                 `json:"at"`
	IDHeaders *jwt.Headers                   `json:"-"`
	ATHeaders *jwt.Headers                   `json:"-"`
}

var (
	_ openid.Session             = (*Session)(nil)
	_ oauth2.JWTSessionContainer = (*Session)(nil)
)

func newSession() fosite.Session { return &Session{} }

// SetExpiresAt implements fosite.Session.
func (s *Session) SetExpiresAt(t fosite.TokenType, exp time.Time) {
	if s.ExpiresAt == nil {
		s.ExpiresAt = map[fosite.TokenType]time.Time{}
	}
	s.ExpiresAt[t] = exp
}

// GetExpiresAt implements fosite.Session.
func (s *Session) GetExpiresAt(t fosite.TokenType) time.Time { return s.ExpiresAt[t] }

// GetUsername implements fosite.Session.
func (s *Session) GetUsername() string { return s.Username }

// GetSubject implements fosite.Session.
func (s *Session) GetSubject() string { return s.Subject }

// SetSubject implements fosite.Session.
func (s *Session) SetSubject(sub string) { s.Subject = sub }

// IDTokenClaims implements openid.Session.
func (s *Session) IDTokenClaims() *jwt.IDTokenClaims {
	if s.IDClaims == nil {
		s.IDClaims = &jwt.IDTokenClaims{}
	}
	return s.IDClaims
}

// IDTokenHeaders implements openid.Session.
func (s *Session) IDTokenHeaders() *jwt.Headers {
	if s.IDHeaders == nil {
		s.IDHeaders = &jwt.Headers{}
	}
	return s.IDHeaders
}

// GetJWTClaims implements oauth2.JWTSessionContainer.
func (s *Session) GetJWTClaims() jwt.JWTClaimsContainer {
	if s.ATClaims == nil {
		s.ATClaims = &jwt.JWTClaims{}
	}
	return s.ATClaims
}

// GetJWTHeader implements oauth2.JWTSessionContainer.
func (s *Session) GetJWTHeader() *jwt.Headers {
	if s.ATHeaders == nil {
		s.ATHeaders = &jwt.Headers{}
	}
	return s.ATHeaders
}

// Clone copies the session (fosite clones it for each refresh); a hand-written copy instead of
// reflection, since it runs on every refresh grant.
func (s *Session) Clone() fosite.Session {
	if s == nil {
		return nil
	}
	c := &Session{Subject: s.Subject, Username: s.Username, ExpiresAt: maps.Clone(s.ExpiresAt)}
	if s.IDClaims != nil {
		idc := *s.IDClaims
		idc.Audience = slices.Clone(idc.Audience)
		idc.AuthenticationMethodsReferences = slices.Clone(idc.AuthenticationMethodsReferences)
		idc.Extra = maps.Clone(idc.Extra)
		c.IDClaims = &idc
	}
	if s.ATClaims != nil {
		atc := *s.ATClaims
		atc.Audience = slices.Clone(atc.Audience)
		atc.Scope = slices.Clone(atc.Scope)
		atc.Extra = maps.Clone(atc.Extra)
		c.ATClaims = &atc
	}
	if s.IDHeaders != nil {
		c.IDHeaders = &jwt.Headers{Extra: maps.Clone(s.IDHeaders.Extra)}
	}
	if s.ATHeaders != nil {
		c.ATHeaders = &jwt.Headers{Extra: maps.Clone(s.ATHeaders.Extra)}
	}
	return c
}
