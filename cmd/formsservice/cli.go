package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// The command line is spf13/cobra with pflag's GNU-style flags (--config FILE, --config=FILE, -o FILE),
// as kubectl and helm use (docs/architecture.md, D16). A command is one
// function, newXxxCmd(env), in a file of its own, listed once in newRootCmd.

// newRootCmd builds the whole command tree. Adding a command: write newXxxCmd in its own file (see
// forget.go for a small one) and add it to the list in commands.go.
func newRootCmd(env *environment) *cobra.Command {
	root := &cobra.Command{
		Use:           "formsservice",
		Short:         "the formsservice services (forms, auth, health) and the operators' tools",
		Long:          rootLong,    // commands.go, formsonly.go
		Example:       rootExample, // commands.go, formsonly.go
		Version:       buildVersion(),
		Args:          noSubcommand,
		SilenceErrors: true, // run prints errors once, in one format
		SilenceUsage:  true, // a failure that is not a usage error does not print the usage
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(env.stderr) // bare `formsservice`: the overview on stderr, exit 2
			cmd.Help()             //nolint:errcheck // writes to a stream we own
			return errUsage
		},
	}
	root.SetVersionTemplate(versionText() + "\n")
	readsEnv(root, append([]envVar{{"ADDR", "listen address of the serving commands when --addr is not given"}}, storeEnv...)...)
	root.AddCommand(commands(env)...) // commands.go (formsonly.go in the forms-only build)
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetIn(env.stdin)
	root.SetOut(env.stdout) // --help and --version go to stdout and exit 0
	root.SetErr(env.stderr)
	root.SetUsageFunc(printUsage)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError(cmd, err) })
	root.PersistentFlags().SortFlags = false
	return root
}

// envVar is an environment variable a command reads, listed in its --help.
type envVar struct{ name, doc string }

// readsEnv records the environment variables a command reads, for its --help.
func readsEnv(cmd *cobra.Command, vars ...envVar) {
	var b strings.Builder
	width := 0
	for _, v := range vars {
		width = max(width, len(v.name))
	}
	for _, v := range vars {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, v.name, v.doc)
	}
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations["env"] = b.String()
}

// printUsage is cobra's usage text (usage line, examples, commands, flags) plus the environment
// variables the command reads.
func printUsage(cmd *cobra.Command) error {
	w := cmd.OutOrStderr()
	fmt.Fprint(w, "Usage:\n")
	if cmd.Runnable() && !cmd.HasAvailableSubCommands() { // a group runs only to say a command is missing
		fmt.Fprintf(w, "  %s\n", cmd.UseLine())
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(w, "  %s <command> [flags]\n", cmd.CommandPath())
	}
	if cmd.HasExample() {
		fmt.Fprintf(w, "\nExamples:\n%s\n", strings.TrimRight(cmd.Example, "\n"))
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprint(w, "\nCommands:\n")
		for _, c := range cmd.Commands() {
			if c.IsAvailableCommand() {
				fmt.Fprintf(w, "  %-*s %s\n", cmd.NamePadding(), c.Name(), c.Short)
			}
		}
	}
	if cmd.HasAvailableLocalFlags() {
		fmt.Fprintf(w, "\nFlags:\n%s", cmd.LocalFlags().FlagUsages())
	}
	if cmd.HasAvailableInheritedFlags() {
		fmt.Fprintf(w, "\nGlobal flags:\n%s", cmd.InheritedFlags().FlagUsages())
	}
	if env := cmd.Annotations["env"]; env != "" {
		fmt.Fprintf(w, "\nEnvironment variables:\n%s", env)
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\nRun \"%s <command> --help\" for a command's flags and examples.\n", cmd.CommandPath())
	}
	return nil
}

// errUsage marks a command line that was not understood; the message and a pointer to --help are
// printed already, and the exit status is 2 (as for Go's flag package and most Unix tools).
var errUsage = errors.New("usage")

type usageErr struct {
	cmd *cobra.Command
	err error
}

func (e *usageErr) Error() string        { return e.err.Error() }
func (e *usageErr) Is(target error) bool { return target == errUsage }
func (e *usageErr) Unwrap() error        { return e.err }

// usageError says that cmd's command line was wrong, and why.
func usageError(cmd *cobra.Command, err error) error { return &usageErr{cmd: cmd, err: err} }

// usageArgs turns cobra's argument checks into usage errors.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError(cmd, err)
		}
		return nil
	}
}

// needSubcommand is the RunE of a command that only groups others (users, deliveries): without one, or
// with an unknown one, it is a usage error that suggests the closest name.
func needSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return usageError(cmd, fmt.Errorf("%s needs a command: %s", cmd.CommandPath(), strings.Join(subcommandNames(cmd), ", ")))
	}
	return noSubcommand(cmd, args)
}

// noSubcommand refuses an argument where a command name was expected, suggesting the closest one.
func noSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := closestCommand(cmd, args[0]); s != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	}
	return usageError(cmd, errors.New(msg))
}

// closestCommand is the subcommand within two edits of name (a swapped pair, "fomrs", is two), the
// nearest if several; cobra's own suggestions stop at one edit.
func closestCommand(cmd *cobra.Command, name string) string {
	best, bestDist := "", 3
	for _, n := range subcommandNames(cmd) {
		if d := levenshtein.ComputeDistance(strings.ToLower(name), n); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

func subcommandNames(cmd *cobra.Command) []string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return names
}

// printUsageError writes a usage error the way every command does: what was wrong, then where help is.
func printUsageError(w io.Writer, err error) {
	var ue *usageErr
	path := "formsservice"
	if errors.As(err, &ue) && ue.cmd != nil {
		path = ue.cmd.CommandPath()
	}
	fmt.Fprintf(w, "%s: %v\nRun '%s --help' for usage.\n", path, err, path)
}

// legacyFlags rewrites the single-dash long flags of earlier releases (-config, -addr, -drain-delay,
// -email...) to pflag's double dash, before "--" only. Deployments rendered by earlier operators pass
// `-config FILE -drain-delay 5s`, and scripts were written against the old spelling: both keep
// working. Single-letter shorthands (-o, -h) are pflag's own and stay as they are.
func legacyFlags(root *cobra.Command, args []string) []string {
	long := map[string]bool{"help": true, "version": true}
	var collect func(c *cobra.Command)
	collect = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) { long[f.Name] = true })
		for _, sub := range c.Commands() {
			collect(sub)
		}
	}
	collect(root)
	out := make([]string, len(args))
	copy(out, args)
	for i, a := range out {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || strings.HasPrefix(a, "--") {
			continue
		}
		name, _, _ := strings.Cut(a[1:], "=")
		if len(name) > 1 && long[name] {
			out[i] = "-" + a
		}
	}
	return out
}

// requireFlags is a PreRunE that refuses the command line, as a usage error, when one of the named
// flags is missing or empty.
func requireFlags(names ...string) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		for _, n := range names {
			if f := cmd.Flags().Lookup(n); f == nil || f.Value.String() == "" {
				return usageError(cmd, fmt.Errorf("--%s is required", n))
			}
		}
		return nil
	}
}

// enumValue is a string flag that takes one of a few values; pflag refuses any other with the list.
type enumValue struct {
	v       *string
	allowed []string
}

func (e *enumValue) String() string { return *e.v }
func (e *enumValue) Type() string   { return "string" }
func (e *enumValue) Set(s string) error {
	if !slices.Contains(e.allowed, s) {
		return fmt.Errorf("want %s", orList(e.allowed))
	}
	*e.v = s
	return nil
}

// enumFlag declares --name, one of allowed, defaulting to def.
func enumFlag(fl *pflag.FlagSet, v *string, name, def, usage string, allowed ...string) {
	*v = def
	fl.Var(&enumValue{v: v, allowed: allowed}, name, usage)
}

// orList writes "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// isTerminal reports whether w is a terminal (a person reads it, not a program).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
