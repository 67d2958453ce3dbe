package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/config"
)

// cmdAudit: formsservice audit [-user ID|EMAIL] [-client ID] [-kind K,...] [-since T] [-until T]
// [-limit N] [-format text|jsonl]. The query and the formats are package audit's; this is the flags.
func cmdAudit(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "usage: formsservice audit [-user ID|EMAIL] [-client ID] [-kind KIND,...] [-since T] [-until T] [-limit N] [-format text|jsonl]")
		fmt.Fprintln(env.stderr, "\nLists the audit trail kept in Redis (auth.audit.retention, auth.audit.maxEntries), oldest first.")
		fmt.Fprintln(env.stderr, "T is RFC 3339 (2024-05-01T12:00:00Z), a date (2024-05-01) or a duration ago (90m, 24h, 7d).")
		fmt.Fprintln(env.stderr, "KIND is one of these, or a prefix ending in * (token.*):")
		for _, k := range audit.Kinds() {
			fmt.Fprintf(env.stderr, "  %-24s %s\n", k.Kind, k.Doc)
		}
		fmt.Fprintln(env.stderr)
		fs.PrintDefaults()
	}
	configPath := configFlag(fs, env)
	user := fs.String("user", "", "only events of this user: its ID, or the e-mail address of an existing account")
	client := fs.String("client", "", "only events of this OAuth client ID")
	kinds := fs.String("kind", "", "only these kinds (comma-separated)")
	since := fs.String("since", "", "only events stored at or after T")
	until := fs.String("until", "", "only events stored at or before T")
	limit := fs.Int("limit", 100, "the newest N matching events (0: all)")
	format := fs.String("format", "text", "text or jsonl")
	if pos, err := parseInterspersed(fs, args); err != nil || len(pos) > 0 || *limit < 0 || (*format != "text" && *format != "jsonl") {
		if err == nil {
			fs.Usage()
		}
		return errUsage
	}
	f := audit.Filter{Client: *client, Limit: *limit}
	var err error
	if f.Kinds, err = audit.ParseKinds(*kinds); err != nil {
		return err
	}
	now := time.Now()
	if f.Since, err = audit.ParseTime(*since, now); err != nil {
		return err
	}
	if f.Until, err = audit.ParseTime(*until, now); err != nil {
		return err
	}
	cfg, rdb, err := toolStore(*configPath, env)
	if err != nil {
		return err
	}
	defer rdb.Close()
	if f.User = *user; strings.Contains(f.User, "@") {
		u, err := users.NewStore(rdb, nil).ByEmail(ctx, f.User)
		if err != nil {
			return fmt.Errorf("audit -user %s: %w (the events of a deleted account are found by its ID)", f.User, err)
		}
		f.User = u.ID
	}
	events, err := audit.NewStore(rdb, operatorLimits(cfg)).Query(ctx, f)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if *format == "jsonl" {
		return audit.WriteJSONLines(env.stdout, events)
	}
	return audit.WriteText(env.stdout, events)
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
	rec, newErr := audit.New(audit.Options{Store: audit.NewStore(rdb, operatorLimits(cfg))})
	return func(ctx context.Context, kind audit.Kind, userID string, detail map[string]string) {
		err := newErr
		if err == nil {
			if osUser := env.getenv("USER"); osUser != "" {
				if detail == nil {
					detail = map[string]string{}
				}
				detail["osUser"] = osUser
			}
			err = rec.Write(ctx, audit.Event{Kind: kind, Outcome: audit.Success, User: userID, Actor: audit.ActorCLI, Detail: detail})
		}
		if err != nil {
			fmt.Fprintf(env.stderr, "warning: the audit event %s was not stored: %v\n", kind, err)
		}
	}
}

// counts is the detail of a sign-out everywhere.
func counts(grants, sessions int) map[string]string {
	return map[string]string{"grants": strconv.Itoa(grants), "sessions": strconv.Itoa(sessions)}
}
