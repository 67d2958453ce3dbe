//go:build !formsonly

package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newUsersResetMFACmd is `users reset-mfa`: the way back for a person who lost both the app and the
// recovery codes (ASVS 2.5.7). The operator checks who is asking, out of band, before running it; the
// person then signs in with the password and, where a client requires it, sets up a new app.
func newUsersResetMFACmd(env *environment) *cobra.Command {
	var u usersTool
	var signOut bool
	cmd := &cobra.Command{
		Use:   "reset-mfa --email ADDRESS [--signout]",
		Short: "remove the account's second factor and recovery codes (for a person who lost both)",
		Long: `Removes the account's authenticator app and its recovery codes, so that the person signs in with the
password alone again (a client that requires a second factor then asks them to set up a new one).
Check who is asking before you run it: whoever has the password gets in with it afterwards.
With --signout every session and grant of the account ends as well.`,
		Example: "  formsservice users reset-mfa --email ada@example.com --signout",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, rdb, us, user, err := u.openAccount(ctx, env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			op := cliOperator(rdb, cfg, us, env, nil, nil)
			removed, left, err := op.ResetMFA(ctx, user)
			if err != nil {
				return err
			}
			if removed {
				fmt.Fprintf(env.stdout, "removed the second factor of %s and its %d unused recovery code(s)\n", user.Email, left)
			} else {
				fmt.Fprintf(env.stdout, "%s has no second factor; nothing removed\n", user.Email)
			}
			if !signOut {
				return nil
			}
			grants, sessions, err := op.SignOut(ctx, user)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.stdout, "signed %s out; ended %d sign-in session(s), revoked %d grant(s)\n", user.Email, sessions, grants)
			return nil
		},
	}
	u.register(cmd, env, true)
	cmd.Flags().BoolVar(&signOut, "signout", false, "also end every sign-in session and grant of the account")
	return cmd
}
