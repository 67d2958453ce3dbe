package bearer

import (
	"context"
	"errors"

	"github.com/ory/fosite"

	"github.com/formsservice/formsservice/services/auth/claims"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/users"
)

// ErrNotLive: the token's grant is over (revoked, signed out everywhere, expired in the store), its
// user was deleted or disabled, or its client is gone or no longer allowed its own tokens.
var ErrNotLive = errors.New("bearer: the token's grant is not live")

// Owner is the one answer to "may whoever a live token names still use it": a person's token needs
// the user to exist and not be disabled (the user is returned); a client's own token (client_credentials)
// needs the client to be registered still and still allowed that grant (user is nil). /oauth2/introspect,
// /oauth2/userinfo and the admin API all ask it, so that each of them sees the same tokens as active.
func Owner(ctx context.Context, rt *realm.Realm, us *users.Store, ar fosite.Requester) (*users.User, error) {
	if sess, ok := ar.GetSession().(*claims.Session); ok && sess.Machine {
		if cl := rt.AppClient(ar.GetClient().GetID()); cl == nil || !cl.Machine() || sess.Subject != cl.GetID() {
			return nil, ErrNotLive
		}
		return nil, nil
	}
	u, err := us.ByID(ctx, ar.GetSession().GetSubject())
	switch {
	case errors.Is(err, users.ErrNotFound) || err == nil && u.Disabled:
		return nil, ErrNotLive
	case err != nil:
		return nil, err
	}
	return u, nil
}

// Live is the provider's check that an access token is one of its own and still in force: fosite's
// introspection of it as an access token (its record in the store, its grant not revoked, its signature
// and expiry; never a refresh or ID token, RFC 6750 and RFC 9700 4.14), then its Owner. A store that
// does not answer is its error (storeerr.ErrUnavailable); any other refusal is ErrNotLive.
func Live(ctx context.Context, rt *realm.Realm, us *users.Store, token string) (fosite.AccessRequester, *users.User, error) {
	use, ar, err := rt.Provider.IntrospectToken(ctx, token, fosite.AccessToken, claims.NewSession())
	if err != nil {
		if unavailable(err) {
			return nil, nil, err
		}
		return nil, nil, ErrNotLive
	}
	if use != fosite.AccessToken {
		return nil, nil, ErrNotLive
	}
	u, err := Owner(ctx, rt, us, ar)
	if err != nil {
		return nil, nil, err
	}
	return ar, u, nil
}
