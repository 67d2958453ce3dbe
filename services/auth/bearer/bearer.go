// Package bearer is the check an API of the provider's own (the admin API, /admin/v1/…) makes of the
// access token it is called with (RFC 6750): signed by the provider's keys, by its issuer, not expired
// on the injected clock, for the API's audience, carrying the scope the route needs, its grant still
// live in the store (Live: the same answer introspection and userinfo give, so a revocation or a sign-out
// everywhere takes effect at once), and, for a person's token, of a member of the admin group. A refusal
// is RFC 6750's WWW-Authenticate with an RFC 9457 problem body (docs/architecture.md D50).
package bearer

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v3"
	josejwt "github.com/go-jose/go-jose/v3/jwt"

	"github.com/formsservice/formsservice/services/auth/keys"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
)

// AdminPath is the admin API's path below the issuer; its audience is the issuer followed by it.
const AdminPath = "/admin"

// The admin API's scopes: one read and one write scope per area (D50).
const (
	FormsRead  = "forms:read"
	FormsWrite = "forms:write"
	UsersRead  = "users:read"
	UsersWrite = "users:write"
	AuditRead  = "audit:read"
)

// AdminScopes lists every scope of the admin API.
var AdminScopes = []string{FormsRead, FormsWrite, UsersRead, UsersWrite, AuditRead}

// AdminAudience is the aud an access token for the admin API of rt's issuer carries: a client lists it
// in its audiences to be given such tokens, and may narrow a token to it with resource=.
func AdminAudience(rt *realm.Realm) string { return rt.Issuer + AdminPath }

// Principal is who called: the token's subject (a user's ID, or for a machine the client's ID), the
// client the token was issued to, its granted scopes, and whether no person is behind it.
type Principal struct {
	Subject  string   `json:"sub"`
	ClientID string   `json:"client_id"`
	Scopes   []string `json:"scopes"`
	Machine  bool     `json:"machine"`
	// Groups are a person's groups (empty for a machine).
	Groups []string `json:"groups,omitempty"`
}

// Need is what a route asks of a token: at least one of AnyScope (every route of the admin API names
// the scope of its area and kind: users:read for reading accounts).
type Need struct {
	AnyScope []string
}

// Options are the checker's dependencies.
type Options struct {
	Realm *realm.Source
	Keys  *keys.Set
	Users *users.Store
	Now   func() time.Time // the clock expiry is checked on (default time.Now)
}

// Checker checks the bearer tokens of the admin API.
type Checker struct {
	realm *realm.Source
	keys  *keys.Set
	users *users.Store
	now   func() time.Time
}

// New builds a checker.
func New(o Options) *Checker {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Checker{realm: o.Realm, keys: o.Keys, users: o.Users, now: o.Now}
}

// Handle is the middleware: next runs with the request's Principal only when Check accepts the token;
// any refusal is answered here (401, 403, 400 or 503).
func (c *Checker) Handle(need Need, next func(http.ResponseWriter, *http.Request, Principal)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := c.Check(r, need)
		if err != nil {
			c.Refuse(w, err)
			return
		}
		next(w, r, p)
	})
}

// Check returns the principal of the request's bearer token when the token may use a route that needs
// need; otherwise a *Refusal (or an error of the store that did not answer, which Refuse answers 503).
func (c *Checker) Check(r *http.Request, need Need) (Principal, error) {
	rt := c.realm.Current()
	if r.URL.Query().Has("access_token") {
		// RFC 9700 4.3.2, RFC 6750 2.3: a token in the URL leaks into logs; the admin API takes the header only.
		return Principal{}, refuse(http.StatusBadRequest, "invalid_request", "Send the access token in the Authorization header.", rt)
	}
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return Principal{}, &Refusal{Status: http.StatusUnauthorized, Detail: "An access token is required (Authorization: Bearer).", realm: AdminAudience(rt)}
	}
	if err := c.verify(rt, token); err != nil {
		return Principal{}, err
	}
	ar, u, err := Live(r.Context(), rt, c.users, token)
	switch {
	case errors.Is(err, ErrNotLive):
		return Principal{}, invalidToken(rt, "The access token is no longer valid (revoked, or its user or client is gone).")
	case err != nil:
		return Principal{}, err
	}
	p := Principal{Subject: ar.GetSession().GetSubject(), ClientID: ar.GetClient().GetID(), Scopes: slices.Clone(ar.GetGrantedScopes()), Machine: u == nil}
	if !slices.Contains(ar.GetGrantedAudience(), AdminAudience(rt)) {
		return Principal{}, invalidToken(rt, "The access token is not for this API.")
	}
	if !slices.ContainsFunc(need.AnyScope, func(s string) bool { return slices.Contains(p.Scopes, s) }) {
		return Principal{}, insufficient(rt, need.AnyScope, "The access token lacks the scope this request needs.")
	}
	if u != nil {
		p.Groups = slices.Clone(u.Groups)
		if group := rt.Config.Auth.Admin.Group; !slices.Contains(u.Groups, group) {
			return Principal{}, insufficient(rt, need.AnyScope, "The user is not a member of the group allowed to use this API ("+group+").")
		}
	}
	return p, nil
}

// verify checks the token as a JWT of the provider: an RFC 9068 access token (typ at+jwt) signed with
// ES256 by one of the provider's keys (current, previous, next), issued by the realm's issuer, for
// the admin API's audience, and neither expired nor not yet valid on the checker's clock.
func (c *Checker) verify(rt *realm.Realm, token string) error {
	tok, err := josejwt.ParseSigned(token)
	if err != nil || len(tok.Headers) != 1 {
		return invalidToken(rt, "The access token is malformed.")
	}
	h := tok.Headers[0]
	if h.Algorithm != string(jose.ES256) || !strings.EqualFold(typOf(h), "at+jwt") {
		return invalidToken(rt, "The token is not an access token of this provider.")
	}
	key := c.keys.Verifying(h.KeyID)
	if key == nil {
		return invalidToken(rt, "The access token is not signed by this provider.")
	}
	var cl josejwt.Claims
	if err := tok.Claims(key, &cl); err != nil {
		return invalidToken(rt, "The access token's signature is not valid.")
	}
	// A minute's leeway for iat and nbf (another replica's clock); none for exp, which must be there.
	now := c.now()
	err = cl.ValidateWithLeeway(josejwt.Expected{Issuer: rt.Issuer, Time: now}, clockSkew)
	switch {
	case errors.Is(err, josejwt.ErrExpired) || cl.Expiry == nil || !now.Before(cl.Expiry.Time()):
		return invalidToken(rt, "The access token has expired.")
	case err != nil:
		return invalidToken(rt, "The access token is not valid here (issuer or time).")
	case !cl.Audience.Contains(AdminAudience(rt)):
		return invalidToken(rt, "The access token is not for this API (its aud does not name "+AdminAudience(rt)+").")
	}
	return nil
}

// clockSkew is the leeway for a token's iat and nbf.
const clockSkew = time.Minute

func typOf(h jose.Header) string {
	typ, _ := h.ExtraHeaders[jose.HeaderType].(string)
	return typ
}

// unavailable: the store did not answer.
func unavailable(err error) bool { return web.IsUnavailable(err) }
