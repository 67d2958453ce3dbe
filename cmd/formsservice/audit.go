//go:build !formsonly

package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/formsservice/formsservice/services/auth/accounts"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/keys"
	"github.com/formsservice/formsservice/services/auth/link"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// newAuditCmd lists the audit trail. The query and the formats are package audit's; this is the flags.
func newAuditCmd(env *environment) *cobra.Command {
	var store storeFlags
	var user, client, kinds, since, until, format string
	var limit int
	var kindHelp strings.Builder
	for _, k := range audit.Kinds() {
		fmt.Fprintf(&kindHelp, "  %-24s %s\n", k.Kind, k.Doc)
	}
	cmd := &cobra.Command{
		Use:   "audit [--user ID|EMAIL] [--client ID] [--kind KIND,...] [--since T] [--until T] [--limit N] [--format text|jsonl]",
		Short: "list the audit trail (sign-ins, tokens, account changes), filtered",
		Long: `Lists the audit trail kept in Redis (auth.audit.retention, auth.audit.maxEntries), oldest first: one
event per security-relevant action of the sign-in service and of the users commands. T is RFC 3339
(2024-05-01T12:00:00Z), a date (2024-05-01) or a duration ago (90m, 24h, 7d), compared with the time
Redis stored the event. KIND is one of these, or a prefix ending in * (token.*):

` + kindHelp.String(),
		Example: `  formsservice audit
  formsservice audit --user ada@example.com --since 24h
  formsservice audit --kind 'token.*' --client app --format jsonl`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return usageError(cmd, fmt.Errorf("--limit must not be negative"))
			}
			f := audit.Filter{Client: client, Limit: limit}
			var err error
			if f.Kinds, err = audit.ParseKinds(kinds); err != nil {
				return usageError(cmd, err)
			}
			now := time.Now()
			if f.Since, err = audit.ParseTime(since, now); err != nil {
				return usageError(cmd, err)
			}
			if f.Until, err = audit.ParseTime(until, now); err != nil {
				return usageError(cmd, err)
			}
			cfg, rdb, err := store.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			if f.User = user; strings.Contains(f.User, "@") {
				u, err := users.NewStore(rdb, nil).ByEmail(cmd.Context(), f.User)
				if err != nil {
					return fmt.Errorf("audit --user %s: %w (the events of a deleted account are found by its ID)", f.User, err)
				}
				f.User = u.ID
			}
			events, err := audit.NewStore(rdb, operatorLimits(cfg)).Query(cmd.Context(), f)
			if err != nil {
				return fmt.Errorf("audit: %w", err)
			}
			if format == "jsonl" {
				return audit.WriteJSONLines(env.stdout, events)
			}
			return audit.WriteText(env.stdout, events)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&user, "user", "", "only events of this user: its ID, or the e-mail address of an existing account")
	fl.StringVar(&client, "client", "", "only events of this OAuth client ID")
	fl.StringVar(&kinds, "kind", "", "only these kinds (comma-separated)")
	fl.StringVar(&since, "since", "", "only events stored at or after T")
	fl.StringVar(&until, "until", "", "only events stored at or before T")
	fl.IntVar(&limit, "limit", 100, "the newest N matching events (0: all)")
	enumFlag(fl, &format, "format", "text", "text or jsonl", "text", "jsonl")
	store.register(cmd, env)
	cmd.AddCommand(newAuditVerifyCmd(env))
	return cmd
}

func operatorLimits(cfg *config.Config) func() audit.Limits {
	return func() audit.Limits {
		return audit.Limits{Retention: cfg.Auth.Audit.Retention.D(), MaxEntries: cfg.Auth.Audit.MaxEntries}
	}
}

// operatorTrail records what an operator's command did, in the same trail as the service (actor cli,
// with the operating-system user who ran it). The action has happened by then: a trail that cannot be
// written is a warning, not a failed command.
func operatorTrail(rdb redis.UniversalClient, cfg *config.Config, env *environment) func(ctx context.Context, kind audit.Kind, userID string, detail map[string]string) {
	write := operatorAudit(rdb, cfg, env)
	return func(ctx context.Context, kind audit.Kind, userID string, detail map[string]string) {
		if osUser := env.getenv("USER"); osUser != "" {
			if detail == nil {
				detail = map[string]string{}
			}
			detail["osUser"] = osUser
		}
		write(ctx, audit.Event{Kind: kind, Outcome: audit.Success, User: userID, Actor: audit.ActorCLI, Detail: detail})
	}
}

// operatorAudit writes an event at once (a warning on stderr when it cannot): what the account
// operations record with when the CLI makes them (cliOperator).
func operatorAudit(rdb redis.UniversalClient, cfg *config.Config, env *environment) func(context.Context, audit.Event) {
	trail, newErr := operatorStore(rdb, cfg)
	var rec *audit.Recorder
	if newErr == nil {
		rec, newErr = audit.New(audit.Options{Store: trail})
	}
	return func(ctx context.Context, e audit.Event) {
		err := newErr
		if err == nil {
			err = rec.Write(ctx, e)
		}
		if err != nil {
			fmt.Fprintf(env.stderr, "warning: the audit event %s was not stored: %v\n", e.Kind, err)
		}
	}
}

// cliOperator is the account operations as the CLI makes them (package accounts' Operator, the one
// implementation the admin API calls too): audited with actor cli and the operating-system user. mail
// is the relay (nil for the operations that send none).
func cliOperator(rdb redis.UniversalClient, cfg *config.Config, us *users.Store, env *environment, links *link.Store, relay mail.Sender) accounts.Operator {
	ops := accounts.New(accounts.Options{Config: config.Static{C: cfg}, Redis: rdb, Users: us, Links: links, Mail: relay,
		Audit: operatorAudit(rdb, cfg, env)})
	by := accounts.Actor{Name: audit.ActorCLI}
	if osUser := env.getenv("USER"); osUser != "" {
		by.Detail = map[string]string{"osUser": osUser}
	}
	return ops.As(by)
}

// operatorStore is the trail as the service writes it: its security events chained under keys derived
// from the signing key (D52), when the configuration names one (the dev server's ephemeral key chains
// nothing an operator could verify).
func operatorStore(rdb redis.UniversalClient, cfg *config.Config) (*audit.Store, error) {
	trail := audit.NewStore(rdb, operatorLimits(cfg))
	if cfg.Auth.SigningKeyFile == "" {
		return trail, nil
	}
	keys, err := chainKeys(cfg)
	if err != nil {
		return nil, err
	}
	return trail.Chained(keys), nil
}

// chainKeys are the audit chain's keys, derived from the configured signing keys.
func chainKeys(cfg *config.Config) (audit.ChainKeys, error) {
	var k audit.ChainKeys
	ks, err := keys.Load(keys.Files{Current: cfg.Auth.SigningKeyFile, Previous: cfg.Auth.PreviousSigningKeyFile, Next: cfg.Auth.NextSigningKeyFile})
	if err != nil {
		return k, fmt.Errorf("the audit chain's keys: %w", err)
	}
	k.Current, k.Others, err = ks.Secrets(audit.ChainPurpose)
	return k, err
}

// newAuditVerifyCmd checks the security events' chain.
func newAuditVerifyCmd(env *environment) *cobra.Command {
	var store storeFlags
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "check that no security event was edited, deleted or inserted (the hash chain, D52)",
		Long: `Reads the security events oldest first and checks their chain: each event carries an HMAC of the
one before it and of itself, under a key derived from auth.signingKeyFile, which Redis does not hold. An
edited event, one deleted or inserted inside the trail, breaks the chain; trimming by age or count only
shortens it from the old end. Exits 1 at a break, naming the first entry where it breaks. Events signed
under a signing key that was since retired (no longer previousSigningKeyFile) cannot be checked.`,
		Example: "  formsservice audit verify",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, rdb, err := store.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			if cfg.Auth.SigningKeyFile == "" {
				return fmt.Errorf("audit verify: auth.signingKeyFile is not set: the chain's key is derived from it")
			}
			k, err := chainKeys(cfg)
			if err != nil {
				return err
			}
			v, err := audit.NewStore(rdb, nil).Verify(cmd.Context(), k)
			if err != nil {
				return fmt.Errorf("audit verify: %w", err)
			}
			if !v.Intact() {
				return fmt.Errorf("audit verify: the chain breaks at %s: %s (%d events read, %d chained from %s)", v.BreakAt, v.BreakWhy, v.Entries, v.Chained, v.First)
			}
			fmt.Fprintf(env.stdout, "the chain holds: %d security events, %d chained from %s to %s\n", v.Entries, v.Chained, orNone(v.First), orNone(v.Last))
			return nil
		},
	}
	store.register(cmd, env)
	return cmd
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// counts is the detail of a sign-out everywhere.
func counts(grants, sessions int) map[string]string {
	return map[string]string{"grants": strconv.Itoa(grants), "sessions": strconv.Itoa(sessions)}
}
