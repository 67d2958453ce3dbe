//go:build !formsonly

package main

import (
	"fmt"
	"log/slog"

	"github.com/alicebob/miniredis/v2"
)

// startEmbeddedRedis starts an in-process Redis-compatible server for the dev server, so that `make run`
// needs nothing installed and still runs the same go-redis code path as production. Only `formsservice
// dev` calls it; the services refuse to start without a configured store.
func startEmbeddedRedis(log *slog.Logger) (*miniredis.Miniredis, error) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("embedded store: %w", err)
	}
	log.Warn("using the embedded in-memory store: data is lost on exit (set REDIS_URL to keep it)", "addr", m.Addr())
	return m, nil
}
