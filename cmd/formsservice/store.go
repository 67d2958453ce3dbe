package main

import (
	"cmp"
	"errors"
	"fmt"

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
	return errors.New("no store configured: set REDIS_URL, or --config FILE with a redis section")
}

// toolStore connects a one-shot tool to the store the services use.
func (s *storeFlags) open(env *environment) (*config.Config, redis.UniversalClient, error) {
	cfg, err := config.Load(s.configPath, env.getenv)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Redis.Empty() {
		return nil, nil, errNoStore(s.configPath)
	}
	rdb, err := redisclient.New(cfg.Redis, env.getenv)
	return cfg, rdb, err
}
