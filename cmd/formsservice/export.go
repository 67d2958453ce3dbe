//go:build !formsonly

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/formsservice/formsservice/services/forms/manage"
	formstore "github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

func newExportCmd(env *environment) *cobra.Command {
	var store storeFlags
	var format, output, spam string
	cmd := &cobra.Command{
		Use:   "export waitlist|contact|FORM [--format csv|jsonl|json] [--spam exclude|include|only] [-o FILE]",
		Short: "write stored submissions (waitlist, contact or a declared form's) as CSV, JSON lines or JSON",
		Long: `Writes what the forms service stored, oldest first, to standard output or to a file (created
readable by its owner only: it holds personal data), as it reads it (memory does not grow with the rows).
The count goes to standard error. FORM is a declared form's id (forms.declared): declared now, or one that
stored a submission. --spam says what becomes of the form's spam folder: left out (exclude, the default),
written after the submissions as JSON lines with their verdict (include, JSON lines only), or written
alone (only). json writes one JSON array of the JSON lines' records. The export is recorded in the audit
trail (form.exported); GET /admin/v1/forms/FORM/submissions/export writes the same rows.`,
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
			form := args[0]
			if spam != "exclude" && form == "waitlist" {
				return usageError(cmd, fmt.Errorf("export: the waitlist keeps no spam folder; --spam is for contact and declared forms"))
			}
			if spam == "include" && format != formstore.FormatJSONL {
				return usageError(cmd, fmt.Errorf("export: --spam include needs --format jsonl (spam rows have other columns); --spam only writes the folder as CSV"))
			}
			cfg, rdb, err := store.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			op := formsOperator(rdb, cfg, env)
			q := manage.ExportQuery{Format: format, Folder: map[string]string{"exclude": formstore.FolderInbox, "include": manage.FolderAll, "only": formstore.FolderSpam}[spam]}
			if form != "waitlist" {
				if err := op.Ops().CheckExport(cmd.Context(), form, &q); errors.Is(err, manage.ErrUnknownForm) {
					return usageError(cmd, fmt.Errorf("export: %q is not waitlist, contact or a declared form (%s)", form, knownForms(cmd, op)))
				} else if err != nil {
					return fmt.Errorf("export %s: %w", form, err)
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
			n, err := export(cmd, op, w, form, q)
			if err != nil {
				return fmt.Errorf("export %s: %w", form, err)
			}
			fmt.Fprintf(env.stderr, "exported %d %s records\n", n, form)
			return nil
		},
	}
	enumFlag(cmd.Flags(), &format, "format", formstore.FormatCSV, "csv, jsonl or json", formstore.FormatCSV, formstore.FormatJSONL, formstore.FormatJSON)
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file instead of standard output")
	enumFlag(cmd.Flags(), &spam, "spam", "exclude", "the spam folder: exclude, include (after the submissions; jsonl) or only", "exclude", "include", "only")
	store.register(cmd, env)
	return cmd
}

// export writes the waitlist's entries or form's submissions.
func export(cmd *cobra.Command, op manage.Operator, w io.Writer, form string, q manage.ExportQuery) (int, error) {
	if form == "waitlist" {
		return op.ExportWaitlist(cmd.Context(), w, manage.WaitlistExportQuery{Format: q.Format})
	}
	return op.Export(cmd.Context(), w, form, q)
}

// knownForms names the forms an export can name, for a refusal.
func knownForms(cmd *cobra.Command, op manage.Operator) string {
	forms, _, err := op.Ops().Forms(cmd.Context())
	if err != nil {
		return err.Error()
	}
	var ids []string
	for _, f := range forms {
		ids = append(ids, f.ID)
	}
	return strings.Join(ids, ", ")
}
