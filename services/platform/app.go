// Package platform is what every formsservice service shares: the Fiber app with metrics, probes and
// error handling, the Redis client, logging, and the server lifecycle with graceful shutdown.
package platform

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Service is one of forms, auth or health as the platform runs it.
type Service interface {
	// Name labels metrics and logs: "forms", "auth", "health".
	Name() string
	// Routes mounts the service's endpoints at the paths the ingress routes to it.
	Routes(r fiber.Router)
	// Ready reports whether the service can serve (its store answers); /readyz calls it.
	Ready(ctx context.Context) error
}

// Runner is a Service with background work (a delivery worker, a key refresher). Run returns when ctx ends.
type Runner interface {
	Run(ctx context.Context) error
}

// AppOptions configures NewApp.
type AppOptions struct {
	Logger  *slog.Logger
	Metrics *Metrics
	// BodyLimit is the largest request body the server reads at all (default 1 MiB). Endpoints with a
	// smaller limit (the forms' 16 KB) enforce their own on the streamed body.
	BodyLimit int
	// ReadTimeout bounds reading one request, headers and body, against slowloris clients (default 10s).
	ReadTimeout time.Duration
}

// App is a Fiber app with the platform's middleware, probes and metrics, serving one or more services.
type App struct {
	*fiber.App
	log      *slog.Logger
	services []Service
	draining atomic.Bool
	owners   map[string]string // "METHOD path" -> service name, written once at start-up
	streamed map[string]bool   // paths whose service reads the body itself (BodyStreamer)
	limits   map[string]int    // paths whose service wants a smaller body limit (BodyLimiter)
}

// NewApp builds the app and mounts services in order. In production one process serves one service; the
// dev server mounts them all on one address, as the ingress routes them.
func NewApp(o AppOptions, services ...Service) *App {
	if o.BodyLimit == 0 {
		o.BodyLimit = 1 << 20
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = 10 * time.Second
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics()
	}
	a := &App{log: o.Logger, services: services, owners: map[string]string{}, streamed: map[string]bool{},
		limits: map[string]int{}}
	for _, s := range services {
		if bs, ok := s.(BodyStreamer); ok {
			for _, p := range bs.StreamedPaths() {
				a.streamed[streamedKey(p)] = true
			}
		}
	}
	a.App = fiber.New(fiber.Config{
		DisableStartupMessage: true,
		BodyLimit:             o.BodyLimit,
		StreamRequestBody:     true,
		ReadTimeout:           o.ReadTimeout,
		WriteTimeout:          o.ReadTimeout,
		IdleTimeout:           60 * time.Second,
		ReadBufferSize:        16 << 10, // room for large cookies; larger headers get 431
		ErrorHandler:          a.handleError,

		// Fiber believes no peer's X-Forwarded-* headers (c.IP, c.Protocol, c.Hostname). The client's
		// address comes from ClientIP, which reads the live configuration's trustedProxies and takes the
		// right-most untrusted hop; Fiber's c.IP would return the forgeable header as sent.
		EnableTrustedProxyCheck: true,

		// fasthttp would otherwise parse a multipart body (spilling files to disk) before any handler or
		// check runs, and answer a malformed one with 400 ahead of the forms' origin check;
		// c.MultipartForm() still parses on demand.
		DisablePreParseMultipartForm: true,
	})
	a.Use(recover.New(recover.Config{EnableStackTrace: true, StackTraceHandler: func(c *fiber.Ctx, e any) {
		a.log.Error("panic serving request", "route", c.Route().Path, "panic", fmt.Sprint(e))
	}}))
	a.Use(o.Metrics.middleware(a.routeLabel))
	a.Use(a.closeWhileDraining)
	a.Use(rejectAmbiguousFraming)
	a.Use(a.boundBody(o.BodyLimit))
	a.Get("/livez", func(c *fiber.Ctx) error { return c.SendString("ok") })
	a.Get("/readyz", a.readyz)
	a.Get("/metrics", adaptor.HTTPHandler(promhttp.HandlerFor(o.Metrics.Registry, promhttp.HandlerOpts{})))
	known := map[string]bool{}
	for _, r := range a.GetRoutes(true) {
		known[r.Method+" "+r.Path] = true
	}
	for _, s := range services {
		s.Routes(a.App)
		for _, r := range a.GetRoutes(true) {
			if key := r.Method + " " + r.Path; !known[key] {
				known[key] = true
				a.owners[key] = s.Name()
			}
		}
	}
	a.setPathLimits(services)
	return a
}

// closeWhileDraining answers with Connection: close once a shutdown has begun (checked when the
// handler is done, so requests already in flight are included): keep-alive clients then open their next
// connection to another replica, instead of sending a request down a connection that the server is about
// to close, which a client cannot safely retry for a POST.
func (a *App) closeWhileDraining(c *fiber.Ctx) error {
	err := c.Next()
	if a.draining.Load() {
		c.Context().SetConnectionClose()
	}
	return err
}

func (a *App) routeLabel(c *fiber.Ctx) (string, string) {
	r := c.Route()
	if owner, ok := a.owners[r.Method+" "+r.Path]; ok {
		return owner, r.Path
	}
	switch r.Path {
	case "/livez", "/readyz", "/metrics":
		return "platform", r.Path
	}
	return "platform", "unmatched"
}

// readyz answers 200 when every service is ready and the process is not draining. Each check is bounded.
func (a *App) readyz(c *fiber.Ctx) error {
	if a.draining.Load() {
		return c.Status(fiber.StatusServiceUnavailable).SendString("draining")
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	var failed []string
	for _, s := range a.services {
		if err := s.Ready(ctx); err != nil {
			failed = append(failed, s.Name())
		}
	}
	if len(failed) > 0 {
		return c.Status(fiber.StatusServiceUnavailable).SendString("not ready: " + strings.Join(failed, ", "))
	}
	return c.SendString("ok")
}

// handleError answers errors that escaped a handler with a JSON status body; internal details are
// logged, never sent.
func (a *App) handleError(c *fiber.Ctx, err error) error {
	code := fiber.StatusInternalServerError
	var fe *fiber.Error
	if errors.As(err, &fe) {
		code = fe.Code
	} else {
		a.log.Error("unhandled error", "method", c.Method(), "route", c.Route().Path, "err", err)
	}
	return c.Status(code).JSON(fiber.Map{"status": "error"})
}

// Services returns the mounted services.
func (a *App) Services() []Service { return a.services }
