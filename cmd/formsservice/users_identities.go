//go:build !formsonly

package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/formsservice/formsservice/services/auth/audit"
)

// newUsersIdentitiesCmd is `users identities`: the accounts at upstream providers linked to an account
// (D58), one a line: connector, upstream subject, the address the upstream gave, when linked.
func newUsersIdentitiesCmd(env *environment) *cobra.Command {
	var u usersTool
	cmd := &cobra.Command{
		Use:     "identities --email ADDRESS",
		Short:   "print the account's linked accounts at upstream providers (connector, subject, e-mail, linked)",
		Example: "  formsservice users identities --email ada@example.com",
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
			ids, err := us.Identities(cmd.Context(), user.ID)
			if err != nil {
				return err
			}
			for _, id := range ids {
				fmt.Fprintf(env.stdout, "%s\t%s\t%s\t%s\n", id.Connector, id.Subject, id.Email, id.Linked.Format(time.RFC3339))
			}
			return nil
		},
	}
	u.register(cmd, env, true)
	return cmd
}

// newUsersUnlinkCmd is `users unlink`: a linked account at an upstream provider removed; it no longer
// signs in to the account.
func newUsersUnlinkCmd(env *environment) *cobra.Command {
	var u usersTool
	var connector string
	cmd := &cobra.Command{
		Use:     "unlink --email ADDRESS --connector ID",
		Short:   "remove the account's linked account at the connector",
		Example: "  formsservice users unlink --email ada@example.com --connector google",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, rdb, us, err := u.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			user, err := us.ByEmail(cmd.Context(), u.email)
			if err != nil {
				return err
			}
			if _, err := us.Unlink(cmd.Context(), user.ID, connector); err != nil {
				return fmt.Errorf("%s has no linked account at %q: %w", user.Email, connector, err)
			}
			operatorTrail(rdb, cfg, env)(cmd.Context(), audit.IdentityUnlinked, user.ID, map[string]string{"connector": connector})
			fmt.Fprintf(env.stdout, "unlinked %s from %s\n", connector, user.Email)
			return nil
		},
	}
	cmd.Flags().StringVar(&connector, "connector", "", "the connector's id (required)")
	u.register(cmd, env, true)
	cmd.PreRunE = requireFlags("email", "connector")
	return cmd
}
