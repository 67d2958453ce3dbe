package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/logging"
	"github.com/formsservice/formsservice/services/platform/mail"
	"github.com/formsservice/formsservice/services/platform/redisclient"
	"github.com/formsservice/formsservice/services/platform/server"
)

// deps is everything a service constructor may use; constructors take nothing from globals.
type deps struct {
	Config  config.Source
	Redis   redis.UniversalClient
	Logger  *slog.Logger
	Metrics *server.Metrics
	Getenv  func(string) string
	// Dev is true in the all-in-one dev server.
	Dev bool
	// Peers are the services built before this one in the same process (the dev server's health
	// service checks them directly instead of over HTTP).
	Peers []server.Service
	// Mail sends transactional mail (devmail.go).
	Mail mail.Sender
	// EmbeddedStore is true when Redis is the dev server's in-memory store, which keeps nothing.
	EmbeddedStore bool
	// Stderr is the process's standard error (the audit trail writes its own stream there).
	Stderr io.Writer
	// Service names what the process serves: "forms", or "forms+auth+health" in the dev server.
	Service string
}

// builder constructs one service; each lives in the service's own file here (forms.go, auth.go,
// health.go). serviceBuilders (commands.go, or formsonly.go in the forms-only build) names them.
type builder func(d deps) (server.Service, error)

// devMode is what the dev server adds to serving (dev.go): the embedded store, the outbox its mail goes
// to, the demo page and the banner. Serving one service (production) has none of it: serve gets nil.
type devMode interface {
	// listen opens the listener and names the server's public URL (devlisten.go).
	listen(addr string) (ln net.Listener, publicURL string, err error)
	// before runs ahead of the routes (devhost.go).
	before(cfg config.Source) fiber.Handler
	// embeddedStore starts the in-memory store used when no Redis is configured.
	embeddedStore(log *slog.Logger) (redisURL string, stop func(), err error)
	// mail is the sender the services use, and the outbox to mount.
	mail(cfg config.Source, log *slog.Logger, publicURL string) (mail.Sender, server.Service)
	// pages are the services only the dev server mounts (the demo page).
	pages(cfg config.Source) ([]server.Service, error)
	// announce says where the dev server is and writes its state file; the returned func removes it.
	announce(env *environment, log *slog.Logger, lo logging.Options, s devAnnouncement) (remove func())
}

// devAnnouncement is what the dev server announces once it serves.
type devAnnouncement struct {
	URL, RedisURL, Config string
	Embedded              bool
	Started               time.Time
	Auth                  config.Auth // the provider's configuration at the start (the console's link)
}

// serveFlags are shared by every serving command.
type serveFlags struct {
	configPath string
	addr       string
	drainDelay time.Duration
	logFormat  string
}

func (f *serveFlags) register(cmd *cobra.Command, env *environment, defaultAddr string) {
	fl := cmd.Flags()
	fl.SortFlags = false
	configFlag(fl, env, &f.configPath, "configuration file (YAML); reloaded live when it changes")
	fl.StringVar(&f.addr, "addr", cmp.Or(env.getenv("ADDR"), defaultAddr), "listen address (host:port; port 0 picks a free one)")
	fl.DurationVar(&f.drainDelay, "drain-delay", 0, "on SIGTERM, how long /readyz answers 503 before the listener closes")
	enumFlag(fl, &f.logFormat, "log-format", cmp.Or(env.getenv("FORMSSERVICE_LOG_FORMAT"), "auto"),
		"auto (text on a terminal, else JSON lines), text or json", "auto", "text", "json")
}

// logOptions resolves --log-format: readable text for a person at a terminal, JSON lines for everything
// else (a log collector, a pipe, a test).
func (f *serveFlags) logOptions(env *environment, level string) (logging.Options, error) {
	term := isTerminal(env.stderr)
	o := logging.Options{Level: level, Color: term && env.getenv("NO_COLOR") == "" && env.getenv("TERM") != "dumb"}
	switch f.logFormat {
	case "auto":
		o.Text = term
	case "text":
		o.Text = true
	case "json":
	default: // only FORMSSERVICE_LOG_FORMAT can get here; the flag checks its own value
		return o, fmt.Errorf("FORMSSERVICE_LOG_FORMAT=%q: want auto, text or json", f.logFormat)
	}
	return o, nil
}

// serviceHelp describes each service command for its --help.
var serviceHelp = map[string]struct{ short, long string }{
	"forms": {"run the forms service (POST /contact, POST /waitlist)",
		`Runs the forms service: POST /contact and POST /waitlist with origin checks, CORS, validation, rate
limits and durable delivery of contact messages (docs/forms.md). Production runs one per Deployment,
as the operator renders it; the store is the configuration's redis section or REDIS_URL.`},
	"auth": {"run the OAuth 2.0 / OpenID Connect provider and its hosted sign-in page",
		`Runs the sign-in provider: authorization code + PKCE, tokens, userinfo, the hosted sign-in page and
the discovery documents (docs/auth.md). It needs auth.signingKeyFile (PEM, EC P-256) and a store.`},
	"health": {"run the platform health service (GET /health)",
		`Runs GET /health for the whole platform in the IETF health-check format: the store and the forms and
auth services, each with its response time (docs/health.md).`},
}

// serveEnv is what the serving commands read from the environment.
var serveEnv = []envVar{
	{"ADDR", "listen address when --addr is not given"},
	{"FORMSSERVICE_CONFIG", "configuration file when --config is not given (CONFIG is read after it)"},
	{"REDIS_URL", "the store (redis:// or rediss://); overrides the configuration's redis section"},
	{"REDIS_PASSWORD", "the store's password; overrides redis.passwordFile"},
	{"FORMSSERVICE_PUBLIC_URL", "the public base URL (the OAuth issuer); overrides publicURL"},
	{"FORMSSERVICE_ALLOWED_ORIGINS", "comma-separated origins allowed to post forms; overrides allowedOrigins"},
	{"FORMSSERVICE_LOG_LEVEL", "debug, info, warn or error; overrides logLevel"},
	{"FORMSSERVICE_LOG_FORMAT", "auto, text or json when --log-format is not given; NO_COLOR turns text colours off"},
	{"GOGC, GOMEMLIMIT", "Go's collector settings (GOGC=400 in a process that serves auth, Go's default otherwise; auth sets a soft memory limit)"},
}

func newServeCmd(env *environment, name string) *cobra.Command {
	f := &serveFlags{}
	h := serviceHelp[name]
	cmd := &cobra.Command{
		Use:   name,
		Short: h.short,
		Long:  h.long,
		Example: fmt.Sprintf(`  formsservice %[1]s --config /etc/formsservice/config.yaml --drain-delay 5s
  REDIS_URL=redis://127.0.0.1:6379/0 formsservice %[1]s --config %[1]s.yaml --addr 127.0.0.1:0`, name),
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), env, f, []string{name}, nil)
		},
	}
	f.register(cmd, env, ":8080")
	readsEnv(cmd, serveEnv...)
	return cmd
}

// serve loads the configuration, connects Redis, builds the named services on one app and serves
// until ctx ends. dev is the dev server's additions, nil for one service.
func serve(ctx context.Context, env *environment, f *serveFlags, names []string, dev devMode) error {
	if pct, ok := gcPercent(names); ok && env.getenv("GOGC") == "" {
		debug.SetGCPercent(pct)
	}
	ln, publicURL, err := listen(f.addr, dev)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	load := func() (*config.Config, error) { return loadConfig(f.configPath, env.getenv, dev != nil, publicURL) }
	first, err := load()
	if err != nil {
		return err
	}
	logOpts, err := f.logOptions(env, first.LogLevel)
	if err != nil {
		return err
	}
	log := logging.NewWith(env.stderr, logOpts).With("service", strings.Join(names, "+"))
	watcher, err := config.NewWatcher(f.configPath, load, log)
	if err != nil {
		return err
	}
	cfg := watcher.Current()
	if err := checkSecretFiles(cfg, log); err != nil {
		return err
	}

	embedded := false
	if cfg.Redis.Empty() {
		if dev == nil {
			return errNoStore(f.configPath)
		}
		url, stop, err := dev.embeddedStore(log)
		if err != nil {
			return err
		}
		defer stop()
		cfg.Redis.URL = url
		embedded = true
	}
	redis.SetLogger(redisclient.Logger{Log: log})
	rdb, err := redisclient.New(cfg.Redis, env.getenv)
	if err != nil {
		return err
	}
	defer rdb.Close()

	metrics := server.NewMetrics()
	d := deps{Config: watcher, Redis: rdb, Logger: log, Metrics: metrics, Getenv: env.getenv, Dev: dev != nil, EmbeddedStore: embedded,
		Stderr: env.stderr, Service: strings.Join(names, "+")}
	var outbox server.Service
	if dev == nil {
		d.Mail = mail.Live(watcher, nil) // the relay of the configuration in force (mail.smtp, else forms.delivery.smtp)
	} else {
		d.Mail, outbox = dev.mail(watcher, log, publicURL)
	}
	var services []server.Service
	for _, n := range names {
		build, ok := serviceBuilders[n]
		if !ok {
			return fmt.Errorf("unknown service %q", n)
		}
		d.Peers = services
		s, err := build(d)
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		services = append(services, s)
	}
	if dev != nil {
		pages, err := dev.pages(watcher)
		if err != nil {
			return err
		}
		services = append(append(services, pages...), outbox) // and /dev/mail/: the mail the services sent
	}
	opts := server.Options{Logger: log, Metrics: metrics}
	if dev != nil {
		opts.Before = []fiber.Handler{dev.before(watcher)}
	}
	app := server.New(opts, services...)
	if dev != nil {
		remove := dev.announce(env, log, logOpts, devAnnouncement{URL: publicURL, RedisURL: cfg.Redis.URL, Embedded: embedded, Config: f.configPath, Started: time.Now(), Auth: cfg.Auth})
		defer remove()
	}
	return app.Serve(ctx, server.ServeOptions{
		Listener:   ln,
		DrainDelay: f.drainDelay,
		Background: []func(context.Context) error{watcher.Watch},
	})
}

// loadConfig reads the file, applies the environment, and in dev merges the fixtures over it.
func loadConfig(path string, getenv func(string) string, dev bool, publicURL string) (*config.Config, error) {
	c, err := config.Load(path, getenv)
	if err != nil || !dev {
		return c, err
	}
	config.MergeDevFixtures(c, publicURL)
	config.DevSelfSignup(c, path)
	c.ApplyDefaults()
	return c, c.Validate()
}

// listen opens the listener and returns it with the public URL: the dev server's own (devListen), else
// the address it listens on.
func listen(addr string, dev devMode) (net.Listener, string, error) {
	if dev != nil {
		return dev.listen(addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	return ln, "http://" + displayAddr(ln.Addr().String()), nil
}

func displayAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || host == "::" || host == "0.0.0.0" {
		return "127.0.0.1:" + port
	}
	return net.JoinHostPort(host, port)
}

// gcPercent is the GOGC a process serving names runs with unless GOGC is set; ok is false for Go's
// default (100). Auth's live heap is a few MB, so the default collects very often: measured on the token
// endpoint, a fifth of the CPU; 400 cut CPU per refresh from 0.67 to 0.45 ms for a few MB more. The forms
// and health processes keep the default: under GOGC=400 the forms process let 16 MB of garbage pile up
// over its 2 MB live heap (peak RSS 43 MiB under the bench load against 33 at the default), while the
// default's collections cost it about 5 µs of CPU per submission (docs/forms.md, "Performance").
func gcPercent(names []string) (pct int, ok bool) {
	if slices.Contains(names, "auth") {
		return 400, true
	}
	return 0, false
}
