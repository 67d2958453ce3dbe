package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// cli runs the program with args and an empty environment, and returns what it wrote.
func cli(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(t.Context(), args, devEnv(t, nil), strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), err
}

// readsNoEnvironment are the commands that touch no store and read no environment variable.
var readsNoEnvironment = map[string]bool{"formsservice check-health": true}

// allCommands lists the path of every command in the tree, the root first.
func allCommands() [][]string {
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				walk(sub, append(append([]string{}, path...), sub.Name()))
			}
		}
	}
	walk(newRootCmd(&environment{getenv: func(string) string { return "" }}), nil)
	return paths
}

func TestEveryCommand_Help_ExitsZeroWithDescriptionExamplesAndEnvironment(t *testing.T) {
	paths := allCommands()
	if len(paths) < 19 {
		t.Fatalf("only %d commands found: %v", len(paths), paths)
	}
	for _, path := range paths {
		for _, help := range []string{"--help", "-h"} {
			out, errOut, err := cli(t, append(append([]string{}, path...), help)...)
			name := strings.Join(append([]string{"formsservice"}, path...), " ")
			if err != nil || errOut != "" {
				t.Errorf("%s %s: %v, stderr %q", name, help, err, errOut)
				continue
			}
			wants := []string{"Usage:\n", "Examples:\n  ", "Environment variables:\n  ", "  REDIS_URL ", "-h, --help"}
			if readsNoEnvironment[name] {
				wants = []string{"Usage:\n", "Examples:\n  ", "-h, --help"}
				if strings.Contains(out, "Environment variables:") {
					t.Errorf("%s %s lists environment variables it does not read", name, help)
				}
			}
			for _, want := range wants {
				if !strings.Contains(out, want) {
					t.Errorf("%s %s lacks %q:\n%s", name, help, want, out)
				}
			}
			if first, _, _ := strings.Cut(out, "\n"); len(first) < 20 || strings.HasPrefix(first, "Usage") {
				t.Errorf("%s %s does not start with a description: %q", name, help, first)
			}
			if singleDashLong.MatchString(out) {
				t.Errorf("%s %s shows a single-dash long flag:\n%s", name, help, out)
			}
		}
	}
}

// singleDashLong finds a long flag written with one dash (-config) at the start of a help line.
var singleDashLong = regexp.MustCompile(`(?m)^\s+(-[a-z]\s*,\s*)?-[a-z][a-z-]+\b`)

// Each subcommand lists its own flags only: `users create --help` listed -json, which belongs to list.
func TestHelp_ListsOnlyTheCommandsOwnFlags(t *testing.T) {
	out, _, _ := cli(t, "users", "create", "--help")
	if !strings.Contains(out, "--email") || !strings.Contains(out, "--name") || strings.Contains(out, "json") || strings.Contains(out, "--format") {
		t.Errorf("users create --help:\n%s", out)
	}
	out, _, _ = cli(t, "users", "list", "--help")
	if !strings.Contains(out, "--format") || strings.Contains(out, "--email") || strings.Contains(out, "--json") {
		t.Errorf("users list --help (--json is deprecated, so hidden):\n%s", out)
	}
}

func TestVersion_PrintsModuleVersionAndGoRelease(t *testing.T) {
	for _, flag := range []string{"--version", "-v"} {
		out, _, err := cli(t, flag)
		if err != nil || !strings.HasPrefix(out, "formsservice "+buildVersion()+"\n") ||
			!strings.Contains(out, "module github.com/formsservice/formsservice") || !strings.Contains(out, "go1.") {
			t.Errorf("%s: %v\n%s", flag, err, out)
		}
	}
}

func TestUsageErrors_ExitAsUsageAndPointAtHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "Commands:"},
		{[]string{"fomrs"}, `unknown command "fomrs" for "formsservice" (did you mean forms?)`},
		{[]string{"users"}, "formsservice users needs a command: create, delete, disable, enable, factors, groups, identities, list, purge-unverified, remove-passkey, reset-mfa, send-verification, set-password, signout, unlink"},
		{[]string{"users", "creat"}, "(did you mean create?)"},
		{[]string{"users", "create"}, "formsservice users create: --email is required"},
		{[]string{"users", "list", "--format", "xml"}, `invalid argument "xml" for "--format" flag: want table or jsonl`},
		{[]string{"dev", "--log-format", "pretty"}, `invalid argument "pretty" for "--log-format" flag: want auto, text or json`},
		{[]string{"users", "create", "--email", "a@example.com", "--json"}, "unknown flag: --json"},
		{[]string{"export", "Users!"}, `invalid argument "Users!" for "formsservice export"`},
		{[]string{"export", "waitlist", "--frobnicate"}, "unknown flag: --frobnicate"},
		{[]string{"forms", "--addr"}, "flag needs an argument: --addr"},
		{[]string{"deliveries", "retry"}, "name the dead letters' IDs, or --all (not both)"},
		{[]string{"dev", "extra"}, `unknown command "extra" for "formsservice dev"`},
	} {
		_, errOut, err := cli(t, tc.args...)
		if !errors.Is(err, errUsage) {
			t.Errorf("%v: %v, want a usage error", tc.args, err)
		}
		if !strings.Contains(errOut, tc.want) || (tc.args != nil && !strings.Contains(errOut, "--help' for usage")) {
			t.Errorf("%v: stderr %q, want %q and a pointer to --help", tc.args, errOut, tc.want)
		}
	}
}

// The operator's Deployments (controllers/render/workloads.go) and earlier scripts pass single-dash long
// flags; they keep working.
func TestLegacySingleDashFlags_StillRead(t *testing.T) {
	root := newRootCmd(&environment{getenv: func(string) string { return "" }})
	args := legacyFlags(root, []string{"forms", "-config", "/etc/formsservice/config.yaml", "-drain-delay", "5s", "-addr=:9090"})
	cmd, rest, err := root.Find(args)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"config": "/etc/formsservice/config.yaml", "drain-delay": "5s", "addr": ":9090"} {
		if got := cmd.Flags().Lookup(name).Value.String(); got != want {
			t.Errorf("--%s = %q, want %q", name, got, want)
		}
	}
	got := legacyFlags(root, []string{"export", "waitlist", "-o", "f", "-ofile", "--", "-email"})
	if want := []string{"export", "waitlist", "-o", "f", "-ofile", "--", "-email"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("shorthands and arguments after -- changed: %q", got)
	}
}

func TestTools_StoreAndConfigErrors_NameWhatToChange(t *testing.T) {
	_, _, err := cli(t, "users", "list")
	if err == nil || !strings.HasPrefix(err.Error(), "no store configured: set REDIS_URL, or --config FILE with a redis section, or start the dev server") {
		t.Errorf("without a store: %v", err)
	}
	cfg := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(cfg, []byte("allowedOrigins: [http://localhost:3000]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cli(t, "users", "list", "--config", cfg); err == nil || !strings.Contains(err.Error(), cfg+" has no redis section") {
		t.Errorf("a file without a store: %v", err)
	}
	if err := os.WriteFile(cfg, []byte("auth:\n  clients:\n  - clientId: my-app\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := "config file " + cfg + ": auth.clients[0].clientId: unknown key (did you mean clientID?)"
	for _, args := range [][]string{{"users", "list", "--config", cfg}, {"forms", "--config", cfg, "--addr", "127.0.0.1:0"}} {
		if _, _, err := cli(t, args...); err == nil || err.Error() != want {
			t.Errorf("%v: %v, want %q", args, err, want)
		}
	}
	if _, _, err := cli(t, "forms", "--addr", "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "no store configured: set REDIS_URL") {
		t.Errorf("forms without a store: %v", err)
	}
}
