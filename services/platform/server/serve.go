package server

import (
	"context"
	"errors"
	"net"
	"time"

	"golang.org/x/sync/errgroup"
)

// ServeOptions configures Serve.
type ServeOptions struct {
	// Listener to serve on; the caller opens it so that it can report the real address (port 0 in tests).
	Listener net.Listener
	// DrainDelay is how long /readyz reports "draining" before the listener closes, so that a load
	// balancer stops sending new requests first (Kubernetes: a few seconds; dev: zero).
	DrainDelay time.Duration
	// ShutdownTimeout bounds waiting for requests in flight (default 25s, under Kubernetes' 30s grace).
	ShutdownTimeout time.Duration
	// Background work to run alongside the server (for example a store's config watcher).
	Background []func(ctx context.Context) error
}

// Serve runs the app and every Runner among its services until ctx ends (SIGTERM), then drains: readiness
// turns to 503, new connections stop, requests in flight finish, and background work is cancelled last.
func (a *App) Serve(ctx context.Context, o ServeOptions) error {
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = 25 * time.Second
	}
	bgCtx, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBackground()
	var bg errgroup.Group
	for _, s := range a.services {
		if r, ok := s.(Runner); ok {
			bg.Go(func() error { return r.Run(bgCtx) })
		}
	}
	for _, f := range o.Background {
		bg.Go(func() error { return f(bgCtx) })
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- a.Listener(o.Listener) }()
	a.log.Info("listening", "addr", o.Listener.Addr().String())

	var err error
	select {
	case err = <-serveErr:
		// The listener failed on its own; still stop the background work below.
	case <-ctx.Done():
		a.draining.Store(true)
		a.log.Info("shutting down: draining", "delay", o.DrainDelay.String())
		time.Sleep(o.DrainDelay)
		if serr := a.ShutdownWithTimeout(o.ShutdownTimeout); serr != nil {
			a.log.Error("shutdown did not finish in time", "err", serr)
			err = serr
		}
		// Shutdown of a server whose Listener call has not started yet does nothing, and it would then
		// serve forever; closing the listener makes that call return at once.
		_ = o.Listener.Close()
		<-serveErr
	}
	stopBackground()
	if berr := bg.Wait(); berr != nil && !errors.Is(berr, context.Canceled) {
		err = errors.Join(err, berr)
	}
	a.log.Info("stopped")
	return err
}
