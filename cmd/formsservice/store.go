package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/redisclient"
)

// storeEnv is what the tools (users, export, forget, deliveries) read from the environment.
var storeEnv = []envVar{
	{"REDIS_URL", "the store (redis:// or rediss://); overrides the configuration's redis section"},
	{"REDIS_PASSWORD", "the store's password; overrides redis.passwordFile"},
	{"FORMSSERVICE_CONFIG", "configuration file when --config is not given (CONFIG is read after it)"},
	{"FORMSSERVICE_DEV_STATE_DIR", "where a running dev server says where its store is, when neither of the above does (default $XDG_RUNTIME_DIR/formsservice)"},
}

// defaultConfigPath is the configuration file of every command when --config does not name one.
func defaultConfigPath(env *environment) string {
	return cmp.Or(env.getenv("FORMSSERVICE_CONFIG"), env.getenv("CONFIG"))
}

// configFlag is the --config flag of every command, defaulting to $FORMSSERVICE_CONFIG or $CONFIG.
func configFlag(fl *pflag.FlagSet, env *environment, path *string, usage string) {
	fl.StringVar(path, "config", defaultConfigPath(env), usage)
}

// storeFlags are the flags of a tool that works on the services' store.
type storeFlags struct{ configPath string }

func (s *storeFlags) register(cmd *cobra.Command, env *environment) {
	configFlag(cmd.Flags(), env, &s.configPath, "configuration file (YAML), as the services read it; its redis section is the store")
	readsEnv(cmd, storeEnv...)
}

// errNoStore says what to set when no store is configured.
func errNoStore(configPath string) error {
	if configPath != "" {
		return fmt.Errorf("no store configured: %s has no redis section; add one, or set REDIS_URL", configPath)
	}
	return errors.New("no store configured: set REDIS_URL, or --config FILE with a redis section, or start the dev server (make run), which the tools find by themselves")
}

// open connects a one-shot tool to the store the services use: REDIS_URL, the --config file's redis
// section, or else the running dev server's store (devstate.go). It says which when it is the dev
// server's, and checks that the store answers, so that a dead one is reported as such, with its address.
func (s *storeFlags) open(ctx context.Context, env *environment) (*config.Config, redis.UniversalClient, error) {
	// go-redis prints its own complaints (pool dial failures) straight to stderr; a tool reports the
	// failure once, in its own words, below.
	redis.SetLogger(redisclient.Logger{Log: slog.New(slog.DiscardHandler)})
	from := "REDIS_URL"
	var dev *devState
	if s.configPath == "" && env.getenv("REDIS_URL") == "" {
		var err error
		if dev, err = findDevState(env.getenv); err != nil {
			return nil, nil, err
		}
	}
	configPath := s.configPath
	if dev != nil {
		configPath = dev.Config
	}
	cfg, err := config.Load(configPath, env.getenv)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case dev != nil:
		cfg.Redis = config.Redis{URL: dev.RedisURL, Timeout: cfg.Redis.Timeout}
		from = "the dev server's state file " + dev.path
		fmt.Fprintf(env.stderr, "using the store of the dev server at %s (REDIS_URL=%s)\n", dev.URL, redisclient.Describe(cfg.Redis))
	case cfg.Redis.Empty():
		return nil, nil, errNoStore(s.configPath)
	case env.getenv("REDIS_URL") == "":
		from = "the redis section of " + s.configPath
	}
	rdb, err := redisclient.New(cfg.Redis, env.getenv)
	if err != nil {
		return nil, nil, fmt.Errorf("the store (from %s): %w", from, err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := redisclient.Ping(pingCtx, rdb); err != nil {
		rdb.Close()
		return nil, nil, fmt.Errorf("the store at %s is unreachable: %w (it comes from %s: is that Redis running?)",
			redisclient.Describe(cfg.Redis), err, from)
	}
	return cfg, rdb, nil
}
