//go:build !formsonly

package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// newForgetCmd is the smallest whole command: a description, examples, its flags and the store.
func newForgetCmd(env *environment) *cobra.Command {
	var store storeFlags
	var email string
	cmd := &cobra.Command{
		Use:   "forget --email ADDRESS",
		Short: "erase an e-mail address from every store (a GDPR erasure request)",
		Long: `Erases the address from the waitlist, every stored contact message, every declared form's
submissions that hold it, the dead letters and the spam folders, and says what it removed. The address is
compared in its canonical form (lower case). The erasure is recorded in the audit trail (form.address_erased,
with what was erased, counted: never the address); POST /admin/v1/erasures does the same.`,
		Example: `  formsservice forget --email ada@example.com`,
		Args:    usageArgs(cobra.NoArgs),
		PreRunE: requireFlags("email"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, rdb, err := store.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			rep, err := formsOperator(rdb, cfg, env).Erase(cmd.Context(), email)
			if err != nil {
				return fmt.Errorf("forget: %w", err)
			}
			fmt.Fprintf(env.stdout, "erased %s: %d waitlist %s, %d contact %s",
				rep.Email, rep.WaitlistEntries, plural(rep.WaitlistEntries, "entry", "entries"),
				len(rep.ContactMessages), plural(len(rep.ContactMessages), "message", "messages"))
			if len(rep.ContactMessages) > 0 {
				fmt.Fprintf(env.stdout, " (%s)", strings.Join(rep.ContactMessages, ", "))
			}
			if rep.DeadLetters > 0 {
				fmt.Fprintf(env.stdout, ", %d dead %s", rep.DeadLetters, plural(rep.DeadLetters, "letter", "letters"))
			}
			for _, form := range slices.Sorted(maps.Keys(rep.FormSubmissions)) {
				ids := rep.FormSubmissions[form]
				fmt.Fprintf(env.stdout, ", %d %s of form %s (%s)", len(ids), plural(len(ids), "submission", "submissions"), form, strings.Join(ids, ", "))
			}
			if rep.FormDeadLetters > 0 {
				fmt.Fprintf(env.stdout, ", %d dead %s of declared forms", rep.FormDeadLetters, plural(rep.FormDeadLetters, "letter", "letters"))
			}
			if rep.Spam > 0 {
				fmt.Fprintf(env.stdout, ", %d in spam folders", rep.Spam)
			}
			fmt.Fprintln(env.stdout)
			return nil
		},
	}
	cmd.Flags().StringVar(&email, "email", "", "the address to erase (required)")
	store.register(cmd, env)
	return cmd
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
