package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/formsservice/formsservice/services/forms/store"
)

// cmdDeliveries: formsservice deliveries list|retry|drop [ID...|--all] [--format table|jsonl] [-config file].
func cmdDeliveries(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("deliveries", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "usage: formsservice deliveries list [--format table|jsonl]")
		fmt.Fprintln(env.stderr, "       formsservice deliveries retry ID... | --all")
		fmt.Fprintln(env.stderr, "       formsservice deliveries drop ID... | --all")
		fmt.Fprintln(env.stderr, "\nContact messages whose delivery was given up (forms.delivery.maxAttempts or maxAge) wait in")
		fmt.Fprintln(env.stderr, "the dead letters. list shows them; retry hands them back to delivery as new messages (every")
		fmt.Fprintln(env.stderr, "channel again); drop deletes the dead letter (the message itself stays stored until retention")
		fmt.Fprintln(env.stderr, "or forget erases it). ID is the message ID that list, the logs and the webhook-id show.")
		fs.PrintDefaults()
	}
	configPath := configFlag(fs, env)
	all := fs.Bool("all", false, "retry or drop every dead letter")
	format := fs.String("format", "table", "list: table or jsonl")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return errUsage
	}
	action, ids := pos[0], pos[1:]
	switch action {
	case "list":
		if len(ids) != 0 || *all || (*format != "table" && *format != "jsonl") {
			fs.Usage()
			return errUsage
		}
	case "retry", "drop":
		if (len(ids) == 0) != *all { // one or the other: "retry" alone must not mean "everything"
			fs.Usage()
			return errUsage
		}
	default:
		fs.Usage()
		return errUsage
	}
	_, rdb, err := toolStore(*configPath, env)
	if err != nil {
		return err
	}
	defer rdb.Close()

	switch action {
	case "list":
		dead, err := store.ListDeadLetters(ctx, rdb)
		if err != nil {
			return fmt.Errorf("deliveries list: %w", err)
		}
		if *format == "jsonl" {
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
	case "retry":
		moved, err := store.RetryDeadLetters(ctx, rdb, ids)
		if err != nil {
			return fmt.Errorf("deliveries retry: %w", err)
		}
		for old, id := range moved {
			fmt.Fprintf(env.stdout, "%s: queued again as %s\n", old, id)
		}
		fmt.Fprintf(env.stderr, "%d %s handed back to delivery\n", len(moved), plural(len(moved), "message", "messages"))
	case "drop":
		dropped, err := store.DropDeadLetters(ctx, rdb, ids)
		if err != nil {
			return fmt.Errorf("deliveries drop: %w", err)
		}
		for _, id := range dropped {
			fmt.Fprintf(env.stdout, "%s: dropped\n", id)
		}
		fmt.Fprintf(env.stderr, "%d dead %s dropped\n", len(dropped), plural(len(dropped), "letter", "letters"))
	}
	return nil
}

// oneLine keeps an error on one table row: line breaks become spaces, and it is cut at n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
