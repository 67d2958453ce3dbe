package oauth

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/ory/fosite"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/claims"
	"github.com/formsservice/formsservice/services/auth/federation"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/store"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
)

// Token is /oauth2/token: the authorization_code (with PKCE), refresh_token and client_credentials
// grants; a client authenticates with its secret or, for private_key_jwt, a signed assertion.
func (h *Handler) Token(w http.ResponseWriter, r *http.Request, clientKey string) {
	start := time.Now()
	rt := h.realm()
	tr := h.store.NewTokenRequest(r.Context())
	ctx := tr.Context()
	grant := "other"
	if r.ParseForm() == nil {
		grant = grantLabel(r.PostForm.Get("grant_type"))
	}
	outcome := "ok"
	defer func() {
		h.metrics.tokenLatency.WithLabelValues(grant, outcome).Observe(time.Since(start).Seconds())
	}()
	fail := func(ar fosite.AccessRequester, err error) {
		// A PKCE challenge checked from the read-ahead is marked checked, as its read would have (D43).
		if serr := tr.SettleChecks(); serr != nil && !web.IsUnavailable(err) {
			err = serr
		}
		err = h.tokenError(ctx, r, err)
		if grant == grantClientCredentials {
			var reason string
			reason, err = machineError(err)
			h.auditMachine(ctx, rt, r, ar, reason)
		}
		outcome = fosite.ErrorToRFC6749Error(err).ErrorField
		rt.Provider.WriteAccessError(ctx, w, ar, err)
	}

	// The per-address rate limit and a pure read of the records the grant will ask for: one round trip
	// (D43). What the read found is kept only once the rate limit let the request through.
	rl := rt.Config.Auth.RateLimit
	var ipRate *throttle.Queued
	var ahead *store.Prefetch
	_ = h.throttle.Pipelined(ctx, func(p redis.Pipeliner) error { // each answer carries its own error
		ipRate = h.throttle.Queue(ctx, p, throttle.Rate{Kind: "token-ip", Who: clientKey, Limit: rl.PerIP, Window: rl.Window.D()})
		prefix, suffix := users.KeyAffixes()
		ahead = tr.QueueReadAhead(p, r.PostForm, rt.Strategy, prefix, suffix)
		return nil
	})
	if wait, err := ipRate.Wait(); !h.web.RateAnswer(w, "token-ip", wait, err) {
		outcome = "rate_limited"
		return
	}
	tr.Keep(ahead)
	if name, ok := web.RepeatedParam(r.PostForm); ok { // RFC 6749 3.2: never more than once
		fail(nil, fosite.ErrInvalidRequest.WithHintf("The parameter %s was sent more than once.", name))
		return
	}
	ar, err := rt.Provider.NewAccessRequest(ctx, r, claims.NewSession())
	if err == nil && grant == grantClientCredentials {
		err = machineGrant(ar)
	}
	if err != nil {
		fail(ar, err)
		return
	}
	if limited, err := h.subjectChecks(ctx, w, r, rt, tr, ar, grant); limited {
		outcome = "rate_limited"
		return
	} else if err != nil {
		fail(ar, err)
		return
	}
	resp, err := rt.Provider.NewAccessResponse(ctx, ar)
	if refused := (*store.RateRefusal)(nil); errors.As(err, &refused) {
		// Refused by the user's rate limit before the unit wrote anything: the code (its PKCE challenge,
		// checked right, unmarked) or refresh token stays unused, so the client may try again after the wait.
		h.web.RateRefused(w, "token-user", refused.Wait)
		outcome = "rate_limited"
		return
	}
	if err != nil {
		fail(ar, err)
		return
	}
	if grant == grantClientCredentials {
		h.auditMachine(ctx, rt, r, ar, "")
	}
	h.metrics.tokens.WithLabelValues(grant).Inc()
	rt.Provider.WriteAccessResponse(ctx, w, ar, resp)
}

// subjectChecks are the checks of the grant's subject before tokens are issued: a refresh re-reads its
// user and counts the user's rate limit (D45); a client's own token counts the client's, of its own
// kind; a code exchange has its unit count the user's (D43). limited: a rate limit refused the request
// (answered here); err: the request fails with it.
func (h *Handler) subjectChecks(ctx context.Context, w http.ResponseWriter, r *http.Request, rt *realm.Realm, tr *store.TokenRequest,
	ar fosite.AccessRequester, grant string) (limited bool, err error) {
	rl := rt.Config.Auth.RateLimit
	subject := ar.GetSession().GetSubject()
	userRate := throttle.Rate{Kind: "token-user", Who: subject, Limit: rl.PerUser, Window: rl.Window.D()}
	switch {
	case ar.GetGrantTypes().ExactOne("refresh_token"):
		user, ok := h.refreshUser(ctx, w, tr, userRate)
		if !ok {
			return true, nil
		}
		return false, h.refreshIdentity(ctx, rt, ar, user)
	case grant == grantClientCredentials:
		if !h.web.RateAllowed(w, r, rt, "token-client", subject, rl.PerUser) {
			h.auditMachine(ctx, rt, r, ar, "rate_limited")
			return true, nil
		}
	default:
		// A code exchange's per-user rate limit: counted by the exchange's unit before it writes anything,
		// on a single server; on a Cluster (another slot than the family's) in a call of its own (D43).
		if !tr.CountInUnit(userRate) && !h.web.RateAllowed(w, r, rt, "token-user", subject, rl.PerUser) {
			return true, nil
		}
	}
	return false, nil
}

// refreshUser is how a refresh re-reads its user and counts the user's rate limit. On a single server
// the read-ahead read the user already and the refresh's unit counts the limit (D45): no round trip
// here. Otherwise both go in one round trip of their own (D38); ok is false when that limit refused the
// request (answered).
func (h *Handler) refreshUser(ctx context.Context, w http.ResponseWriter, tr *store.TokenRequest, userRate throttle.Rate) (user func() (*users.User, error), ok bool) {
	subject := userRate.Who
	if tr.CountInUnit(userRate) {
		if fields, ok := tr.PrefetchedUser(subject); ok {
			return func() (*users.User, error) { return users.FromFields(subject, fields) }, true
		}
		return func() (*users.User, error) { return h.users.ByID(ctx, subject) }, true
	}
	var rate *throttle.Queued
	_ = h.throttle.Pipelined(ctx, func(p redis.Pipeliner) error { // each answer carries its own error
		rate = h.throttle.Queue(ctx, p, userRate)
		user = h.users.QueueByID(ctx, p, subject)
		return nil
	})
	wait, err := rate.Wait()
	return user, h.web.RateAnswer(w, "token-user", wait, err)
}

// refreshIdentity re-reads the user on a refresh grant (user: the read, sent already): a deleted or
// disabled user gets no new tokens, and a changed name or address reaches the next id_token.
func (h *Handler) refreshIdentity(ctx context.Context, rt *realm.Realm, ar fosite.AccessRequester, user func() (*users.User, error)) error {
	sess, ok := ar.GetSession().(*claims.Session)
	if !ok {
		return fosite.ErrServerError.WithDebug("unexpected session type")
	}
	// The absolute lifetime of a grant counts from the sign-in that started it (the session's auth_time,
	// carried by every refresh), however often it was refreshed since (ASVS 3.3.4).
	if life := rt.Config.Auth.FamilyLifetime.D(); life > 0 {
		if at := sess.IDTokenClaims().AuthTime; !at.IsZero() && time.Since(at) > life {
			_ = h.store.RevokeFamily(ctx, ar.GetID())
			h.signOn.Revoked("family_expired", 1)
			return fosite.ErrInvalidGrant.WithHint("This grant has reached its absolute lifetime; sign in again.")
		}
	}
	u, err := user()
	if err == nil && u.Disabled {
		err = users.ErrNotFound
	}
	if errors.Is(err, users.ErrNotFound) {
		_ = h.store.RevokeFamily(ctx, ar.GetID())
		h.signOn.Revoked("user_deleted", 1)
		return fosite.ErrInvalidGrant.WithHint("The user of this grant no longer exists or is disabled.")
	}
	if err != nil {
		return err
	}
	if err := h.recheck(ctx, rt, ar, sess); err != nil {
		return err
	}
	cl := rt.Clients[ar.GetClient().GetID()]
	claims.Refresh(sess, u, ar.GetGrantedScopes(), cl != nil && cl.AccessTokenGroups)
	return nil
}

// recheck asks the upstream of a grant signed in through a connector whether it still vouches for the
// person (D78), when the connector's recheckEvery has passed; the new state goes into sess, which the
// refresh stores with its tokens. A result that ends the grant revokes its whole family, as a reused
// refresh token does, and answers invalid_grant: the client signs the person in again.
func (h *Handler) recheck(ctx context.Context, rt *realm.Realm, ar fosite.AccessRequester, sess *claims.Session) error {
	if sess.Upstream == nil || h.federation == nil {
		return nil
	}
	connector := sess.Upstream.Connector
	// Not cancelled with the request: a client that gives up must not make its upstream look down (which
	// onUpstreamDown end would answer by ending the grant); the upstream client's timeout bounds it.
	result, err := h.federation.Recheck(context.WithoutCancel(ctx), rt, sess.Subject, sess.Upstream)
	h.metrics.rechecks.WithLabelValues(connector, result).Inc()
	switch result {
	case federation.RecheckNotDue, federation.RecheckOK:
		return nil
	case federation.RecheckUnreachableKept:
		h.log.Warn("refresh: the connector's upstream did not answer; the grant refreshes unchecked (onUpstreamDown keep)", "connector", connector, "err", err)
		h.audit.Record(ctx, audit.Event{Kind: audit.UpstreamRecheck, Outcome: audit.Failure, Reason: "unreachable", User: sess.Subject,
			Client: ar.GetClient().GetID(), Detail: map[string]string{"connector": connector, "grant": "kept"}})
		return nil
	}
	reason := result
	if result == federation.RecheckUnreachableEnd {
		reason = "unreachable"
	}
	if err != nil {
		h.log.Info("refresh: the connector's re-check ends the grant", "connector", connector, "reason", reason, "err", err)
	}
	if rerr := h.store.RevokeFamily(ctx, ar.GetID()); rerr != nil {
		return rerr
	}
	h.signOn.Revoked("upstream_recheck", 1)
	h.audit.Record(ctx, audit.Event{Kind: audit.UpstreamRecheck, Outcome: audit.Failure, Reason: reason, User: sess.Subject,
		Client: ar.GetClient().GetID(), Detail: map[string]string{"connector": connector, "grant": "ended"}})
	return fosite.ErrInvalidGrant.WithHint("The provider this grant was signed in through no longer vouches for it; sign in again.")
}

// tokenError maps storage outcomes to the OAuth errors they mean: a replayed code or reused refresh
// token is invalid_grant (its family is revoked by then), an unreachable store is
// temporarily_unavailable (503) rather than a 500. It never logs a token or code.
func (h *Handler) tokenError(ctx context.Context, r *http.Request, err error) error {
	switch {
	case errors.Is(err, store.ErrReplay):
		return fosite.ErrInvalidGrant.WithHint("The code or refresh token was already used; every token of this grant is revoked.")
	case errors.Is(err, fosite.ErrInvalidatedAuthorizeCode):
		// A replay that raced the first exchange past fosite's own check.
		if family, _, ok := store.Family(r.PostForm.Get("code")); ok {
			_ = h.store.RevokeFamily(ctx, family)
		}
		return fosite.ErrInvalidGrant.WithHint("The authorization code has already been used.")
	case web.IsUnavailable(err):
		h.log.Warn("token: store unavailable", "err", err)
		return fosite.ErrTemporarilyUnavailable.WithHint("The service is briefly unavailable; try again.")
	}
	if rfc := fosite.ErrorToRFC6749Error(err); rfc.CodeField >= 500 {
		h.log.Error("token request failed", "error", rfc.ErrorField, "debug", rfc.DebugField)
	}
	return err
}
