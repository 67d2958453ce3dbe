//go:build formsonly

package main

import "github.com/spf13/cobra"

// The forms-only build (`go build -tags formsonly`, hack/build.sh makes it formsservice-forms): the same
// `formsservice forms` command and nothing else, so that the process serving forms does not load the
// sign-in provider's packages (fosite and the OpenTelemetry, gRPC and protobuf code it brings), the dev
// server or the tools. `formsservice forms` hands over to it (handoff.go); docs/architecture.md, D31.

func commands(env *environment) []*cobra.Command {
	return []*cobra.Command{newServeCmd(env, "forms")}
}

var serviceBuilders = map[string]builder{"forms": buildForms}

// handOffForms: this is the forms binary.
func handOffForms([]string) {}

const rootLong = `This is formsservice-forms: the forms service of formsservice built alone, which formsservice forms
runs when it is installed beside formsservice. It has the forms command and nothing else.`

const rootExample = `  formsservice forms --config /etc/formsservice/config.yaml`
