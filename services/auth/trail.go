package auth

import (
	"context"
	"errors"
	"strconv"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/store"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/config"
)

// This file is the provider's side of the audit trail (package audit): the bounds it is kept within and
// the events that need more than one line where they happen.

// auditLimits are the trail's bounds in Redis from the configuration.
func auditLimits(a config.Auth) audit.Limits {
	return audit.Limits{Retention: a.Audit.Retention.D(), MaxEntries: a.Audit.MaxEntries}
}

// replayed is the store's report of a replayed code or a reused refresh token (its family is revoked
// by then): counted, logged, and recorded naming the grant's user and client and the request's address.
// Finding the user costs one read of the family's records, on this rare path only.
func (s *Service) replayed(ctx context.Context, kind, family string) {
	reason, k := "code_replay", audit.CodeReplay
	if kind == "refresh" {
		reason, k = "refresh_reuse", audit.RefreshReuse
	}
	s.metrics.revocations.WithLabelValues(reason).Inc()
	user, client, err := s.store.FamilyOwner(ctx, family)
	if err != nil {
		s.log.Warn("token replay: the grant's owner could not be read", "err", err)
	}
	addr, _ := audit.Origin(ctx)
	s.log.Warn("token replay detected; the grant is revoked", "kind", kind, "user", user, "client", client, "addr", addr, "grant", family)
	s.audit.Record(ctx, audit.Event{Kind: k, Outcome: audit.Failure, User: user, Client: client, Grant: family})
}

// signinFailure records a refused sign-in with the reason the person is not told.
func (s *Service) signinFailure(ctx context.Context, clientID string, u *users.User, err error) {
	reason := "bad_password"
	switch {
	case errors.Is(err, users.ErrUnknownAccount):
		reason = "unknown_account"
	case errors.Is(err, users.ErrDisabled):
		reason = "disabled"
	}
	e := audit.Event{Kind: audit.SignIn, Outcome: audit.Failure, Reason: reason, Client: clientID}
	if u != nil {
		e.User = u.ID
	}
	s.audit.Record(ctx, e)
}

// revoked records an RFC 7009 revocation: the grant, its user and client when the token named one of
// the caller's grants, else a failure (RFC 7009 answers 200 for unknown tokens too). The grant's owner
// costs one read, on this rare path only.
func (s *Service) revoked(ctx context.Context, callerID, token string) {
	family, _, ok := store.Family(token) // a refresh token
	if !ok {
		family, _, _ = store.Family((&store.Strategy{}).AccessTokenSignature(ctx, token)) // an access token's jti
	}
	user, client, err := s.store.FamilyOwner(ctx, family)
	if err != nil || family == "" || client != callerID {
		s.audit.Record(ctx, audit.Event{Kind: audit.TokenRevoked, Outcome: audit.Failure, Reason: "unknown_token", Client: callerID})
		return
	}
	s.audit.Record(ctx, audit.Event{Kind: audit.TokenRevoked, Outcome: audit.Success, User: user, Client: client, Grant: family})
}

// count renders a count for Event.Detail.
func count(n int) string { return strconv.Itoa(n) }
