//go:build !formsonly

package main

import "github.com/spf13/cobra"

// commands are the root's commands. Adding one: write newXxxCmd in its own file and list it here.
func commands(env *environment) []*cobra.Command {
	return []*cobra.Command{
		newServeCmd(env, "forms"),
		newServeCmd(env, "auth"),
		newServeCmd(env, "health"),
		newDevCmd(env),
		newUsersCmd(env),
		newExportCmd(env),
		newForgetCmd(env),
		newDeliveriesCmd(env),
		newSpamCmd(env),
		newAuditCmd(env),
		newBackupCmd(env),
		newRestoreCmd(env),
		newCheckHealthCmd(env),
		newRedisHAConfigCmd(env), // hidden: the init container of the highly available managed Redis (D41)
	}
}

// serviceBuilders constructs each service by name.
var serviceBuilders = map[string]builder{
	"forms":  buildForms,
	"auth":   buildAuth,
	"health": buildHealth,
}

const rootLong = `formsservice runs the formsservice services and the tools to manage their data. One image:
in production each service runs as its own Deployment (formsservice forms|auth|health), and
formsservice dev runs all of them in one process for development (make run). formsservice forms runs
as formsservice-forms, the forms service built alone, when that binary is installed beside this one.`

const rootExample = `  formsservice dev                           # everything on http://localhost:8080 (make run)
  formsservice users list                    # next to a running dev server: finds its store
  formsservice forms --config /etc/formsservice/config.yaml
  formsservice users create --email ada@example.com --help`
