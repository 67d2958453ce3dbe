//go:build !formsonly

package main

import (
	"fmt"
	"log/slog"
	"net"

	"github.com/gofiber/fiber/v2"

	"github.com/spf13/cobra"

	"github.com/formsservice/formsservice/services/demo"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/logging"
	"github.com/formsservice/formsservice/services/platform/mail"
	"github.com/formsservice/formsservice/services/platform/server"
)

// devOrder is the order the dev server mounts the services in (health last: it checks the others).
var devOrder = []string{"forms", "auth", "health"}

func newDevCmd(env *environment) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "run every service in one process for development (make run)",
		Long: `Runs forms, auth and health in one process on http://localhost:8080 (listening on 127.0.0.1 and ::1
only), routed the way the ingress routes them, with the demo page at /demo/, a demo OAuth client and a
demo user (demo@example.com / demo-password). On a loopback address the issuer is localhost, so that
passkeys work; a browser that opens 127.0.0.1 is sent there.
The store is REDIS_URL when set, otherwise an embedded in-memory store whose data is lost on exit.
A --config file is merged over the fixtures (your origins and clients) and reloaded live.`,
		Example: `  formsservice dev
  formsservice dev --config my-app.yaml --addr 127.0.0.1:9090
  REDIS_URL=redis://127.0.0.1:6379/0 formsservice dev`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var names []string
			for _, n := range devOrder {
				if _, ok := serviceBuilders[n]; ok {
					names = append(names, n)
				}
			}
			return serve(cmd.Context(), env, f, names, devParts{})
		},
	}
	f.register(cmd, env, "127.0.0.1:8080")
	readsEnv(cmd, serveEnv...)
	return cmd
}

// devParts is the dev server's devMode: the embedded store (embedded.go), the outbox (devmail.go), the
// demo page and the banner (devbanner.go).
type devParts struct{}

func (devParts) listen(addr string) (net.Listener, string, error) { return devListen(addr) }

func (devParts) before(cfg config.Source) fiber.Handler { return toIssuerHost(cfg) }

func (devParts) embeddedStore(log *slog.Logger) (string, func(), error) {
	mini, err := startEmbeddedRedis(log)
	if err != nil {
		return "", nil, err
	}
	return "redis://" + mini.Addr(), mini.Close, nil
}

func (devParts) mail(cfg config.Source, log *slog.Logger, publicURL string) (mail.Sender, server.Service) {
	return mailSender(cfg, true, log, publicURL)
}

func (devParts) pages(cfg config.Source) ([]server.Service, error) {
	page, err := demo.New(cfg) // /demo/: the SDK's demo page
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	return []server.Service{page}, nil
}

func (devParts) announce(env *environment, log *slog.Logger, lo logging.Options, a devAnnouncement) func() {
	return announceDev(env, log, lo, devState{URL: a.URL, RedisURL: a.RedisURL, Embedded: a.Embedded, Config: a.Config, Started: a.Started}, a.Auth)
}
