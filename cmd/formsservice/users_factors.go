//go:build !formsonly

package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/formsservice/formsservice/services/auth/accounts"
	"github.com/formsservice/formsservice/services/auth/passkey"
	"github.com/formsservice/formsservice/services/platform/config"
)

// The account's factors, as the admin API shows them and removes a passkey (GET …/users/{id}/factors,
// DELETE …/passkeys/{passkey}): the same code, package accounts, behind both doors.

// newUsersFactorsCmd is `users factors`: the second factor's state and the passkeys, never a secret.
func newUsersFactorsCmd(env *environment) *cobra.Command {
	var u usersTool
	cmd := &cobra.Command{
		Use:     "factors --email ADDRESS",
		Short:   "show the account's second factor (set up when, recovery codes left) and passkeys (id, name, added, last used)",
		Example: "  formsservice users factors --email ada@example.com",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, rdb, us, user, err := u.openAccount(ctx, env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			f, err := accounts.New(accounts.Options{Config: config.Static{C: cfg}, Redis: rdb, Users: us}).Factors(ctx, user.ID)
			if err != nil {
				return err
			}
			if sf := f.SecondFactor; sf.TOTP {
				fmt.Fprintf(env.stdout, "second factor: an authenticator app, set up %s; %d unused recovery code(s)\n", sf.Since.Format(time.RFC3339), sf.RecoveryLeft)
			} else {
				fmt.Fprintf(env.stdout, "second factor: none; %d unused recovery code(s)\n", sf.RecoveryLeft)
			}
			fmt.Fprintf(env.stdout, "passkeys: %d\n", len(f.Passkeys))
			for _, p := range f.Passkeys {
				used := "never used"
				if !p.LastUsed.IsZero() {
					used = "last used " + p.LastUsed.UTC().Format(time.RFC3339)
				}
				fmt.Fprintf(env.stdout, "  %s  %q  added %s, %s\n", p.ID, p.Name, p.Created.UTC().Format(time.RFC3339), used)
			}
			return nil
		},
	}
	u.register(cmd, env, true)
	return cmd
}

// newUsersRemovePasskeyCmd is `users remove-passkey`: for a person who lost the device a passkey is on.
func newUsersRemovePasskeyCmd(env *environment) *cobra.Command {
	var u usersTool
	var id string
	cmd := &cobra.Command{
		Use:   "remove-passkey --email ADDRESS --passkey ID",
		Short: "remove one of the account's passkeys (its id as `users factors` lists it)",
		Long: `Removes one passkey: it no longer signs in. The account's other passkeys, its password and its sessions
stay. Recorded in the audit trail as passkey.removed, with the operating-system user.`,
		Example: "  formsservice users remove-passkey --email ada@example.com --passkey AbC123…",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, rdb, us, user, err := u.openAccount(ctx, env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			p, err := cliOperator(rdb, cfg, us, env, nil, nil).RemovePasskey(ctx, user, id)
			if errors.Is(err, passkey.ErrNotFound) {
				return fmt.Errorf("%s has no passkey %s (see formsservice users factors)", user.Email, id)
			} else if err != nil {
				return err
			}
			fmt.Fprintf(env.stdout, "removed the passkey %q of %s\n", p.Name, user.Email)
			return nil
		},
	}
	u.register(cmd, env, true)
	cmd.Flags().StringVar(&id, "passkey", "", "the passkey's id, as `users factors` lists it (required)")
	cmd.PreRunE = requireFlags("email", "passkey")
	return cmd
}
