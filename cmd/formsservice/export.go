//go:build !formsonly

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	formstore "github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

func newExportCmd(env *environment) *cobra.Command {
	var store storeFlags
	var format, output, spam string
	cmd := &cobra.Command{
		Use:   "export waitlist|contact|FORM [--format csv|jsonl] [--spam exclude|include|only] [-o FILE]",
		Short: "write stored submissions (waitlist, contact or a declared form's) as CSV or JSON lines",
		Long: `Writes what the forms service stored, oldest first, to standard output or to a file (created
readable by its owner only: it holds personal data). The count goes to standard error. FORM is a
declared form's id (forms.declared): one that stored a submission, declared now or not. --spam says what
becomes of the form's spam folder: left out (exclude, the default), written after the submissions as JSON
lines with their verdict (include, JSON lines only), or written alone (only).`,
		Example: `  formsservice export waitlist > waitlist.csv
  formsservice export contact --format jsonl -o contact.jsonl
  formsservice export demo > demo-requests.csv
  formsservice export contact --spam only --format jsonl
  REDIS_URL=redis://127.0.0.1:6379/0 formsservice export waitlist`,
		ValidArgs: []string{"waitlist", "contact"},
		Args: usageArgs(cobra.MatchAll(cobra.ExactArgs(1), func(_ *cobra.Command, args []string) error {
			if !config.ValidFormID(args[0]) {
				return fmt.Errorf("invalid argument %q for \"formsservice export\": want waitlist, contact or a declared form's id", args[0])
			}
			return nil
		})),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, rdb, err := store.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			export := formstore.ExportWaitlist
			switch args[0] {
			case "waitlist":
			case "contact":
				export = formstore.ExportContact
			default:
				known, err := formstore.KnownForms(cmd.Context(), rdb)
				if err != nil {
					return fmt.Errorf("export %s: %w", args[0], err)
				}
				if !slices.Contains(known, args[0]) {
					return usageError(cmd, fmt.Errorf("export: %q is not waitlist, contact or a declared form that stored a submission (%s)",
						args[0], strings.Join(known, ", ")))
				}
				id := args[0]
				export = func(ctx context.Context, rdb redis.UniversalClient, w io.Writer, format string) (int, error) {
					return formstore.ExportForm(ctx, rdb, w, format, id)
				}
			}
			if spam != "exclude" {
				if args[0] == "waitlist" {
					return usageError(cmd, fmt.Errorf("export: the waitlist keeps no spam folder; --spam is for contact and declared forms"))
				}
				if spam == "include" && format != formstore.FormatJSONL {
					return usageError(cmd, fmt.Errorf("export: --spam include needs --format jsonl (spam rows have other columns); --spam only writes the folder as CSV"))
				}
				q := formstore.ContactQueue
				if args[0] != "contact" {
					q = formstore.FormQueue(args[0])
				}
				delivered := export
				export = func(ctx context.Context, rdb redis.UniversalClient, w io.Writer, format string) (int, error) {
					n := 0
					if spam == "include" {
						var err error
						if n, err = delivered(ctx, rdb, w, format); err != nil {
							return n, err
						}
					}
					m, err := formstore.ExportSpam(ctx, rdb, w, format, q)
					return n + m, err
				}
			}
			w := env.stdout
			if output != "" {
				f, err := os.OpenFile(output, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600) // personal data: owner only
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			n, err := export(cmd.Context(), rdb, w, format)
			if err != nil {
				return fmt.Errorf("export %s: %w", args[0], err)
			}
			fmt.Fprintf(env.stderr, "exported %d %s records\n", n, args[0])
			return nil
		},
	}
	enumFlag(cmd.Flags(), &format, "format", formstore.FormatCSV, "csv or jsonl", formstore.FormatCSV, formstore.FormatJSONL)
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file instead of standard output")
	enumFlag(cmd.Flags(), &spam, "spam", "exclude", "the spam folder: exclude, include (after the submissions; jsonl) or only", "exclude", "include", "only")
	store.register(cmd, env)
	return cmd
}
