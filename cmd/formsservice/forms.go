package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/forms"
	"github.com/formsservice/formsservice/services/forms/store"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/redisclient"
	"github.com/formsservice/formsservice/services/platform/server"
)

// buildForms constructs the forms service (POST /contact, POST /waitlist and the delivery worker).
func buildForms(d deps) (server.Service, error) {
	return forms.New(forms.Options{
		Config:     d.Config,
		Redis:      d.Redis,
		Logger:     d.Logger.With("component", "forms"),
		Registerer: d.Metrics.Registry,
	})
}

// cmdExport: formsservice export waitlist|contact [--format csv|jsonl] [-o file] [-config file].
func cmdExport(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "usage: formsservice export waitlist|contact [--format csv|jsonl] [-o file] [-config file]")
		fmt.Fprintln(env.stderr, "\nWrites what was stored, oldest first, to standard output (or -o). Redis comes from the")
		fmt.Fprintln(env.stderr, "configuration file or REDIS_URL, as for the services.")
		fs.PrintDefaults()
	}
	configPath := configFlag(fs, env)
	format := fs.String("format", store.FormatCSV, "csv or jsonl")
	output := fs.String("o", "", "write to this file instead of standard output")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || (pos[0] != "waitlist" && pos[0] != "contact") {
		fs.Usage()
		return errUsage
	}
	if *format != store.FormatCSV && *format != store.FormatJSONL {
		fmt.Fprintf(env.stderr, "--format %q: want csv or jsonl\n", *format)
		return errUsage
	}
	_, rdb, err := toolStore(*configPath, env)
	if err != nil {
		return err
	}
	defer rdb.Close()
	w := env.stdout
	if *output != "" {
		f, err := os.OpenFile(*output, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600) // personal data: owner only
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	export := store.ExportWaitlist
	if pos[0] == "contact" {
		export = store.ExportContact
	}
	n, err := export(ctx, rdb, w, *format)
	if err != nil {
		return fmt.Errorf("export %s: %w", pos[0], err)
	}
	fmt.Fprintf(env.stderr, "exported %d %s records\n", n, pos[0])
	return nil
}

// cmdForget: formsservice forget --email ADDRESS [-config file].
func cmdForget(ctx context.Context, env *environment, args []string) error {
	fs := flag.NewFlagSet("forget", flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "usage: formsservice forget --email ADDRESS [-config file]")
		fmt.Fprintln(env.stderr, "\nErases the address from the waitlist, every stored contact message and the dead letters (a GDPR erasure")
		fmt.Fprintln(env.stderr, "request) and says what it removed. The address is compared in lower case.")
		fs.PrintDefaults()
	}
	configPath := configFlag(fs, env)
	email := fs.String("email", "", "the address to erase")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || *email == "" {
		fs.Usage()
		return errUsage
	}
	_, rdb, err := toolStore(*configPath, env)
	if err != nil {
		return err
	}
	defer rdb.Close()
	rep, err := store.Forget(ctx, rdb, *email)
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
	fmt.Fprintln(env.stdout)
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// configFlag is the -config flag of the tools, defaulting like the services'.
func configFlag(fs *flag.FlagSet, env *environment) *string {
	return fs.String("config", defaultConfigPath(env),
		"configuration file (YAML), as the services read it; REDIS_URL overrides its redis section")
}

// parseInterspersed parses flags that may come before or after the positional arguments
// (`export waitlist --format csv` as well as `export --format csv waitlist`).
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, errUsage // the flag package has printed why (or the help)
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// toolStore connects a one-shot tool to the store the services use. There is no embedded store here:
// exporting the dev server's in-memory data would export nothing.
func toolStore(configPath string, env *environment) (*config.Config, redis.UniversalClient, error) {
	cfg, err := config.Load(configPath, env.getenv)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Redis.Empty() {
		return nil, nil, errors.New("no store configured: set redis in the configuration (-config) or REDIS_URL")
	}
	rdb, err := redisclient.New(cfg.Redis, env.getenv)
	return cfg, rdb, err
}
