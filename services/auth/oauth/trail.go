package oauth

import (
	"context"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/store"
)

// Replayed is the store's report of a replayed code or a reused refresh token (its family is revoked
// by then): counted, logged, and recorded naming the grant's user and client and the request's address.
// Finding the user costs one read of the family's records, on this rare path only.
func (h *Handler) Replayed(ctx context.Context, kind, family string) {
	reason, k := "code_replay", audit.CodeReplay
	if kind == "refresh" {
		reason, k = "refresh_reuse", audit.RefreshReuse
	}
	h.signOn.Revoked(reason, 1)
	user, client, err := h.store.FamilyOwner(ctx, family)
	if err != nil {
		h.log.Warn("token replay: the grant's owner could not be read", "err", err)
	}
	addr, _ := audit.Origin(ctx)
	h.log.Warn("token replay detected; the grant is revoked", "kind", kind, "user", user, "client", client, "addr", addr, "grant", family)
	h.audit.Record(ctx, audit.Event{Kind: k, Outcome: audit.Failure, User: user, Client: client, Grant: family})
}

// revoked records an RFC 7009 revocation: the grant, its user and client when the token named one of
// the caller's grants, else a failure (RFC 7009 answers 200 for unknown tokens too). The grant's owner
// costs one read, on this rare path only.
func (h *Handler) revoked(ctx context.Context, callerID, token string) {
	family, _, ok := store.Family(token) // a refresh token
	if !ok {
		family, _, _ = store.Family((&store.Strategy{}).AccessTokenSignature(ctx, token)) // an access token's jti
	}
	user, client, err := h.store.FamilyOwner(ctx, family)
	if err != nil || family == "" || client != callerID {
		h.audit.Record(ctx, audit.Event{Kind: audit.TokenRevoked, Outcome: audit.Failure, Reason: "unknown_token", Client: callerID})
		return
	}
	h.audit.Record(ctx, audit.Event{Kind: audit.TokenRevoked, Outcome: audit.Success, User: user, Client: client, Grant: family})
}
