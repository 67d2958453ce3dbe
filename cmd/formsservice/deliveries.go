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

	formstore "github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// newDeliveriesCmd groups the dead-letter tools: list, retry and drop.
func newDeliveriesCmd(env *environment) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "deliveries",
		Short: "list, retry or drop submissions whose delivery was given up",
		Long: `Contact messages (or, with --form, a declared form's submissions) whose delivery was given up
(forms.delivery.maxAttempts or maxAge) wait in the dead letters. list shows them; retry hands them back to
delivery under their ID (the same webhook-id and Message-ID; every channel again); drop deletes the dead
letter (the message itself stays stored until retention or forget erases it). ID is the message ID that
list, the logs and the webhook-id show. retry and drop are recorded in the audit trail
(form.dead_letter_retried, form.dead_letter_discarded), and are what the admin API's
POST …/dead-letters/ID/retry and DELETE …/dead-letters/ID do.`,
		Example: `  formsservice deliveries list
  formsservice deliveries retry --all
  formsservice deliveries drop 1767323045000-0
  formsservice deliveries list --form demo`,
		Args: cobra.ArbitraryArgs,
		RunE: needSubcommand,
	}
	cmd.AddCommand(newDeliveriesListCmd(env), newDeliveriesActCmd(env, "retry"), newDeliveriesActCmd(env, "drop"))
	readsEnv(cmd, storeEnv...)
	return cmd
}

// deliveriesQueue is the queue --form names: the contact messages', or a declared form's.
func deliveriesQueue(form string) (formstore.Queue, error) {
	switch {
	case form == "contact":
		return formstore.ContactQueue, nil
	case form == "waitlist" || !config.ValidFormID(form):
		return formstore.Queue{}, fmt.Errorf("--form %q: name contact or a declared form's id", form)
	}
	return formstore.FormQueue(form), nil
}

func newDeliveriesListCmd(env *environment) *cobra.Command {
	var store storeFlags
	var format, form string
	cmd := &cobra.Command{
		Use:     "list [--format table|jsonl]",
		Short:   "print the dead letters (a table, or JSON lines)",
		Example: "  formsservice deliveries list\n  formsservice deliveries list --format jsonl",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := deliveriesQueue(form)
			if err != nil {
				return usageError(cmd, err)
			}
			_, rdb, err := store.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			dead, err := q.DeadLetterList(cmd.Context(), rdb)
			if err != nil {
				return fmt.Errorf("deliveries list: %w", err)
			}
			if format == "jsonl" {
				enc := json.NewEncoder(env.stdout)
				for _, d := range dead {
					if err := enc.Encode(d); err != nil {
						return err
					}
				}
				return nil
			}
			tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tRECEIVED\tGIVEN UP\tCHANNEL\tATTEMPTS\tLAST ERROR")
			for _, d := range dead {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", d.ID, d.Received.Format(time.RFC3339), d.Died.Format(time.RFC3339),
					d.Channel, d.Attempts, oneLine(d.Reason, 100))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(env.stderr, "%d dead %s\n", len(dead), plural(len(dead), "letter", "letters"))
			return nil
		},
	}
	enumFlag(cmd.Flags(), &format, "format", "table", "table or jsonl", "table", "jsonl")
	cmd.Flags().StringVar(&form, "form", "contact", "the form: contact or a declared form's id")
	store.register(cmd, env)
	return cmd
}

// newDeliveriesActCmd is `deliveries retry` or `deliveries drop`: named dead letters, or --all.
func newDeliveriesActCmd(env *environment, action string) *cobra.Command {
	var store storeFlags
	var all bool
	var form string
	short := map[string]string{
		"retry": "hand dead letters back to delivery under their ID (every channel again)",
		"drop":  "delete dead letters (the messages stay stored until retention or forget)",
	}[action]
	cmd := &cobra.Command{
		Use:     action + " ID... | --all",
		Short:   short,
		Example: fmt.Sprintf("  formsservice deliveries %[1]s 1767323045000-0 1767323046000-0\n  formsservice deliveries %[1]s --all", action),
		Args: usageArgs(func(_ *cobra.Command, ids []string) error {
			if (len(ids) == 0) != all { // one or the other: a bare "retry" must not mean "everything"
				return errors.New("name the dead letters' IDs, or --all (not both)")
			}
			return nil
		}),
		RunE: func(cmd *cobra.Command, ids []string) error {
			if _, err := deliveriesQueue(form); err != nil {
				return usageError(cmd, err)
			}
			cfg, rdb, err := store.open(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer rdb.Close()
			op := formsOperator(rdb, cfg, env)
			if action == "retry" {
				moved, err := op.RetryDeadLetters(cmd.Context(), form, ids)
				if err != nil {
					return fmt.Errorf("deliveries retry: %w", err)
				}
				for _, id := range moved {
					fmt.Fprintf(env.stdout, "%s: queued again (same ID, webhook-id and Message-ID)\n", id)
				}
				fmt.Fprintf(env.stderr, "%d %s handed back to delivery\n", len(moved), plural(len(moved), "message", "messages"))
				return nil
			}
			dropped, err := op.DiscardDeadLetters(cmd.Context(), form, ids)
			if err != nil {
				return fmt.Errorf("deliveries drop: %w", err)
			}
			for _, id := range dropped {
				fmt.Fprintf(env.stdout, "%s: dropped\n", id)
			}
			fmt.Fprintf(env.stderr, "%d dead %s dropped\n", len(dropped), plural(len(dropped), "letter", "letters"))
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, action+" every dead letter")
	cmd.Flags().StringVar(&form, "form", "contact", "the form: contact or a declared form's id")
	store.register(cmd, env)
	return cmd
}

// oneLine keeps an error on one table row: line breaks become spaces, and it is cut at n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
