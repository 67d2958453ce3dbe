//go:build !formsonly

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/formsservice/formsservice/services/auth/accounts"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/passwords"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/config"
)

// newUsersCmd groups the account tools. Each subcommand is one newUsersXxxCmd below.
func newUsersCmd(env *environment) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "users",
		Short: "manage sign-in accounts (create, set-password, signout, disable, enable, delete, reset-mfa, factors, remove-passkey, list, groups, send-verification, purge-unverified, identities, unlink)",
		Long: `Manages the accounts people sign in with on the hosted page. Passwords are read from standard input
(one line), never from the command line, so that they stay out of argv and shell history.`,
		Example: `  read -rs PW; printf '%s\n' "$PW" | formsservice users create --email ada@example.com --name Ada
  formsservice users list
  formsservice users disable --email ada@example.com`,
		Args: cobra.ArbitraryArgs,
		RunE: needSubcommand,
	}
	cmd.AddCommand(
		newUsersCreateCmd(env),
		newUsersSetPasswordCmd(env),
		newUsersSignoutCmd(env, "signout"),
		newUsersSignoutCmd(env, "disable"),
		newUsersEnableCmd(env),
		newUsersDeleteCmd(env),
		newUsersResetMFACmd(env),
		newUsersFactorsCmd(env),
		newUsersRemovePasskeyCmd(env),
		newUsersListCmd(env),
		newUsersGroupsCmd(env),
		newUsersSendVerificationCmd(env),
		newUsersPurgeUnverifiedCmd(env),
		newUsersIdentitiesCmd(env),
		newUsersUnlinkCmd(env),
	)
	readsEnv(cmd, storeEnv...)
	return cmd
}

// usersTool is what every users subcommand has: the store, an account's address, and how to open them.
type usersTool struct {
	store storeFlags
	email string
}

// register adds --config (and --email when withEmail) to cmd.
func (u *usersTool) register(cmd *cobra.Command, env *environment, withEmail bool) {
	if withEmail {
		cmd.Flags().StringVar(&u.email, "email", "", "e-mail address of the account (required)")
		cmd.PreRunE = requireFlags("email")
	}
	u.store.register(cmd, env)
}

func (u *usersTool) open(ctx context.Context, env *environment) (*config.Config, redis.UniversalClient, *users.Store, error) {
	cfg, rdb, err := u.store.open(ctx, env)
	if err != nil {
		return nil, nil, nil, err
	}
	return cfg, rdb, users.NewStore(rdb, users.NewHasher(users.ParamsFrom(cfg.Auth.PasswordHash), 1)), nil
}

// openAccount is open, then the account of --email (the store closed again when there is none).
func (u *usersTool) openAccount(ctx context.Context, env *environment) (*config.Config, redis.UniversalClient, *users.Store, *users.User, error) {
	cfg, rdb, us, err := u.open(ctx, env)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	user, err := us.ByEmail(ctx, u.email)
	if err != nil {
		_ = rdb.Close()
		return nil, nil, nil, nil, err
	}
	return cfg, rdb, us, user, nil
}

func newUsersCreateCmd(env *environment) *cobra.Command {
	var u usersTool
	var name string
	var verified bool
	cmd := &cobra.Command{
		Use:   "create --email ADDRESS [--name NAME] [--verified]",
		Short: "create an account; the password is asked on a terminal (twice, not shown) or read from a pipe (one line)",
		Long: `Creates an account. Its e-mail address is unverified (email_verified false) until its owner follows a
verification link, which they ask for on the hosted sign-in page (a client with requireVerifiedEmail
offers it; so does /account/verify/resend); --verified creates it verified, for an address the operator
has checked.`,
		Example: `  formsservice users create --email ada@example.com --name "Ada Lovelace"
  formsservice users create --email ada@example.com --verified
  read -rs PW; printf '%s\n' "$PW" | formsservice users create --email ada@example.com --name "Ada Lovelace"`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The store first: a missing or dead one is said before anyone types a password twice.
			cfg, rdb, us, err := u.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			pw, err := readPassword(env)
			if err != nil {
				return err
			}
			created, err := cliOperator(rdb, cfg, us, env, nil, nil).Create(cmd.Context(), accounts.NewAccount{Email: u.email, Name: name, Password: pw, Verified: verified})
			if err != nil {
				return err
			}
			note := ""
			if verified {
				note = "; its address is verified"
			}
			fmt.Fprintf(env.stdout, "created %s (id %s)%s\n", created.Email, created.ID, note)
			return nil
		},
	}
	u.register(cmd, env, true)
	cmd.Flags().StringVar(&name, "name", "", "display name")
	cmd.Flags().BoolVar(&verified, "verified", false, "create the account with its e-mail address verified (email_verified true)")
	return cmd
}

func newUsersSetPasswordCmd(env *environment) *cobra.Command {
	var u usersTool
	cmd := &cobra.Command{
		Use:   "set-password --email ADDRESS",
		Short: "replace the password (asked on a terminal, or read from a pipe) and sign the user out everywhere",
		Long: `Replaces the account's password, then signs the user out everywhere: every sign-in session and every
grant (refresh token) ends. On a terminal the password is asked twice and not shown; from a pipe it is
the first line of standard input.`,
		Example: `  formsservice users set-password --email ada@example.com
  read -rs PW; printf '%s\n' "$PW" | formsservice users set-password --email ada@example.com`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The store and the account first: neither missing is found out after the password is typed.
			cfg, rdb, us, err := u.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			user, err := us.ByEmail(cmd.Context(), u.email)
			if err != nil {
				return err
			}
			pw, err := readPassword(env)
			if err != nil {
				return err
			}
			if err := judgeNewPassword(pw, user.Email, user.Name); err != nil {
				return err
			}
			user, err = us.SetPassword(cmd.Context(), user.Email, pw)
			if err != nil {
				return err
			}
			trail := operatorTrail(rdb, cfg, env)
			trail(cmd.Context(), audit.PasswordSet, user.ID, nil)
			grants, sessions, err := signOutEverywhere(cmd.Context(), rdb, cfg, user.ID)
			if err == nil {
				trail(cmd.Context(), audit.SignOutEverywhere, user.ID, counts(grants, sessions))
			}
			if err != nil {
				return fmt.Errorf("password set for %s, but signing it out everywhere failed (run `users signout`): %w", user.Email, err)
			}
			fmt.Fprintf(env.stdout, "password set for %s; ended %d sign-in session(s), revoked %d grant(s)\n", user.Email, sessions, grants)
			return nil
		},
	}
	u.register(cmd, env, true)
	return cmd
}

// judgeNewPassword refuses a new password the rules refuse (package passwords), as the hosted pages do,
// with the pages' message.
func judgeNewPassword(pw, email, name string) error {
	if weak := passwords.Judge(pw, email, name); weak != passwords.OK {
		return fmt.Errorf("password refused (%s): %s", weak, weak.Message())
	}
	return nil
}

// newUsersSignoutCmd is `users signout` (end every session and grant) or `users disable` (the same,
// and refuse the account's sign-ins until `users enable`).
func newUsersSignoutCmd(env *environment, action string) *cobra.Command {
	var u usersTool
	short := "sign the user out everywhere (every sign-in session and grant ends)"
	if action == "disable" {
		short = "refuse the account's sign-ins and sign it out everywhere"
	}
	cmd := &cobra.Command{
		Use:     action + " --email ADDRESS",
		Short:   short,
		Example: "  formsservice users " + action + " --email ada@example.com",
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
			op := cliOperator(rdb, cfg, us, env, nil, nil)
			do := op.SignOut
			if action == "disable" {
				do = op.Disable
			}
			grants, sessions, err := do(cmd.Context(), user)
			if err != nil {
				return err
			}
			verb := "signed out"
			if action == "disable" {
				verb = "disabled and signed out"
			}
			fmt.Fprintf(env.stdout, "%s %s; ended %d sign-in session(s), revoked %d grant(s)\n", verb, user.Email, sessions, grants)
			return nil
		},
	}
	u.register(cmd, env, true)
	return cmd
}

func newUsersEnableCmd(env *environment) *cobra.Command {
	var u usersTool
	cmd := &cobra.Command{
		Use:     "enable --email ADDRESS",
		Short:   "allow a disabled account to sign in again",
		Example: "  formsservice users enable --email ada@example.com",
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
			if err := cliOperator(rdb, cfg, us, env, nil, nil).Enable(cmd.Context(), user); err != nil {
				return err
			}
			fmt.Fprintf(env.stdout, "enabled %s\n", user.Email)
			return nil
		},
	}
	u.register(cmd, env, true)
	return cmd
}

func newUsersDeleteCmd(env *environment) *cobra.Command {
	var u usersTool
	cmd := &cobra.Command{
		Use:     "delete --email ADDRESS",
		Short:   "delete the account, revoke every token issued to it and delete its passkeys",
		Example: "  formsservice users delete --email ada@example.com",
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
			n, err := cliOperator(rdb, cfg, us, env, nil, nil).Delete(cmd.Context(), user)
			if errors.Is(err, accounts.ErrLeftBehind) {
				return fmt.Errorf("deleted %s, but: %w", user.Email, err)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(env.stdout, "deleted %s (id %s); revoked %d grant(s)\n", user.Email, user.ID, n)
			return nil
		},
	}
	u.register(cmd, env, true)
	return cmd
}

func newUsersListCmd(env *environment) *cobra.Command {
	var u usersTool
	var format string
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list [--format table|jsonl]",
		Short:   "print every account (id, e-mail, name, created; jsonl adds verified, groups and the connectors of linked identities)",
		Example: "  formsservice users list\n  formsservice users list --format jsonl | jq -r .email",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				format = "jsonl"
			}
			_, rdb, us, err := u.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			enc := json.NewEncoder(env.stdout)
			return us.List(cmd.Context(), func(user *users.User) error {
				if format == "jsonl" {
					ids, err := us.Identities(cmd.Context(), user.ID)
					if err != nil {
						return err
					}
					linked := []string{}
					for _, id := range ids {
						linked = append(linked, id.Connector)
					}
					return enc.Encode(map[string]any{"id": user.ID, "email": user.Email, "name": user.Name, "created": user.CreatedAt, "verified": user.EmailVerified,
						"groups": append([]string{}, user.Groups...), "identities": linked})
				}
				_, err := fmt.Fprintf(env.stdout, "%s\t%s\t%s\t%s\n", user.ID, user.Email, user.Name, user.CreatedAt.Format(time.RFC3339))
				return err
			})
		},
	}
	enumFlag(cmd.Flags(), &format, "format", "table", "table (tab-separated) or jsonl", "table", "jsonl")
	cmd.Flags().BoolVar(&asJSON, "json", false, "the same as --format jsonl")
	cmd.Flags().MarkDeprecated("json", "use --format jsonl") //nolint:errcheck // the flag exists
	u.register(cmd, env, false)
	return cmd
}

// signOutEverywhere revokes every grant and ends every sign-in session of the user.
func signOutEverywhere(ctx context.Context, rdb redis.UniversalClient, cfg *config.Config, userID string) (grants, sessions int, err error) {
	return accounts.SignOutEverywhere(ctx, rdb, cfg.Auth, userID)
}

// readPassword reads the password so that it never appears in argv, shell history or on the screen: on
// a terminal, after a prompt on stderr, twice and without echo; otherwise one line from stdin (a pipe).
func readPassword(env *environment) (string, error) {
	if f, ok := env.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return readPasswordFromTerminal(int(f.Fd()), env.stderr)
	}
	line, err := bufio.NewReader(env.stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return "", errors.New("no password on stdin (pipe one line, e.g. `read -rs PW; printf '%s\\n' \"$PW\" | formsservice users create ...`)")
	}
	return pw, nil
}

// readPasswordFromTerminal asks twice with the terminal's echo off (a typo cannot be seen, so it is
// caught by the repetition).
func readPasswordFromTerminal(fd int, prompt io.Writer) (string, error) {
	ask := func(p string) (string, error) {
		fmt.Fprint(prompt, p)
		b, err := term.ReadPassword(fd)
		fmt.Fprintln(prompt)
		return string(b), err
	}
	pw, err := ask("Password: ")
	if err != nil {
		return "", err
	}
	if pw == "" {
		return "", errors.New("no password typed")
	}
	again, err := ask("Repeat the password: ")
	if err != nil {
		return "", err
	}
	if again != pw {
		return "", errors.New("the two passwords differ; nothing was changed")
	}
	return pw, nil
}
