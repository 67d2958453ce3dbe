//go:build !formsonly

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// newSpamCmd groups the spam folder's tools: list, release and delete (docs/forms.md "Spam").
func newSpamCmd(env *environment) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "spam",
		Short: "list, release or delete the submissions a form kept as spam",
		Long: `Submissions that scored as spam are kept in their form's spam folder, not delivered. list shows them
with their score and reasons; release hands one to delivery under its ID (it is delivered once; a second
release does nothing); delete erases it. FORM is contact or a declared form's id. The folder is trimmed by
the form's retention and erased by forget, as the delivered submissions are. release and delete are
recorded in the audit trail (form.spam_released, form.submission_deleted), and are what the admin API's
POST …/submissions/ID/release and DELETE …/submissions/ID do.`,
		Example: `  formsservice spam list contact
  formsservice spam release demo 1767323045000-0
  formsservice spam delete demo 1767323045000-0 1767323046000-0`,
		Args: cobra.ArbitraryArgs,
		RunE: needSubcommand,
	}
	cmd.AddCommand(newSpamListCmd(env), newSpamActCmd(env, "release"), newSpamActCmd(env, "delete"))
	readsEnv(cmd, storeEnv...)
	return cmd
}

// spamQueue is the queue of form: /contact's, or a declared form's (which the configuration in use
// need not declare any more: its folder still holds what it kept).
func spamQueue(form string) (store.Queue, error) {
	switch {
	case form == "contact":
		return store.ContactQueue, nil
	case form == "waitlist":
		return store.Queue{}, errors.New("the waitlist keeps no spam folder: name contact or a declared form's id")
	case !config.ValidFormID(form):
		return store.Queue{}, fmt.Errorf("%q is not a form id: name contact or a declared form's id", form)
	}
	return store.FormQueue(form), nil
}

func newSpamListCmd(env *environment) *cobra.Command {
	var st storeFlags
	var format string
	cmd := &cobra.Command{
		Use:     "list FORM [--format table|jsonl]",
		Short:   "print a form's spam folder, oldest first (a table, or JSON lines with the records)",
		Example: "  formsservice spam list contact\n  formsservice spam list demo --format jsonl",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			q, err := spamQueue(args[0])
			if err != nil {
				return err
			}
			_, rdb, err := st.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
			enc := json.NewEncoder(env.stdout)
			if format == "table" {
				fmt.Fprintln(tw, "ID\tRECEIVED\tSCORE\tREASONS\tFROM\tTEXT")
			}
			n := 0
			for after := ""; ; {
				page, next, err := store.ListSpam(cmd.Context(), rdb, q, after, 200)
				if err != nil {
					return fmt.Errorf("spam list: %w", err)
				}
				for _, e := range page {
					n++
					if format == "jsonl" {
						if err := enc.Encode(e); err != nil {
							return err
						}
						continue
					}
					from, text := spamSummary(e.Record)
					fmt.Fprintf(tw, "%s\t%s\t%.1f\t%s\t%s\t%s\n", e.ID, store.StreamTime(e.ID).UTC().Format(time.RFC3339), e.Verdict.Score,
						strings.Join(e.Verdict.Reasons, ","), from, oneLine(text, 60))
				}
				if next == "" {
					break
				}
				after = next
			}
			if format == "table" {
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			fmt.Fprintf(env.stderr, "%d in %s's spam folder\n", n, args[0])
			return nil
		},
	}
	enumFlag(cmd.Flags(), &format, "format", "table", "table or jsonl", "table", "jsonl")
	st.register(cmd, env)
	return cmd
}

// spamSummary is a kept record's sender address and text, for the table: a contact message's e-mail and
// message, a declared form's first value with an @ and its longest text.
func spamSummary(raw json.RawMessage) (from, text string) {
	var rec struct {
		Email   string          `json:"email"`
		Message string          `json:"message"`
		Fields  json.RawMessage `json:"fields"`
	}
	if json.Unmarshal(raw, &rec) != nil {
		return "", ""
	}
	if rec.Email != "" {
		return rec.Email, rec.Message
	}
	var fields store.Values
	if json.Unmarshal(rec.Fields, &fields) != nil {
		return "", ""
	}
	for _, f := range fields {
		s, _ := f.Value.(string)
		if from == "" && strings.Contains(s, "@") {
			from = s
		} else if len(s) > len(text) {
			text = s
		}
	}
	return from, text
}

// newSpamActCmd is `spam release` or `spam delete`: named entries of one form's folder.
func newSpamActCmd(env *environment, action string) *cobra.Command {
	var st storeFlags
	short := map[string]string{
		"release": "deliver kept spam after all, once, under its ID",
		"delete":  "erase kept spam for good (it is never delivered)",
	}[action]
	cmd := &cobra.Command{
		Use:     action + " FORM ID...",
		Short:   short,
		Example: fmt.Sprintf("  formsservice spam %s contact 1767323045000-0", action),
		Args:    usageArgs(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := spamQueue(args[0]); err != nil {
				return err
			}
			cfg, rdb, err := st.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			op := formsOperator(rdb, cfg, env)
			var failed []string
			for _, id := range args[1:] {
				if !store.ValidStreamID(id) {
					err = errors.New("not a spam ID (want <milliseconds>-<sequence>, as spam list shows them)")
				} else if action == "release" {
					err = op.Release(cmd.Context(), args[0], id)
				} else {
					_, err = op.DeleteSubmission(cmd.Context(), args[0], id, store.FolderSpam)
				}
				if errors.Is(err, store.ErrNoSuchSubmission) {
					err = store.ErrNotInFolder
				}
				if err != nil {
					fmt.Fprintf(env.stderr, "%s: %v\n", id, err)
					failed = append(failed, id)
					continue
				}
				if action == "release" {
					fmt.Fprintf(env.stdout, "%s: released (delivered once, under this ID)\n", id)
				} else {
					fmt.Fprintf(env.stdout, "%s: deleted\n", id)
				}
			}
			if failed != nil {
				return fmt.Errorf("spam %s: %d of %d not done: %s", action, len(failed), len(args)-1, strings.Join(failed, " "))
			}
			return nil
		},
	}
	st.register(cmd, env)
	return cmd
}
