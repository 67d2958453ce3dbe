package oauth

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	josejwt "github.com/go-jose/go-jose/v3/jwt"

	"github.com/ory/fosite"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/claims"
	"github.com/formsservice/formsservice/services/auth/realm"
)

// grantClientCredentials is RFC 6749 4.4's grant: a confidential client's token of its own.
const grantClientCredentials = "client_credentials"

// personScopes are about a person (OpenID Connect, a refresh token, the person's claims): a client's
// own token has no person, so a client_credentials request for one is invalid_scope.
var personScopes = []string{"openid", "profile", "email", "offline_access", claims.GroupsScope}

// machineGrant completes a client_credentials request fosite accepted (the client authenticated with its
// secret or an assertion, not public, every scope among the client's, every audience parameter among
// its audiences): the client must be allowed the grant; it gets exactly the scopes it asked for (none of
// a person's), and the APIs it asked for with audience or RFC 8707 resource parameters, else all of its
// audiences, as a code's token does; the subject is the client itself. No refresh token is issued.
func machineGrant(ar fosite.AccessRequester) error {
	cl := ar.GetClient()
	if !cl.GetGrantTypes().Has(grantClientCredentials) {
		return fosite.ErrUnauthorizedClient.WithHint("This client is not allowed the client_credentials grant (its grantTypes).")
	}
	for _, sc := range ar.GetRequestedScopes() {
		if slices.Contains(personScopes, sc) {
			return fosite.ErrInvalidScope.WithHintf("The scope %q is about a person; a client's own token (client_credentials) has none.", sc)
		}
	}
	resources := ar.GetRequestForm()["resource"]
	for _, res := range resources {
		if !slices.Contains(cl.GetAudience(), res) {
			return realm.ErrInvalidTarget.WithHintf("The resource %q is not an API this client may request tokens for.", res)
		}
	}
	for _, sc := range ar.GetRequestedScopes() {
		ar.GrantScope(sc)
	}
	requested := append(slices.Clone(ar.GetRequestedAudience()), resources...)
	if len(requested) == 0 {
		requested = cl.GetAudience()
	}
	for _, aud := range requested {
		ar.GrantAudience(aud)
	}
	sess, ok := ar.GetSession().(*claims.Session)
	if !ok {
		return fosite.ErrServerError.WithDebug("unexpected session type")
	}
	claims.ForClient(sess, cl.GetID())
	return nil
}

// machineError is the answer to a client_credentials request fosite refused: a public client (which
// fosite calls invalid_grant) is not authorized for the grant; a replayed assertion is invalid_client
// (RFC 7523 3: the client did not authenticate), with a hint that says why.
func machineError(err error) (reason string, answer error) {
	switch {
	case errors.Is(err, fosite.ErrJTIKnown):
		return "assertion_replay", fosite.ErrInvalidClient.WithHint("This client assertion was used before (its jti): sign a new one for every request.")
	case errors.Is(err, fosite.ErrInvalidGrant):
		return "unauthorized_client", fosite.ErrUnauthorizedClient.WithHint("A public client may not use client_credentials: it has no credentials of its own.")
	}
	return fosite.ErrorToRFC6749Error(err).ErrorField, err
}

// auditMachine records a client_credentials request: the client acting on its own behalf, with the
// grant, scopes and APIs of the token it got, or why it got none.
func (h *Handler) auditMachine(ctx context.Context, rt *realm.Realm, r *http.Request, ar fosite.AccessRequester, reason string) {
	e := audit.Event{Kind: audit.ClientCredentials, Outcome: audit.Success, Actor: audit.ActorClient, Client: rt.KnownClient(callerID(r))}
	if e.Client == "" {
		e.Client = rt.KnownClient(assertionIssuer(r))
	}
	if ar != nil && ar.GetClient() != nil && ar.GetClient().GetID() != "" {
		e.Client = rt.KnownClient(ar.GetClient().GetID())
	}
	if reason != "" {
		e.Outcome, e.Reason = audit.Failure, reason
	} else {
		e.Grant = ar.GetID()
		e.Detail = map[string]string{"scope": strings.Join(ar.GetGrantedScopes(), " "), "aud": strings.Join(ar.GetGrantedAudience(), " ")}
	}
	h.audit.Record(ctx, e)
}

// assertionIssuer is the client a private_key_jwt request's assertion names (its iss), read without
// checking the signature: for the audit event of a refused request that sent no client_id (RFC 7523
// allows that), so that a replayed assertion — signed by the client once, so evidence of a theft — is
// kept under its client (audit.TrailOf).
func assertionIssuer(r *http.Request) string {
	raw := r.PostForm.Get("client_assertion")
	if raw == "" || len(raw) > 8192 {
		return ""
	}
	tok, err := josejwt.ParseSigned(raw)
	if err != nil {
		return ""
	}
	var c josejwt.Claims
	if tok.UnsafeClaimsWithoutVerification(&c) != nil {
		return ""
	}
	return c.Issuer
}
