// Package claims is what every token of a sign-in carries: the session fosite stores with each code and
// token (Session, compact in Redis), and the claims about the person that the granted scopes allow, the
// same in the ID token, at userinfo and after every refresh.
package claims

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/handler/openid"
	"github.com/ory/fosite/token/jwt"
)

// Session is what fosite carries from the sign-in to every token: the subject, the id_token claims and
// the access token (RFC 9068) claims. It is stored with each code and token, in the compact form of
// storedSession: only what fosite does not recompute when it issues a token.
type Session struct {
	Subject   string
	Username  string
	ExpiresAt map[fosite.TokenType]time.Time
	IDClaims  *jwt.IDTokenClaims
	ATClaims  *jwt.JWTClaims
	IDHeaders *jwt.Headers
	ATHeaders *jwt.Headers
	// Machine marks a client's own grant (client_credentials): the subject is the client's ID, and no
	// person is behind the token (RFC 9068 2.2).
	Machine bool
	// Upstream is the connector the grant was signed in through, when it re-checks at refreshes (D78).
	Upstream *Upstream
}

// Upstream is what a grant signed in through a connector keeps for its re-checks at refresh: the
// connector, its state sealed (package federation: never in the clear at rest, never logged), and when
// the upstream was last asked.
type Upstream struct {
	Connector string `json:"c"`
	Sealed    string `json:"s"`
	CheckedAt int64  `json:"t"` // Unix milliseconds
}

// ForClient makes sess (the one fosite's client_credentials handler set the expiry on) a client's own:
// its subject, in the access token's sub too, is the client (RFC 9068 2.2), as is client_id.
func ForClient(sess *Session, clientID string) {
	sess.Subject, sess.Machine = clientID, true
	sess.GetJWTClaims()
	sess.ATClaims.Subject = clientID
	sess.ATClaims.Extra = map[string]interface{}{"client_id": clientID}
}

// storedSession is a Session as stored. Times are Unix milliseconds. The id_token's iss, aud, iat, exp,
// jti and hashes, and the access token's iss, aud, scope, iat, exp and jti are set afresh for every token.
type storedSession struct {
	Subject     string                     `json:"s"`
	Username    string                     `json:"u,omitempty"`
	ExpiresAt   map[fosite.TokenType]int64 `json:"e,omitempty"`
	AuthTime    int64                      `json:"a,omitempty"`
	RequestedAt int64                      `json:"r,omitempty"`
	Nonce       string                     `json:"n,omitempty"`
	IDExtra     map[string]any             `json:"i,omitempty"`
	AMR         []string                   `json:"m,omitempty"` // how the person signed in (package acr)
	ACR         string                     `json:"c,omitempty"`
	ATExtra     map[string]any             `json:"t,omitempty"`
	Machine     bool                       `json:"k,omitempty"` // a client's own grant
	Upstream    *Upstream                  `json:"x,omitempty"` // the connector's re-check (D78)
}

func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMilli(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// MarshalJSON writes the stored form.
func (s *Session) MarshalJSON() ([]byte, error) {
	st := storedSession{Subject: s.Subject, Username: s.Username, Machine: s.Machine, Upstream: s.Upstream}
	if len(s.ExpiresAt) > 0 {
		st.ExpiresAt = make(map[fosite.TokenType]int64, len(s.ExpiresAt))
		for k, v := range s.ExpiresAt {
			st.ExpiresAt[k] = unixMilli(v)
		}
	}
	if c := s.IDClaims; c != nil {
		st.AuthTime, st.RequestedAt, st.Nonce, st.IDExtra = unixMilli(c.AuthTime), unixMilli(c.RequestedAt), c.Nonce, c.Extra
		st.AMR, st.ACR = c.AuthenticationMethodsReferences, c.AuthenticationContextClassReference
	}
	if c := s.ATClaims; c != nil {
		st.ATExtra = c.Extra
	}
	return json.Marshal(st)
}

// UnmarshalJSON reads the stored form.
func (s *Session) UnmarshalJSON(b []byte) error {
	var st storedSession
	if err := json.Unmarshal(b, &st); err != nil {
		return err
	}
	*s = Session{Subject: st.Subject, Username: st.Username, Machine: st.Machine, Upstream: st.Upstream}
	if len(st.ExpiresAt) > 0 {
		s.ExpiresAt = make(map[fosite.TokenType]time.Time, len(st.ExpiresAt))
		for k, v := range st.ExpiresAt {
			s.ExpiresAt[k] = fromMilli(v)
		}
	}
	s.IDClaims = &jwt.IDTokenClaims{Subject: st.Subject, AuthTime: fromMilli(st.AuthTime), RequestedAt: fromMilli(st.RequestedAt),
		Nonce: st.Nonce, Extra: st.IDExtra, AuthenticationMethodsReferences: st.AMR, AuthenticationContextClassReference: st.ACR}
	s.ATClaims = &jwt.JWTClaims{Subject: st.Subject, Extra: st.ATExtra}
	return nil
}

var (
	_ openid.Session             = (*Session)(nil)
	_ oauth2.JWTSessionContainer = (*Session)(nil)
)

// NewSession is an empty session for fosite to read a stored one into.
func NewSession() fosite.Session { return &Session{} }

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
	c := &Session{Subject: s.Subject, Username: s.Username, ExpiresAt: maps.Clone(s.ExpiresAt), Machine: s.Machine}
	if s.Upstream != nil {
		up := *s.Upstream
		c.Upstream = &up
	}
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
