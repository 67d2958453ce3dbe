//go:build !formsonly

package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	formstore "github.com/formsservice/formsservice/services/forms/store"
)

func newExportCmd(env *environment) *cobra.Command {
	var store storeFlags
	var format, output string
	cmd := &cobra.Command{
		Use:   "export waitlist|contact [--format csv|jsonl] [-o FILE]",
		Short: "write stored submissions (waitlist or contact) as CSV or JSON lines",
		Long: `Writes what the forms service stored, oldest first, to standard output or to a file (created
readable by its owner only: it holds personal data). The count goes to standard error.`,
		Example: `  formsservice export waitlist > waitlist.csv
  formsservice export contact --format jsonl -o contact.jsonl
  REDIS_URL=redis://127.0.0.1:6379/0 formsservice export waitlist`,
		ValidArgs: []string{"waitlist", "contact"},
		Args:      usageArgs(cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs)),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, rdb, err := store.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			w := env.stdout
			if output != "" {
				f, err := os.OpenFile(output, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600) // personal data: owner only
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			export := formstore.ExportWaitlist
			if args[0] == "contact" {
				export = formstore.ExportContact
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
	store.register(cmd, env)
	return cmd
}
