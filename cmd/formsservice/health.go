//go:build !formsonly

package main

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/health"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/server"
)

// buildHealth: in production the forms and auth services are asked over HTTP at the configured URLs;
// the dev server checks the services it runs in-process.
func buildHealth(d deps) (server.Service, error) {
	var peers []server.Service
	var formsStore func(context.Context) error
	if d.Dev {
		peers = d.Peers
	} else if d.Redis != nil {
		// forms:readiness also judges the forms' store (their /readyz reports the process: D55), with a
		// guard of its own whose metrics stay private: the forms service publishes its own.
		level := func() config.Durability { return d.Config.Current().Forms.Durability }
		g, err := store.NewGuard(d.Redis, store.Options{Registerer: prometheus.NewRegistry(), Level: level, Redis: d.Config.Current().Redis})
		if err != nil {
			return nil, err
		}
		formsStore = health.FormsStore(g, level)
	}
	return health.New(health.Options{
		FormsStore: formsStore,
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
