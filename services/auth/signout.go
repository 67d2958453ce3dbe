package auth

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/sso"
	"github.com/formsservice/formsservice/services/auth/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// SignOutEverywhere revokes every grant (refresh-token family) of a user and ends every sign-in session,
// through the bounded per-user indexes the provider keeps (ASVS 3.3.3): what a password change, a
// disabled account and an administrator's "sign out everywhere" do. It needs only Redis and the
// configuration, so that the `formsservice users` commands run it without a provider.
func SignOutEverywhere(ctx context.Context, rdb redis.UniversalClient, a config.Auth, userID string) (grants, sessions int, err error) {
	tokens := store.New(store.Options{Redis: rdb, Lifetimes: func() store.Lifetimes {
		return store.Lifetimes{Code: a.CodeLifetime.D(), Access: a.AccessTokenLifetime.D(), Refresh: a.RefreshTokenLifetime.D(), Family: a.FamilyLifetime.D(), MaxFamilies: a.MaxGrantsPerUser}
	}})
	if grants, err = tokens.RevokeSubject(ctx, userID); err != nil {
		return 0, 0, err
	}
	if sessions, err = sso.New(rdb).EndUser(ctx, userID); err != nil {
		return grants, 0, err
	}
	return grants, sessions, nil
}
