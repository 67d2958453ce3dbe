package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/ory/fosite"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/store"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
)

// token is /oauth2/token: the authorization_code (with PKCE) and refresh_token grants.
func (s *Service) token(w http.ResponseWriter, r *http.Request, clientKey string) {
	start := time.Now()
	rt := s.rt()
	ctx := store.WithRequestMemo(r.Context())
	grant := "other"
	if r.ParseForm() == nil {
		grant = grantLabel(r.PostForm.Get("grant_type"))
	}
	outcome := "ok"
	defer func() {
		s.metrics.tokenLatency.WithLabelValues(grant, outcome).Observe(time.Since(start).Seconds())
	}()
	fail := func(ar fosite.AccessRequester, err error) {
		// A PKCE challenge checked from the prefetch is marked checked, as its read would have (D43).
		if serr := s.store.SettleChecks(ctx); serr != nil && !isUnavailable(err) {
			err = serr
		}
		err = s.tokenError(ctx, r, err)
		outcome = fosite.ErrorToRFC6749Error(err).ErrorField
		rt.provider.WriteAccessError(ctx, w, ar, err)
	}

	// The per-address rate limit and a pure read of the records the grant will ask for: one round trip
	// (D43). What the read found is used only once the rate limit let the request through.
	rl := rt.cfg.Auth.RateLimit
	var ipRate *throttle.Queued
	var pf *store.Prefetch
	_ = s.throttle.Pipelined(ctx, func(p redis.Pipeliner) error { // each answer carries its own error
		ipRate = s.throttle.Queue(ctx, p, throttle.Rate{Kind: "token-ip", Who: clientKey, Limit: rl.PerIP, Window: rl.Window.D()})
		pf = s.prefetch(ctx, p, rt, r.PostForm)
		return nil
	})
	if wait, err := ipRate.Wait(); !s.rateAnswer(w, "token-ip", wait, err) {
		outcome = "rate_limited"
		return
	}
	pf.Keep(ctx)
	if name, ok := repeatedParam(r.PostForm); ok { // RFC 6749 3.2: never more than once
		fail(nil, fosite.ErrInvalidRequest.WithHintf("The parameter %s was sent more than once.", name))
		return
	}
	ar, err := rt.provider.NewAccessRequest(ctx, r, newSession())
	if err != nil {
		fail(ar, err)
		return
	}
	subject := ar.GetSession().GetSubject()
	if !ar.GetGrantTypes().ExactOne("refresh_token") {
		// A code exchange's per-user rate limit: counted by the exchange's unit before it writes anything,
		// on a single server; on a Cluster (another slot than the family's) in a call of its own (D43).
		userRate := throttle.Rate{Kind: "token-user", Who: subject, Limit: rl.PerUser, Window: rl.Window.D()}
		if s.store.CountsRatesInUnit() {
			store.WithUnitRate(ctx, userRate)
		} else if !s.rateAllowed(w, r, rt, "token-user", subject, rl.PerUser) {
			outcome = "rate_limited"
			return
		}
	} else {
		user, ok := s.refreshUser(ctx, w, rt, subject)
		if !ok {
			outcome = "rate_limited"
			return
		}
		if err := s.refreshIdentity(ctx, ar, user); err != nil {
			fail(ar, err)
			return
		}
	}
	resp, err := rt.provider.NewAccessResponse(ctx, ar)
	if refused := (*store.RateRefusal)(nil); errors.As(err, &refused) {
		// Refused by the user's rate limit before the unit wrote anything: the code (its PKCE challenge,
		// checked right, unmarked) or refresh token stays unused, so the client may try again after the wait.
		s.rateRefused(w, "token-user", refused.Wait)
		outcome = "rate_limited"
		return
	}
	if err != nil {
		fail(ar, err)
		return
	}
	s.metrics.tokens.WithLabelValues(grant).Inc()
	rt.provider.WriteAccessResponse(ctx, w, ar, resp)
}

// refreshUser is how a refresh re-reads its user and counts the user's rate limit. On a single server
// the prefetch read the user already and the refresh's unit counts the limit (D45): no round trip here.
// Otherwise both go in one round trip of their own (D38); ok is false when that limit refused the
// request (answered).
func (s *Service) refreshUser(ctx context.Context, w http.ResponseWriter, rt *runtime, subject string) (user func() (*users.User, error), ok bool) {
	rl := rt.cfg.Auth.RateLimit
	userRate := throttle.Rate{Kind: "token-user", Who: subject, Limit: rl.PerUser, Window: rl.Window.D()}
	if s.store.CountsRatesInUnit() {
		store.WithUnitRate(ctx, userRate)
		if fields, ok := s.store.PrefetchedUser(ctx, subject); ok {
			return func() (*users.User, error) { return users.FromFields(subject, fields) }, true
		}
		return func() (*users.User, error) { return s.users.ByID(ctx, subject) }, true
	}
	var rate *throttle.Queued
	_ = s.throttle.Pipelined(ctx, func(p redis.Pipeliner) error { // each answer carries its own error
		rate = s.throttle.Queue(ctx, p, userRate)
		user = s.users.QueueByID(ctx, p, subject)
		return nil
	})
	wait, err := rate.Wait()
	return user, s.rateAnswer(w, "token-user", wait, err)
}

// prefetch queues on p the pure read of the records the token request's grant will ask for (D43): a
// refresh token's record (with its user on a single server, D45), or a code's with its OpenID Connect
// and PKCE records; nil when the form names none (a malformed or repeated one included: fosite refuses
// those without reading).
func (s *Service) prefetch(ctx context.Context, p redis.Pipeliner, rt *runtime, form url.Values) *store.Prefetch {
	switch form.Get("grant_type") {
	case "refresh_token":
		if v := form["refresh_token"]; len(v) == 1 {
			prefix, suffix := users.KeyAffixes()
			return s.store.QueueRefreshAndUser(ctx, p, rt.strategy.RefreshTokenSignature(ctx, v[0]), prefix, suffix)
		}
	case "authorization_code":
		if v := form["code"]; len(v) == 1 {
			return s.store.QueueCode(ctx, p, rt.strategy.AuthorizeCodeSignature(ctx, v[0]))
		}
	}
	return nil
}

// refreshIdentity re-reads the user on a refresh grant (user: the read, sent already): a deleted or
// disabled user gets no new tokens, and a changed name or address reaches the next id_token.
func (s *Service) refreshIdentity(ctx context.Context, ar fosite.AccessRequester, user func() (*users.User, error)) error {
	sess, ok := ar.GetSession().(*Session)
	if !ok {
		return fosite.ErrServerError.WithDebug("unexpected session type")
	}
	// The absolute lifetime of a grant counts from the sign-in that started it (the session's auth_time,
	// carried by every refresh), however often it was refreshed since (ASVS 3.3.4).
	if life := s.rt().cfg.Auth.FamilyLifetime.D(); life > 0 {
		if at := sess.IDTokenClaims().AuthTime; !at.IsZero() && time.Since(at) > life {
			_ = s.store.RevokeFamily(ctx, ar.GetID())
			s.metrics.revocations.WithLabelValues("family_expired").Inc()
			return fosite.ErrInvalidGrant.WithHint("This grant has reached its absolute lifetime; sign in again.")
		}
	}
	u, err := user()
	if err == nil && u.Disabled {
		err = users.ErrNotFound
	}
	if errors.Is(err, users.ErrNotFound) {
		_ = s.store.RevokeFamily(ctx, ar.GetID())
		s.metrics.revocations.WithLabelValues("user_deleted").Inc()
		return fosite.ErrInvalidGrant.WithHint("The user of this grant no longer exists or is disabled.")
	}
	if err != nil {
		return err
	}
	sess.Username = username(u, ar.GetGrantedScopes())
	sess.IDTokenClaims().Extra = identityClaims(u, ar.GetGrantedScopes())
	return nil
}

// tokenError maps storage outcomes to the OAuth errors they mean: a replayed code or reused refresh
// token is invalid_grant (its family is revoked by then), an unreachable store is
// temporarily_unavailable (503) rather than a 500. It never logs a token or code.
func (s *Service) tokenError(ctx context.Context, r *http.Request, err error) error {
	switch {
	case errors.Is(err, store.ErrReplay):
		return fosite.ErrInvalidGrant.WithHint("The code or refresh token was already used; every token of this grant is revoked.")
	case errors.Is(err, fosite.ErrInvalidatedAuthorizeCode):
		// A replay that raced the first exchange past fosite's own check.
		if family, _, ok := store.Family(r.PostForm.Get("code")); ok {
			_ = s.store.RevokeFamily(ctx, family)
		}
		return fosite.ErrInvalidGrant.WithHint("The authorization code has already been used.")
	case isUnavailable(err):
		s.log.Warn("token: store unavailable", "err", err)
		return fosite.ErrTemporarilyUnavailable.WithHint("The service is briefly unavailable; try again.")
	}
	if rfc := fosite.ErrorToRFC6749Error(err); rfc.CodeField >= 500 {
		s.log.Error("token request failed", "error", rfc.ErrorField, "debug", rfc.DebugField)
	}
	return err
}

// revoke is /oauth2/revoke (RFC 7009): revoking any token of a grant revokes the whole grant.
func (s *Service) revoke(w http.ResponseWriter, r *http.Request) {
	rt := s.rt()
	err := rt.provider.NewRevocationRequest(r.Context(), r)
	if err == nil {
		s.metrics.revocations.WithLabelValues("revoke").Inc()
		s.revoked(r.Context(), callerID(r), r.PostForm.Get("token"))
	} else if isUnavailable(err) {
		err = fosite.ErrTemporarilyUnavailable
	}
	rt.provider.WriteRevocationResponse(r.Context(), w, err)
}

// introspect is /oauth2/introspect (RFC 7662) for resource servers (a confidential client). A token of a user who no longer exists is inactive.
func (s *Service) introspect(w http.ResponseWriter, r *http.Request) {
	rt := s.rt()
	ctx := r.Context()
	// Only a resource server may introspect: a confidential client authenticated with HTTP Basic (fosite
	// checks the secret). fosite would also take any access token as the caller's credential (a bearer
	// header, or access_token in the form), which would let every user's app probe every token.
	_ = r.ParseForm()
	id, _, basic := r.BasicAuth()
	if cl, ok := rt.clients[id]; !basic || !ok || cl.IsPublic() || r.Form.Has("access_token") {
		s.audit.Record(ctx, audit.Event{Kind: audit.Introspection, Outcome: audit.Failure, Reason: "unauthorized", Client: knownClient(rt, id)})
		w.Header().Set("WWW-Authenticate", `Basic realm="`+rt.issuer+`"`)
		rt.provider.WriteIntrospectionError(ctx, w, fosite.ErrRequestUnauthorized.WithHint("Introspection needs a confidential client's credentials (HTTP Basic)."))
		return
	}
	resp, err := rt.provider.NewIntrospectionRequest(ctx, r, newSession())
	if err != nil {
		switch {
		case isUnavailable(err):
			err = fosite.ErrTemporarilyUnavailable
		case errors.Is(err, fosite.ErrInactiveToken):
			s.audit.Record(ctx, audit.Event{Kind: audit.Introspection, Outcome: audit.Failure, Reason: "inactive", Client: id})
		default: // the caller's credentials
			s.audit.Record(ctx, audit.Event{Kind: audit.Introspection, Outcome: audit.Failure, Reason: "unauthorized", Client: id})
		}
		rt.provider.WriteIntrospectionError(ctx, w, err)
		return
	}
	inactive := audit.Event{Kind: audit.Introspection, Outcome: audit.Failure, Reason: "inactive", Client: id}
	if !resp.IsActive() {
		s.audit.Record(ctx, inactive)
		rt.provider.WriteIntrospectionResponse(ctx, w, resp)
		return
	}
	ar := resp.GetAccessRequester()
	if !disclosedTo(rt.clients[id], resp.GetTokenUse(), ar) {
		inactive.Reason, inactive.Detail = "not_for_caller", map[string]string{"tokenClient": ar.GetClient().GetID()}
		s.audit.Record(ctx, inactive)
		writeJSON(w, http.StatusOK, map[string]bool{"active": false})
		return
	}
	if _, err := s.activeUser(ctx, ar.GetSession().GetSubject()); err != nil {
		if isUnavailable(err) {
			rt.provider.WriteIntrospectionError(ctx, w, fosite.ErrTemporarilyUnavailable)
			return
		}
		inactive.User, inactive.Grant = ar.GetSession().GetSubject(), ar.GetID()
		s.audit.Record(ctx, inactive)
		writeJSON(w, http.StatusOK, map[string]bool{"active": false})
		return
	}
	// Client is the resource server that asked; the token's own client is in detail.
	s.audit.Record(ctx, audit.Event{Kind: audit.Introspection, Outcome: audit.Success, Client: id, User: ar.GetSession().GetSubject(),
		Grant: ar.GetID(), Detail: map[string]string{"tokenClient": ar.GetClient().GetID()}})
	rt.provider.WriteIntrospectionResponse(ctx, w, resp)
}

// disclosedTo says whether the resource server caller may learn about a token: an access token whose aud
// names it (its client ID or one of its resources), or a token of its own (a confidential client that
// introspects its own refresh token). Any other token introspects as inactive, as RFC 7662 (2.2, 4)
// lets the server decide: before, any confidential client could read any token, other clients' refresh
// tokens included, and learn whose they were.
func disclosedTo(caller *client, use fosite.TokenUse, ar fosite.Requester) bool {
	if ar.GetClient().GetID() == caller.GetID() {
		return true
	}
	if use != fosite.AccessToken {
		return false
	}
	for _, a := range ar.GetGrantedAudience() {
		if a == caller.GetID() || slices.Contains(caller.resources, a) {
			return true
		}
	}
	return false
}

// userinfo is /oauth2/userinfo (OpenID Connect Core 5.3): the claims of the access token's user that its
// scopes allow.
func (s *Service) userinfo(w http.ResponseWriter, r *http.Request) {
	rt := s.rt()
	ctx := r.Context()
	deny := func(status int, code, desc string) {
		w.Header().Set("WWW-Authenticate", `Bearer error="`+code+`", error_description="`+desc+`"`)
		writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
	}
	// fail answers a lookup that failed: 503 when the store could not answer, else an invalid token.
	fail := func(err error) {
		if isUnavailable(err) {
			w.Header().Set("Retry-After", "5")
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "temporarily_unavailable"})
			return
		}
		deny(http.StatusUnauthorized, "invalid_token", "The access token is not valid.")
	}
	if r.URL.Query().Has("access_token") {
		// RFC 9700 4.3.2 / RFC 6750 2.3: a token in the URL leaks into logs, history and Referer.
		deny(http.StatusBadRequest, "invalid_request", "Send the access token in the Authorization header, not in the URL.")
		return
	}
	token := fosite.AccessTokenFromRequest(r)
	if token == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+rt.issuer+`"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_token", "error_description": "An access token is required."})
		return
	}
	// fosite's introspection tries every token kind (the hint only orders them): only an access token is
	// a bearer credential (RFC 6750, RFC 9700 4.14), never a refresh token or an ID token.
	use, ar, err := rt.provider.IntrospectToken(ctx, token, fosite.AccessToken, newSession())
	if err != nil {
		fail(err)
		return
	}
	if use != fosite.AccessToken {
		deny(http.StatusUnauthorized, "invalid_token", "The access token is not valid.")
		return
	}
	if !ar.GetGrantedScopes().Has("openid") {
		deny(http.StatusForbidden, "insufficient_scope", "The access token lacks the openid scope.")
		return
	}
	u, err := s.activeUser(ctx, ar.GetSession().GetSubject())
	if err != nil {
		fail(err)
		return
	}
	claims := identityClaims(u, ar.GetGrantedScopes())
	claims["sub"] = u.ID
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, claims)
}

// callerID is the client a token or revocation request names: HTTP Basic's user, else client_id in
// the form (fosite has authenticated it by the time this is read).
func callerID(r *http.Request) string {
	if id, _, ok := r.BasicAuth(); ok {
		return id
	}
	return r.PostForm.Get("client_id")
}

// knownClient is id when it names a registered client, else "" (an event never carries what a caller
// made up).
func knownClient(rt *runtime, id string) string {
	if _, ok := rt.clients[id]; ok {
		return id
	}
	return ""
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
