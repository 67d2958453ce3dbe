package store

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/handler/openid"
	"github.com/ory/fosite/handler/pkce"
	"github.com/redis/go-redis/v9"
)

var (
	_ fosite.ClientManager               = (*Store)(nil)
	_ oauth2.CoreStorage                 = (*Store)(nil)
	_ oauth2.TokenRevocationStorage      = (*Store)(nil)
	_ pkce.PKCERequestStorage            = (*Store)(nil)
	_ openid.OpenIDConnectRequestStorage = (*Store)(nil)
)

// GetClient returns a registered client.
func (s *Store) GetClient(ctx context.Context, id string) (fosite.Client, error) {
	return s.client(ctx, id)
}

// ClientAssertionJWTValid answers whether a client assertion's jti is still unused.
func (s *Store) ClientAssertionJWTValid(ctx context.Context, jti string) error {
	n, err := s.rdb.Exists(ctx, "auth:jti:{"+hashed(jti)+"}").Result()
	if err != nil {
		return unavailable(err)
	}
	if n > 0 {
		return fosite.ErrJTIKnown
	}
	return nil
}

// SetClientAssertionJWT remembers a client assertion's jti until it expires.
func (s *Store) SetClientAssertionJWT(ctx context.Context, jti string, exp time.Time) error {
	d := time.Until(exp)
	if d <= 0 {
		return nil
	}
	ok, err := s.rdb.SetNX(ctx, "auth:jti:{"+hashed(jti)+"}", "1", d).Result()
	if err != nil {
		return unavailable(err)
	}
	if !ok {
		return fosite.ErrJTIKnown
	}
	return nil
}

// --- authorization codes ---

// CreateAuthorizeCodeSession stores a code's request and registers its family with the subject, so that
// deleting the user can revoke it.
func (s *Store) CreateAuthorizeCodeSession(ctx context.Context, sig string, r fosite.Requester) error {
	family, rest, ok := Family(sig)
	if !ok {
		return errors.New("authorization code signature without family")
	}
	v, err := encode(r)
	if err != nil {
		return err
	}
	life := ttl(r, fosite.AuthorizeCode, s.lifetimes().Code)
	w := op{kind: "set", key: currentKey(family, "code"), value: current(rest, v), ttl: ms(life)}
	// The family joins its user's index until its code expires; issuing tokens moves its end later.
	return s.writeIndexed(ctx, family, w, "", r.GetSession().GetSubject(), time.Now().Add(life), true)
}

// GetAuthorizeCodeSession returns the code's request; a used code answers ErrInvalidatedAuthorizeCode
// with a request carrying the family ID, so that fosite revokes what the code issued. The stored session
// is read into session (the token request's): fosite checks the code's expiry on that session before
// anything else, and with an empty one it would let an expired code through that check and refuse it
// later as invalid_request instead of invalid_grant.
func (s *Store) GetAuthorizeCodeSession(ctx context.Context, sig string, session fosite.Session) (fosite.Requester, error) {
	family, rest, ok := Family(sig)
	if !ok {
		return nil, fosite.ErrNotFound
	}
	m := memoOf(ctx)
	if m != nil {
		m.mu.Lock()
		r, hit := m.codes[sig]
		m.mu.Unlock()
		if hit {
			return r, nil
		}
	}
	var r fosite.Requester
	var err error
	if v, ok := m.fromPrefetch("code", sig); ok {
		// The request's prefetch found it active, its family not revoked, and brought the OpenID Connect
		// record along (D43); the exchange's claim decides its single use.
		r, err = s.decodeInto(ctx, v, session)
	} else if m != nil {
		// A token request: the family's OpenID Connect record comes with the code (D38).
		var v, oidc string
		var revoked bool
		v, revoked, oidc, err = s.getCode(ctx, family, rest)
		if err == nil {
			m.mu.Lock()
			m.oidc[family] = oidc
			m.mu.Unlock()
			r, err = s.singleUse(ctx, family, v, revoked, "code", fosite.ErrInvalidatedAuthorizeCode, session)
		}
	} else {
		r, err = s.getSingleUse(ctx, family, "code", rest, "code", fosite.ErrInvalidatedAuthorizeCode, session)
	}
	if err == nil && m != nil {
		m.mu.Lock()
		m.codes[sig] = r
		m.mu.Unlock()
	}
	return r, err
}

// InvalidateAuthorizeCodeSession marks the code used; of any number of concurrent callers exactly one
// succeeds, the others are a replay that revokes the family. The marker lives as long as the family's
// tokens can, so that a late replay is recognised too.
//
// The family's OpenID Connect record, when the code's read brought it along (memo), goes in the same
// step: the id_token step reads it from the memo, and its own delete costs nothing (D38).
func (s *Store) InvalidateAuthorizeCodeSession(ctx context.Context, sig string) error {
	family, rest, ok := Family(sig)
	if !ok {
		return fosite.ErrNotFound
	}
	claim := op{kind: "claim", key: currentKey(family, "code"), value: rest, ttl: ms(s.markerTTL())}
	if m := memoOf(ctx); m != nil {
		ops := []op{claim}
		m.mu.Lock()
		// A PKCE challenge checked from the prefetch is marked checked by the claim (D43): the unit
		// refuses as a replay when anyone checked it meanwhile, as the read that marks it would have.
		if m.pkcePending[family] == rest {
			ops = append(ops, op{kind: "check", key: currentKey(family, "pkce"), value: rest})
		}
		oidcSig, _, found := strings.Cut(m.oidc[family], "\n")
		if found {
			m.oidcGone[family] = true
			ops = append(ops, op{kind: "del", key: currentKey(family, "oidc"), value: oidcSig})
		}
		m.mu.Unlock()
		if len(ops) > 1 {
			return s.writeAll(ctx, family, "code", ops...)
		}
	}
	return s.write(ctx, family, claim, "code", "")
}

// getSingleUse reads the record of a code or a refresh token, which is used once. A used one, or any of
// a revoked family, answers errUsed with a request carrying only the family ID; presenting a used one
// again is a replay, reported as kind. The read revokes the family in the same script that detects the
// replay: fosite answers invalid_grant for a replayed code even when its own revocation call fails, so a
// revocation left to fosite could be lost to a Redis failure between the two steps while the client was
// told the replay had been dealt with. The stored session is read into into, when not nil.
func (s *Store) getSingleUse(ctx context.Context, family, slot, sig, kind string, errUsed error, into fosite.Session) (fosite.Requester, error) {
	v, revoked, err := s.getCurrent(ctx, family, slot, sig, true)
	if err != nil {
		return nil, err
	}
	return s.singleUse(ctx, family, v, revoked, kind, errUsed, into)
}

// singleUse is getSingleUse's answer for the record v as read (revoked: the family's flag).
func (s *Store) singleUse(ctx context.Context, family, v string, revoked bool, kind string, errUsed error, into fosite.Session) (fosite.Requester, error) {
	switch {
	case v == "":
		return nil, fosite.ErrNotFound
	case v == used || revoked:
		if v == used && !revoked {
			s.onReplay(ctx, kind, family)
		}
		return familyOnly(family), errUsed
	}
	return s.decodeInto(ctx, v, into)
}

// --- PKCE and OpenID Connect sessions (keyed like the code) ---

// CreatePKCERequestSession stores the code challenge for a code. A family has one code, so it has one
// challenge, kept like its code ("signature\n" + record) under a key without the signature: evicting or
// deleting a family names every record it has (issue 22: they were keyed by signature, and outlived the
// grants they belonged to).
func (s *Store) CreatePKCERequestSession(ctx context.Context, sig string, r fosite.Requester) error {
	return s.createBySig(ctx, "pkce", sig, r)
}

// GetPKCERequestSession returns the code challenge for a code. A challenge already checked means the
// code is being presented a second time (possibly racing the first exchange): a replay, which revokes
// the family.
func (s *Store) GetPKCERequestSession(ctx context.Context, sig string, _ fosite.Session) (fosite.Requester, error) {
	family, rest, ok := Family(sig)
	if !ok {
		return nil, fosite.ErrNotFound
	}
	m := memoOf(ctx)
	if v, ok := m.fromPrefetch("pkce", sig); ok {
		// Prefetched (D43): the delete that follows leaves the marking to the code's claim.
		r, err := s.decode(ctx, v)
		if err == nil {
			m.mu.Lock()
			m.pkceFetched[family] = rest
			m.mu.Unlock()
		}
		return r, err
	}
	// In a token request fosite deletes (marks checked) the challenge right after reading it: the read
	// marks it in the same call, and the delete then costs nothing (D38).
	v, revoked, err := s.runGet(ctx, currentScript, []string{currentKey(family, "pkce"), revokedKey(family)}, rest, ms(s.markerTTL()), "1", flag(m != nil))
	if err != nil {
		return nil, err
	}
	if m != nil && v != "" && v != used && !revoked {
		m.mu.Lock()
		m.pkceChecked[family] = true
		m.mu.Unlock()
	}
	if v == used {
		if !revoked {
			s.onReplay(ctx, "code", family)
		}
		return nil, fosite.ErrNotFound
	}
	if v == "" || revoked {
		return nil, fosite.ErrNotFound
	}
	return s.decode(ctx, v)
}

// DeletePKCERequestSession marks the challenge checked (right or wrong, it is checked once); the marker
// keeps the code's expiry.
func (s *Store) DeletePKCERequestSession(ctx context.Context, sig string) error {
	family, rest, ok := Family(sig)
	if !ok {
		return nil
	}
	if m := memoOf(ctx); m != nil {
		m.mu.Lock()
		checked := m.pkceChecked[family]
		// Read from the prefetch: the code's claim marks it (or SettleChecks, when the request fails
		// before its unit).
		pending := !checked && m.pkceFetched[family] == rest
		if pending {
			m.pkcePending[family] = rest
		}
		m.mu.Unlock()
		if checked || pending {
			return nil
		}
	}
	return s.markChecked(ctx, family, rest)
}

// CreateOpenIDConnectSession stores the id_token request for a code. fosite passes the raw code here,
// so the record is named by its hash.
func (s *Store) CreateOpenIDConnectSession(ctx context.Context, code string, r fosite.Requester) error {
	return s.createBySig(ctx, "oidc", codeKey(code), r)
}

// GetOpenIDConnectSession returns the id_token request for a code.
// In a token request it is the one the code's read brought along (memo), whose family the exchange
// found not revoked.
func (s *Store) GetOpenIDConnectSession(ctx context.Context, code string, _ fosite.Requester) (fosite.Requester, error) {
	if m := memoOf(ctx); m != nil {
		family, rest, ok := Family(codeKey(code))
		m.mu.Lock()
		raw, read := m.oidc[family]
		m.mu.Unlock()
		if ok && read {
			sig, v, _ := strings.Cut(raw, "\n")
			if sig != rest || !strings.HasPrefix(v, active) {
				return nil, fosite.ErrNotFound
			}
			return s.decode(ctx, v)
		}
	}
	return s.getBySig(ctx, "oidc", codeKey(code))
}

// DeleteOpenIDConnectSession removes it (in a token request, the code's claim did already: memo).
func (s *Store) DeleteOpenIDConnectSession(ctx context.Context, code string) error {
	if m := memoOf(ctx); m != nil {
		family, _, _ := Family(code)
		m.mu.Lock()
		gone := m.oidcGone[family]
		m.mu.Unlock()
		if gone {
			return nil
		}
	}
	return s.deleteCurrent(ctx, "oidc", codeKey(code))
}

// codeKey turns a raw code "family~secret" into "family~sha256(code)".
func codeKey(code string) string {
	family, _, ok := Family(code)
	if !ok {
		return ""
	}
	return family + "~" + hashed(code)
}

// createBySig stores a code's PKCE or OpenID Connect record as the family's one record of that kind.
func (s *Store) createBySig(ctx context.Context, kind, sig string, r fosite.Requester) error {
	family, rest, ok := Family(sig)
	if !ok {
		return errors.New(kind + " session without family")
	}
	v, err := encode(r)
	if err != nil {
		return err
	}
	return s.write(ctx, family, op{kind: "set", key: currentKey(family, kind), value: current(rest, v), ttl: ms(ttl(r, fosite.AuthorizeCode, s.lifetimes().Code))}, "", "")
}

func (s *Store) getBySig(ctx context.Context, kind, sig string) (fosite.Requester, error) {
	family, rest, ok := Family(sig)
	if !ok {
		return nil, fosite.ErrNotFound
	}
	v, revoked, err := s.getCurrent(ctx, family, kind, rest, false)
	if err != nil {
		return nil, err
	}
	if v == "" || v == used || revoked {
		return nil, fosite.ErrNotFound
	}
	return s.decode(ctx, v)
}

// --- access tokens ---

// CreateAccessTokenSession stores an access token's request until the token expires.
func (s *Store) CreateAccessTokenSession(ctx context.Context, sig string, r fosite.Requester) error {
	return s.createToken(ctx, "at", sig, r, fosite.AccessToken, s.lifetimes().Access)
}

// GetAccessTokenSession returns an access token's request; a revoked family reads as not found.
func (s *Store) GetAccessTokenSession(ctx context.Context, sig string, _ fosite.Session) (fosite.Requester, error) {
	family, rest, ok := Family(sig)
	if !ok {
		return nil, fosite.ErrNotFound
	}
	v, revoked, err := s.getCurrent(ctx, family, "at", rest, false)
	if err != nil {
		return nil, err
	}
	if v == "" || v == used || revoked {
		return nil, fosite.ErrNotFound
	}
	return s.decode(ctx, v)
}

// DeleteAccessTokenSession removes one access token.
func (s *Store) DeleteAccessTokenSession(ctx context.Context, sig string) error {
	return s.deleteCurrent(ctx, "at", sig)
}

func (s *Store) createToken(ctx context.Context, kind, sig string, r fosite.Requester, tt fosite.TokenType, def time.Duration) error {
	family, rest, ok := Family(sig)
	if !ok {
		return errors.New(kind + " signature without family")
	}
	// The access and refresh token of one response are the same request: encoded once per unit (D43).
	u, _ := ctx.Value(txKey{}).(*unit)
	v, err := u.encode(r)
	if err != nil {
		return err
	}
	life := ttl(r, tt, def)
	w := op{kind: "set", key: currentKey(family, kind), value: current(rest, v), ttl: ms(life)}
	// The family stays in its user's index as long as its latest token lives (an access-only grant ends
	// with its access token; a refresh moves the end on).
	return s.writeIndexed(ctx, family, w, "", r.GetSession().GetSubject(), time.Now().Add(life), false)
}

// --- refresh tokens ---

// CreateRefreshTokenSession stores a refresh token's request until the token expires.
func (s *Store) CreateRefreshTokenSession(ctx context.Context, sig string, _ string, r fosite.Requester) error {
	return s.createToken(ctx, "rt", sig, r, fosite.RefreshToken, s.lifetimes().Refresh)
}

// GetRefreshTokenSession returns a refresh token's request. A rotated token, or any token of a revoked
// family, answers ErrInactiveToken with the family ID, which makes fosite revoke the family.
func (s *Store) GetRefreshTokenSession(ctx context.Context, sig string, _ fosite.Session) (fosite.Requester, error) {
	family, rest, ok := Family(sig)
	if !ok {
		return nil, fosite.ErrNotFound
	}
	if v, ok := memoOf(ctx).fromPrefetch("rt", sig); ok {
		// The request's prefetch found it current and active, its family not revoked (D43); the
		// rotation's claim decides its single use.
		return s.decodeInto(ctx, v, nil)
	}
	return s.getSingleUse(ctx, family, "rt", rest, "refresh", fosite.ErrInactiveToken, nil)
}

// DeleteRefreshTokenSession removes one refresh token.
func (s *Store) DeleteRefreshTokenSession(ctx context.Context, sig string) error {
	return s.deleteCurrent(ctx, "rt", sig)
}

// RotateRefreshToken retires the refresh token being exchanged; the marker keeps the token's own expiry,
// so that presenting it again at any time it could have been used is detected as reuse. Two concurrent
// exchanges of one token: one succeeds, the other is reuse and revokes the family (the winner's new
// tokens included).
func (s *Store) RotateRefreshToken(ctx context.Context, _ string, sig string) error {
	family, rest, ok := Family(sig)
	if !ok {
		return fosite.ErrNotFound
	}
	// The family's one refresh record goes; the token's signature joins the family's short list of
	// rotated ones, which is what recognises its reuse.
	return s.writeAll(ctx, family, "refresh",
		op{kind: "claim", key: currentKey(family, "rt"), value: rest, ttl: "del"},
		op{kind: "rotated", key: rotatedKey(family), value: rest})
}

// RevokeRefreshToken revokes the family (RFC 7009: revoking a refresh token revokes its grant).
func (s *Store) RevokeRefreshToken(ctx context.Context, requestID string) error {
	return s.revoke(ctx, requestID)
}

// RevokeAccessToken revokes the family as well: fosite revokes by request ID, and every token of a
// request shares it.
func (s *Store) RevokeAccessToken(ctx context.Context, requestID string) error {
	return s.revoke(ctx, requestID)
}

func (s *Store) revoke(ctx context.Context, family string) error {
	if !validFamily(family) {
		return nil
	}
	return s.write(ctx, family, op{kind: "revoke"}, "", "")
}

// deleteCurrent removes a family's current access or refresh token if it is the one named.
func (s *Store) deleteCurrent(ctx context.Context, kind, sig string) error {
	family, rest, ok := Family(sig)
	if !ok {
		return nil
	}
	return s.write(ctx, family, op{kind: "del", key: currentKey(family, kind), value: rest}, "", "")
}

// getCode reads a code like getCurrent (a used one revokes its family) with the family's OpenID Connect
// record as it is (raw: "signature\n" + record, or "").
func (s *Store) getCode(ctx context.Context, family, sig string) (v string, revoked bool, oidc string, err error) {
	res, err := codeScript.Run(ctx, s.rdb, []string{currentKey(family, "code"), revokedKey(family), currentKey(family, "oidc")}, sig, ms(s.markerTTL()), "1").Slice()
	if errors.Is(err, redis.Nil) {
		return "", false, "", nil
	}
	if err != nil {
		return "", false, "", unavailable(err)
	}
	if len(res) != 3 {
		return "", false, "", unavailable(errors.New("unexpected script reply"))
	}
	v, _ = res[0].(string)
	n, _ := res[1].(int64)
	oidc, _ = res[2].(string)
	return v, n == 1, oidc, nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
