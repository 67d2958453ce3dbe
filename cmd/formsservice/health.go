//go:build !formsonly

package main

import (
	"github.com/formsservice/formsservice/services/health"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/server"
)

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
