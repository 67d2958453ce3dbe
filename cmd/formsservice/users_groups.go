//go:build !formsonly

package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/formsservice/formsservice/services/auth/accounts"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/keys"
	"github.com/formsservice/formsservice/services/auth/mfa"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/passkey"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// newUsersGroupsCmd is `users groups add|remove|list`: the groups an account is in, which the groups
// claim carries (docs/auth.md "Groups"). The address is --email, as in every users command.
func newUsersGroupsCmd(env *environment) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "groups",
		Short: "the groups an account belongs to (add, remove, list): the groups claim of its tokens",
		Long: fmt.Sprintf(`Manages the groups an account belongs to. A client whose scopes include groups gets them, when it asks
for the groups scope, as the groups claim (a JSON array) of the ID token and at userinfo: for Kubernetes
RBAC, Grafana teams, oauth2-proxy --allowed-group. A group name is 1 to %d characters: letters, digits
and . _ - : / @ +, starting with a letter or digit; it is case-sensitive. An account is in at most %d.
Userinfo shows a change at once and every refresh issues the current groups; an ID token issued before
keeps what it said until it expires (run users signout to make every app sign in again).`, users.MaxGroupLen, users.MaxGroups),
		Example: `  formsservice users groups add --email ada@example.com ops system:masters
  formsservice users groups remove --email ada@example.com system:masters
  formsservice users groups list --email ada@example.com`,
		Args: cobra.ArbitraryArgs,
		RunE: needSubcommand,
	}
	cmd.AddCommand(newUsersGroupsEditCmd(env, "add"), newUsersGroupsEditCmd(env, "remove"), newUsersGroupsListCmd(env))
	readsEnv(cmd, storeEnv...)
	return cmd
}

// newUsersGroupsEditCmd is `users groups add` or `users groups remove`; each group changed is one audit
// event (user.group_added, user.group_removed; detail group).
func newUsersGroupsEditCmd(env *environment, action string) *cobra.Command {
	var u usersTool
	short, verb := "make the account a member of the groups", "added"
	if action == "remove" {
		short, verb = "take the account out of the groups", "removed"
	}
	cmd := &cobra.Command{
		Use:     action + " --email ADDRESS GROUP...",
		Short:   short,
		Example: "  formsservice users groups " + action + " --email ada@example.com ops system:masters",
		Args:    usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, groups []string) error {
			for _, g := range groups { // before the store is opened: a typo is a usage error
				if err := users.CheckGroup(g); err != nil {
					return usageError(cmd, err)
				}
			}
			cfg, rdb, us, err := u.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			user, err := us.ByEmail(cmd.Context(), u.email)
			if err != nil {
				return err
			}
			op := cliOperator(rdb, cfg, us, env, nil, nil)
			edit := op.AddGroups
			if action == "remove" {
				edit = op.RemoveGroups
			}
			changed, err := edit(cmd.Context(), user, groups)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.stdout, "%s %d group(s); %s is in: %s\n", verb, len(changed), user.Email, groupList(user.Groups))
			return nil
		},
	}
	u.register(cmd, env, true)
	return cmd
}

func newUsersGroupsListCmd(env *environment) *cobra.Command {
	var u usersTool
	cmd := &cobra.Command{
		Use:     "list --email ADDRESS",
		Short:   "print the account's groups, one a line",
		Example: "  formsservice users groups list --email ada@example.com",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, rdb, us, err := u.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			user, err := us.ByEmail(cmd.Context(), u.email)
			if err != nil {
				return err
			}
			for _, g := range user.Groups {
				fmt.Fprintln(env.stdout, g)
			}
			return nil
		},
	}
	u.register(cmd, env, true)
	return cmd
}

func groupList(gs []string) string {
	if len(gs) == 0 {
		return "no group"
	}
	return strings.Join(gs, ", ")
}

// newUsersSendVerificationCmd is `users send-verification`: the sign-up's verification mail, sent again
// for an account an operator created (or whose owner lost the mail). It signs the link with the
// service's key (auth.signingKeyFile) and sends it through the configured relay, so it needs both.
func newUsersSendVerificationCmd(env *environment) *cobra.Command {
	var u usersTool
	var lang string
	cmd := &cobra.Command{
		Use:   "send-verification --email ADDRESS [--lang de]",
		Short: "mail an unverified account the link that verifies its address (as at sign-up)",
		Long: `Mails the account the link that verifies its e-mail address, the same as the sign-up's: it works once,
for auth.verificationLinkLifetime. Refused for an unknown, disabled or already verified account. The
link is signed with auth.signingKeyFile and the mail goes through the configured relay (mail.smtp, or
forms.delivery.smtp with STARTTLS), so the command reads the same configuration file as the service.
--lang writes the mail in one of the languages of the hosted pages (` + strings.Join(page.Languages, ", ") + `), the person's.`,
		Example: "  formsservice users send-verification --email ada@example.com --config /etc/formsservice/config.yaml\n" +
			"  formsservice users send-verification --email jan@example.de --lang de",
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !slices.Contains(page.Languages, lang) {
				return usageError(cmd, fmt.Errorf("--lang %q: the mails are written in %s", lang, strings.Join(page.Languages, ", ")))
			}
			cfg, rdb, us, err := u.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			if cfg.Auth.SigningKeyFile == "" {
				return errors.New("send-verification signs the link with auth.signingKeyFile, which the configuration does not name (a dev server without one keeps its key in memory: there, ask for the link on the sign-in page)")
			}
			relay, err := mail.FromConfig(cfg)
			if errors.Is(err, mail.ErrNoRelay) {
				return errors.New("no mail relay is configured (mail.smtp, or forms.delivery.smtp with STARTTLS): nothing was sent")
			}
			if err != nil {
				return fmt.Errorf("the mail relay: %w", err)
			}
			ks, err := keys.Load(keys.Files{Current: cfg.Auth.SigningKeyFile, Previous: cfg.Auth.PreviousSigningKeyFile, Next: cfg.Auth.NextSigningKeyFile})
			if err != nil {
				return err
			}
			// The account operations alone: no provider, no pages, no fosite.
			links, err := accounts.Links(rdb, ks, nil)
			if err != nil {
				return err
			}
			user, err := us.ByEmail(cmd.Context(), u.email)
			if err != nil {
				return err
			}
			err = cliOperator(rdb, cfg, us, env, links, relay).SendVerification(cmd.Context(), user, lang)
			switch {
			case errors.Is(err, accounts.ErrAlreadyVerified):
				return fmt.Errorf("%s is verified already; nothing was sent", user.Email)
			case errors.Is(err, users.ErrDisabled):
				return fmt.Errorf("%s is disabled (users enable first); nothing was sent", user.Email)
			case err != nil:
				return fmt.Errorf("the verification mail to %s was not sent: %w", user.Email, err)
			}
			fmt.Fprintf(env.stdout, "sent the verification link to %s (it works once, for %s)\n", user.Email, cfg.Auth.VerificationLinkLifetime.D())
			return nil
		},
	}
	u.register(cmd, env, true)
	cmd.Flags().StringVar(&lang, "lang", page.Languages[0], "language of the mail: "+strings.Join(page.Languages, ", "))
	return cmd
}

// newUsersPurgeUnverifiedCmd is `users purge-unverified`: deletes the accounts made on the sign-up form
// whose address was never verified, older than --older-than, so that a squatted address is free again
// (docs/auth.md "Never-verified accounts"). Meant for a scheduled job; --dry-run lists them.
func newUsersPurgeUnverifiedCmd(env *environment) *cobra.Command {
	var u usersTool
	var olderThan time.Duration
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "purge-unverified --older-than DURATION [--dry-run]",
		Short: "delete sign-up accounts whose address was never verified, older than a duration (frees squatted addresses)",
		Long: `Deletes every account made on the hosted page's sign-up form whose e-mail address was never verified
and that was created more than --older-than ago, as users delete does (its grants, passkeys and second
factor go too), so that someone who signed up with another person's address does not hold it for
good. Accounts an operator created, and accounts from before this command existed, are never deleted.
--older-than must be at least auth.verificationLinkLifetime (the link a sign-up mails must have had
its time). Each deletion is audited (user.deleted, detail reason=unverified).`,
		Example: `  formsservice users purge-unverified --older-than 168h --dry-run
  formsservice users purge-unverified --older-than 168h`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, rdb, us, err := u.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			if min := cfg.Auth.VerificationLinkLifetime.D(); olderThan < min {
				return usageError(cmd, fmt.Errorf("--older-than %s is shorter than auth.verificationLinkLifetime (%s): a link still valid could not be followed", olderThan, min))
			}
			var found []*users.User
			if err := us.Unverified(cmd.Context(), time.Now().Add(-olderThan), func(x *users.User) error {
				found = append(found, x)
				return nil
			}); err != nil {
				return err
			}
			if dryRun {
				for _, x := range found {
					fmt.Fprintf(env.stdout, "would delete %s (id %s, created %s)\n", x.Email, x.ID, x.CreatedAt.Format(time.RFC3339))
				}
				fmt.Fprintf(env.stdout, "%d never-verified account(s) older than %s; nothing deleted (--dry-run)\n", len(found), olderThan)
				return nil
			}
			trail := operatorTrail(rdb, cfg, env)
			deleted := 0
			for _, x := range found {
				ok, err := us.DeleteUnverified(cmd.Context(), x)
				if err != nil {
					return fmt.Errorf("after %d deletion(s), %s: %w", deleted, x.Email, err)
				}
				if !ok {
					continue // verified (or deleted) since it was listed
				}
				deleted++
				trail(cmd.Context(), audit.UserDeleted, x.ID, map[string]string{"reason": "unverified"})
				if err := forgetAccount(cmd.Context(), rdb, cfg, x.ID); err != nil {
					return fmt.Errorf("deleted %s, but: %w", x.Email, err)
				}
				fmt.Fprintf(env.stdout, "deleted %s (id %s, created %s)\n", x.Email, x.ID, x.CreatedAt.Format(time.RFC3339))
			}
			fmt.Fprintf(env.stdout, "deleted %d never-verified account(s) older than %s\n", deleted, olderThan)
			return nil
		},
	}
	u.register(cmd, env, false)
	cmd.Flags().DurationVar(&olderThan, "older-than", 0, "delete the accounts created longer ago than this (e.g. 168h; at least auth.verificationLinkLifetime)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list the accounts that would be deleted, delete none")
	return cmd
}

// forgetAccount ends what a deleted account leaves behind, as users delete does: its grants and
// sessions, its passkeys, its second factor.
func forgetAccount(ctx context.Context, rdb redis.UniversalClient, cfg *config.Config, id string) error {
	if _, _, err := signOutEverywhere(ctx, rdb, cfg, id); err != nil {
		return fmt.Errorf("revoking its tokens failed (they stop working anyway, since the user is gone): %w", err)
	}
	if err := passkey.NewStore(rdb, nil).RemoveAll(ctx, id); err != nil {
		return fmt.Errorf("removing its passkeys failed: %w", err)
	}
	if err := mfa.NewStore(rdb, mfa.Sealer{}, nil).Forget(ctx, id); err != nil {
		return fmt.Errorf("its second factor was not erased: %w", err)
	}
	return nil
}
