package main

import (
	"runtime/debug"

	"github.com/formsservice/formsservice/services/health"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/server"
)

// version is set at link time (-ldflags "-X main.version=v1.2.3"); otherwise the build's VCS revision.
var version string

// buildHealth: in production the forms and auth services are asked over HTTP at the configured URLs;
// the dev server checks the services it runs in-process.
func buildHealth(d deps) (server.Service, error) {
	var peers []server.Service
	if d.Dev {
		peers = d.Peers
	}
	return health.New(health.Options{
		Config:     d.Config,
		Redis:      d.Redis,
		RedisMode:  redisMode(d.Config.Current().Redis),
		Peers:      peers,
		Version:    buildVersion(),
		Logger:     d.Logger,
		Registerer: d.Metrics.Registry,
	})
}

func redisMode(r config.Redis) health.RedisMode {
	switch {
	case r.Cluster:
		return health.RedisCluster
	case r.MasterName != "":
		return health.RedisSentinel
	}
	return health.RedisSingle
}

// buildVersion names the running build: the link-time version, the module version, or the VCS
// revision (12 characters, "-dirty" when built from a modified tree).
func buildVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}
