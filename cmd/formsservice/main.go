// Command formsservice runs the formsservice services and the operators' tools. One binary, one image:
//
//	formsservice forms|auth|health   run one service (production: one per Deployment)
//	formsservice dev                 run every service in one process on 127.0.0.1:8080 (make run)
//	formsservice users ...           manage sign-in accounts
//	formsservice export ...          write stored submissions as CSV or JSON lines
//	formsservice forget ...          erase an e-mail address (GDPR erasure request)
//	formsservice deliveries ...      list, retry or drop contact messages whose delivery was given up
//	formsservice audit ...           list the audit trail of sign-ins, tokens and account changes
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, errUsage) {
			fmt.Fprintln(os.Stderr, "formsservice:", err)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

const usage = `usage: formsservice <command> [flags]

commands:
  forms      run the forms service (POST /contact, POST /waitlist)
  auth       run the OAuth 2.0 / OpenID Connect provider
  health     run the platform health service (GET /health)
  dev        run every service in one process (default 127.0.0.1:8080)
  users      manage sign-in accounts (create, set-password, delete, list)
  export     write stored submissions (waitlist|contact) as csv or jsonl
  forget     erase an e-mail address from every store
  deliveries list, retry or drop contact messages whose delivery was given up
  audit      list the audit trail (sign-ins, tokens, account changes), filtered

Run "formsservice <command> -h" for the command's flags.
`

// run is the whole program; tests call it with their own arguments, environment and streams.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	env := &environment{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	cmd, rest := args[0], args[1:]
	if c, ok := commands()[cmd]; ok {
		return c(ctx, env, rest)
	}
	switch cmd {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprintf(stderr, "unknown command %q\n\n%s", cmd, usage)
	return errUsage
}

// environment is what a command may touch of the outside world.
type environment struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

type command func(ctx context.Context, env *environment, args []string) error

// commands lists every subcommand. Each service's own commands (users, export, forget) live in a file of
// their own and are listed here.
func commands() map[string]command {
	cs := map[string]command{
		"dev":        cmdDev,
		"export":     cmdExport,
		"forget":     cmdForget,
		"users":      cmdUsers,
		"deliveries": cmdDeliveries,
		"audit":      cmdAudit,
	}
	for name := range serviceBuilders {
		cs[name] = func(ctx context.Context, env *environment, args []string) error {
			return cmdServe(ctx, env, name, args)
		}
	}
	return cs
}
