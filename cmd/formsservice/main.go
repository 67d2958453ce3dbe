// Command formsservice runs the formsservice services and the operators' tools. One binary, one image:
//
//	formsservice forms|auth|health   run one service (production: one per Deployment)
//	formsservice dev                 run every service in one process on localhost:8080 (make run)
//	formsservice users ...           manage sign-in accounts
//	formsservice export ...          write stored submissions as CSV or JSON lines
//	formsservice forget ...          erase an e-mail address (GDPR erasure request)
//	formsservice deliveries ...      list, retry or drop contact messages whose delivery was given up
//
// `formsservice forms` hands over to formsservice-forms, the same command built alone (-tags formsonly,
// hack/build.sh), when that binary sits beside this one: handoff.go.
//
// `formsservice <command> --help` describes each; cli.go says how the command line is built.
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
	handOffForms(os.Args[1:]) // `formsservice forms` runs as formsservice-forms when it is there (handoff.go)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, errUsage) {
			os.Exit(2) // already explained on stderr
		}
		fmt.Fprintln(os.Stderr, "formsservice:", err)
		os.Exit(1)
	}
}

// run is the whole program; tests call it with their own arguments, environment and streams.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	env := &environment{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRootCmd(env)
	root.SetArgs(legacyFlags(root, args))
	err := root.ExecuteContext(ctx)
	var ue *usageErr
	if errors.As(err, &ue) {
		printUsageError(stderr, err)
	}
	return err
}

// environment is what a command may touch of the outside world.
type environment struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}
