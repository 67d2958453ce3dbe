package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/demo"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/logging"
	"github.com/formsservice/formsservice/services/platform/mail"
	"github.com/formsservice/formsservice/services/platform/mail/devmail"
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
}

// serviceBuilders constructs each service by name; each builder lives in the service's own file here.
// devOrder is the order the dev server mounts them in (health last: it checks the others).
var serviceBuilders = map[string]func(d deps) (server.Service, error){
	"forms":  buildForms,
	"auth":   buildAuth,
	"health": buildHealth,
}

var devOrder = []string{"forms", "auth", "health"}

// serveFlags are shared by every serving command.
type serveFlags struct {
	configPath string
	addr       string
	drainDelay time.Duration
}

func parseServeFlags(name string, env *environment, args []string, defaultAddr string) (*serveFlags, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	f := &serveFlags{}
	fs.StringVar(&f.configPath, "config", defaultConfigPath(env), "configuration file (YAML); reloaded when it changes")
	fs.StringVar(&f.addr, "addr", cmp.Or(env.getenv("ADDR"), defaultAddr), "listen address")
	fs.DurationVar(&f.drainDelay, "drain-delay", 0, "how long /readyz says draining before the listener closes on SIGTERM")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, errUsage
		}
		return nil, err
	}
	return f, nil
}

func cmdServe(ctx context.Context, env *environment, name string, args []string) error {
	f, err := parseServeFlags(name, env, args, ":8080")
	if err != nil {
		return err
	}
	return serve(ctx, env, f, []string{name}, false)
}

func cmdDev(ctx context.Context, env *environment, args []string) error {
	f, err := parseServeFlags("dev", env, args, "127.0.0.1:8080")
	if err != nil {
		return err
	}
	var names []string
	for _, n := range devOrder {
		if _, ok := serviceBuilders[n]; ok {
			names = append(names, n)
		}
	}
	return serve(ctx, env, f, names, true)
}

// serve loads the configuration, connects Redis, builds the named services on one app and serves
// until ctx ends.
func serve(ctx context.Context, env *environment, f *serveFlags, names []string, dev bool) error {
	if pct, ok := gcPercent(names); ok && env.getenv("GOGC") == "" {
		debug.SetGCPercent(pct)
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	publicURL := "http://" + displayAddr(ln.Addr().String())
	load := func() (*config.Config, error) { return loadConfig(f.configPath, env.getenv, dev, publicURL) }
	first, err := load()
	if err != nil {
		return err
	}
	log := logging.New(env.stderr, first.LogLevel).With("service", strings.Join(names, "+"))
	watcher, err := config.NewWatcher(f.configPath, load, log)
	if err != nil {
		return err
	}
	cfg := watcher.Current()

	embedded := cfg.Redis.Empty()
	if embedded {
		if !dev {
			return errors.New("no store configured: set redis in the configuration or REDIS_URL")
		}
		mini, err := startEmbeddedRedis(log)
		if err != nil {
			return err
		}
		defer mini.Close()
		cfg.Redis.URL = "redis://" + mini.Addr()
	}
	redis.SetLogger(redisclient.Logger{Log: log})
	rdb, err := redisclient.New(cfg.Redis, env.getenv)
	if err != nil {
		return err
	}
	defer rdb.Close()

	metrics := server.NewMetrics()
	d := deps{Config: watcher, Redis: rdb, Logger: log, Metrics: metrics, Getenv: env.getenv, Dev: dev, EmbeddedStore: embedded}
	var outbox *devmail.Outbox
	d.Mail, outbox = mailSender(watcher, dev, log, publicURL)
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
	if dev {
		page, err := demo.New(watcher) // /demo/: the SDK's demo page, dev server only
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		services = append(services, page, outbox) // and /dev/mail/: the mail the services sent
	}
	app := server.New(server.Options{Logger: log, Metrics: metrics}, services...)
	if dev {
		log.Info("dev server ready", "url", publicURL, "demo", publicURL+"/demo/", "user", config.DevEmail)
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
	c.ApplyDefaults()
	return c, c.Validate()
}

func displayAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || host == "::" || host == "0.0.0.0" {
		return "127.0.0.1:" + port
	}
	return net.JoinHostPort(host, port)
}

// defaultConfigPath is the configuration file of every command when -config does not name one.
func defaultConfigPath(env *environment) string {
	return cmp.Or(env.getenv("FORMSSERVICE_CONFIG"), env.getenv("CONFIG"))
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
