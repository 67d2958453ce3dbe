package store

import (
	"context"
	"net/url"
	"sync"

	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/redis/go-redis/v9"
)

// TokenRequest is one token request's state in the store, held by the token endpoint: the memo of
// what its reads found (D38), the read-ahead of the records its grant will ask for (D43), the user a
// refresh's read-ahead found (D45) and the per-user rate limit its unit counts (D43, D45). fosite calls
// the store with a context only, so the request's context carries the same memo (Context): every
// step of the state is still one the handler takes, by a method of this value, at its call site.
type TokenRequest struct {
	s   *Store
	ctx context.Context
}

// NewTokenRequest starts the store's state of one token request.
func (s *Store) NewTokenRequest(ctx context.Context) *TokenRequest {
	return &TokenRequest{s: s, ctx: WithRequestMemo(ctx)}
}

// Context is the request's context for fosite: the store's reads find the memo there.
func (t *TokenRequest) Context() context.Context { return t.ctx }

// QueueReadAhead queues on p the pure read of the records the form's grant will ask for (D43): a
// refresh token's record (with its user on a single server: the user's hash at userKeyPrefix + id +
// userKeySuffix, D45), or a code's with its OpenID Connect and PKCE records. strategy names the records
// as the provider does. It returns nil when the form names none (a malformed or repeated one included:
// fosite refuses those without reading).
func (t *TokenRequest) QueueReadAhead(p redis.Pipeliner, form url.Values, strategy oauth2.CoreStrategy, userKeyPrefix, userKeySuffix string) *Prefetch {
	switch form.Get("grant_type") {
	case "refresh_token":
		if v := form["refresh_token"]; len(v) == 1 {
			return t.s.QueueRefreshAndUser(t.ctx, p, strategy.RefreshTokenSignature(t.ctx, v[0]), userKeyPrefix, userKeySuffix)
		}
	case "authorization_code":
		if v := form["code"]; len(v) == 1 {
			return t.s.QueueCode(t.ctx, p, strategy.AuthorizeCodeSignature(t.ctx, v[0]))
		}
	}
	return nil
}

// Keep keeps what the read-ahead found, once the rate limit let the request through.
func (t *TokenRequest) Keep(p *Prefetch) { p.Keep(t.ctx) }

// CountInUnit has the unit of the code exchange or refresh count r first, once, before it writes
// anything; false when the store cannot (on a Cluster, where the unit's slot is the family's): the
// caller then counts r in a call of its own.
func (t *TokenRequest) CountInUnit(r UnitRate) bool {
	if !t.s.CountsRatesInUnit() {
		return false
	}
	WithUnitRate(t.ctx, r)
	return true
}

// PrefetchedUser takes (once) the fields of user subject's hash that the read-ahead of a refresh read:
// empty when there is no such user; ok is false when it read none for that subject.
func (t *TokenRequest) PrefetchedUser(subject string) (fields map[string]string, ok bool) {
	return t.s.PrefetchedUser(t.ctx, subject)
}

// SettleChecks writes what a failed request still owes (Store.SettleChecks).
func (t *TokenRequest) SettleChecks() error { return t.s.SettleChecks(t.ctx) }

type memoKey struct{}

// memo remembers the authorization code a token request read, so that fosite's second read of the same
// code within one request (it reads it in HandleTokenEndpointRequest and again in
// PopulateTokenEndpointResponse) costs no round trip and no decoding. It lives only as long as the
// request; the code's single use is still decided by the store's atomic invalidation.
//
// It also carries what the code's own read found of the family's OpenID Connect record (oidc, the raw
// value by family), so that the id_token step reads it from here and the exchange's unit deletes it
// (oidcGone), and which PKCE records the read that checked them also marked checked (pkceChecked): the
// fold of D38, two round trips fewer per exchange.
//
// Since D43 it also holds what the request's prefetch read (fetched: kind + ":" + signature -> the
// active record, taken once by the read fosite asks for; prefetch.go), the PKCE challenges answered from
// it (pkceFetched: family -> signature) and those fosite then deleted, whose marking as checked goes into
// the code's claim (pkcePending: family -> signature, until the unit that marks them commits; the rest
// SettleChecks writes).
type memo struct {
	mu          sync.Mutex
	codes       map[string]fosite.Requester
	oidc        map[string]string
	oidcGone    map[string]bool
	pkceChecked map[string]bool
	fetched     map[string]string
	pkceFetched map[string]string
	pkcePending map[string]string
	rate        *UnitRate
	user        string            // the subject a refresh's prefetch read the user of (QueueRefreshAndUser)
	userFields  map[string]string // that user's hash as read
}

// WithRequestMemo returns a context for one token request.
func WithRequestMemo(ctx context.Context) context.Context {
	return context.WithValue(ctx, memoKey{}, &memo{codes: map[string]fosite.Requester{}, oidc: map[string]string{}, oidcGone: map[string]bool{},
		pkceChecked: map[string]bool{}, fetched: map[string]string{}, pkceFetched: map[string]string{}, pkcePending: map[string]string{}})
}

func memoOf(ctx context.Context) *memo {
	m, _ := ctx.Value(memoKey{}).(*memo)
	return m
}
