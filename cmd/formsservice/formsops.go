//go:build !formsonly

package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/forms/manage"
	"github.com/formsservice/formsservice/services/platform/config"
)

// formsOperator is the forms' operations as the CLI makes them (package manage, the one implementation
// the admin API calls too: docs/architecture.md D63): `export`, `forget`, `spam` and `deliveries` are
// its thin callers, and each change is recorded in the audit trail with actor cli and the
// operating-system user, as the account commands' are.
func formsOperator(rdb redis.UniversalClient, cfg *config.Config, env *environment) manage.Operator {
	ops := manage.New(manage.Options{Redis: rdb, Audit: formsAudit(rdb, cfg, env)})
	by := manage.Actor{Name: audit.ActorCLI}
	if osUser := env.getenv("USER"); osUser != "" {
		by.Detail = map[string]string{"osUser": osUser}
	}
	return ops.As(by)
}

// formsAudit records the forms' changes of the CLI in the trail the services keep. The security events
// are a chain keyed from auth.signingKeyFile (D52): a configuration without it (the forms service's own,
// in the forms pod) cannot add to a chained trail without breaking it, so the change is then not
// recorded and the command says so, once.
func formsAudit(rdb redis.UniversalClient, cfg *config.Config, env *environment) func(context.Context, manage.Actor, manage.Change) {
	write := operatorAudit(rdb, cfg, env)
	var once sync.Once
	return func(ctx context.Context, by manage.Actor, c manage.Change) {
		if cfg.Auth.SigningKeyFile == "" && chainedTrail(ctx, rdb) {
			once.Do(func() {
				fmt.Fprintf(env.stderr, "warning: %s was not recorded in the audit trail: its security events are chained under auth.signingKeyFile, "+
					"which this configuration does not name (run the command with the auth service's configuration)\n", c.Kind)
			})
			return
		}
		write(ctx, audit.Event{Kind: audit.Kind(c.Kind), Outcome: audit.Success, Actor: by.Name, Client: by.Client, Detail: c.Detail})
	}
}

// chainedTrail reports whether the trail's newest security event carries a chain MAC.
func chainedTrail(ctx context.Context, rdb redis.UniversalClient) bool {
	last, err := rdb.XRevRangeN(ctx, audit.StreamKey, "+", "-", 1).Result()
	if err != nil || len(last) == 0 {
		return false
	}
	_, chained := last[0].Values["h"]
	return chained
}
