// Package server is the HTTP server every formsservice service runs in: it mounts the routes each service
// declares (with their body limits), and adds request metrics, probes, error handling, protection against
// ambiguous framing, and the lifecycle with graceful shutdown.
package server

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

// Service is one of forms, auth, health (or the dev server's demo page) as the server runs it.
type Service interface {
	// Name labels metrics and logs: "forms", "auth", "health".
	Name() string
	// Routes declares every endpoint of the service, at the paths the ingress routes to it: the whole
	// surface of a service in its routes.go.
	Routes() []Route
	// Ready reports whether the service can serve (its store answers); /readyz calls it.
	Ready(ctx context.Context) error
}

// Runner is a Service with background work (a delivery worker, a key refresher). Run returns when ctx ends.
type Runner interface {
	Run(ctx context.Context) error
}

// Options configures New.
type Options struct {
	Logger  *slog.Logger
	Metrics *Metrics
	// BodyLimit is the largest request body the server reads for a route that declares none (default
	// 1 MiB).
	BodyLimit int
	// ReadTimeout bounds reading one request, headers and body, against slowloris clients (default 10s).
	ReadTimeout time.Duration
	// Before run on every request ahead of the routes, after the platform's own middleware (the dev
	// server sends a browser that opened it on 127.0.0.1 to its issuer's host name, D74).
	Before []fiber.Handler
}

// App is a Fiber app with the platform's middleware, probes and metrics, serving one or more services.
type App struct {
	*fiber.App
	log      *slog.Logger
	services []Service
	draining atomic.Bool
	owners   map[string]string // "METHOD path" -> service name, from the declarations, written once
	bodies   map[string]Route  // "METHOD path" (as the router matches it) -> its body rules
	patterns []Route           // the body rules of paths with parameters before their last segment
}

// New builds the app and mounts the services' routes in order. In production one process serves one
// service; the dev server mounts them all on one address, as the ingress routes them. Two declarations
// of one method and path are a programming error and panic here, at start-up.
func New(o Options, services ...Service) *App {
	if o.BodyLimit == 0 {
		o.BodyLimit = 1 << 20
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = 10 * time.Second
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics()
	}
	a := &App{log: o.Logger, services: services, owners: map[string]string{}, bodies: map[string]Route{}}
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
		// address comes from clientip.Addr, which reads the live configuration's trustedProxies and takes
		// the right-most untrusted hop; Fiber's c.IP would return the forgeable header as sent.
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
	for _, h := range o.Before {
		a.Use(h)
	}
	a.mount("platform", a.probeRoutes(o.Metrics))
	for _, s := range services {
		a.mount(s.Name(), s.Routes())
	}
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

// probeRoutes are the server's own endpoints, declared like a service's.
func (a *App) probeRoutes(m *Metrics) []Route {
	return []Route{
		Get("/livez", func(c *fiber.Ctx) error { return c.SendString("ok") }),
		Get("/readyz", a.readyz),
		Get("/metrics", adaptor.HTTPHandler(promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))),
	}
}

// mount registers routes for the service called owner and records what the middleware needs to know of
// each before routing: its owner (metric labels), its body limit and whether its handler reads the body.
func (a *App) mount(owner string, routes []Route) {
	for _, r := range routes {
		methods := []string{r.Method}
		if r.Method == fiber.MethodGet {
			methods = append(methods, fiber.MethodHead) // Fiber answers HEAD for every GET route
		}
		for _, m := range methods {
			key := m + " " + r.Path
			if prev, dup := a.owners[key]; dup {
				panic(fmt.Sprintf("server: %s declared by both %s and %s", key, prev, owner))
			}
			a.owners[key] = owner
		}
		if r.BodyLimit > 0 || r.Streamed {
			// The limit is applied before routing, by exact path, by the parent of a path whose last
			// segment is its only parameter (/f/:form), or segment by segment for a path whose parameters
			// are whole segments (/admin/v1/users/:id/groups); wildcards and optional parameters cannot
			// be matched there.
			parent, last := splitLast(r.Path)
			switch {
			case !strings.ContainsAny(r.Path, ":*"):
				a.bodies[bodyKey(r.Method, r.Path)] = r
			case strings.HasPrefix(last, ":") && !strings.ContainsAny(parent, ":*") && !strings.ContainsAny(last[1:], ":*?+"):
				a.bodies[bodyKey(r.Method, parent)+"/:"] = r
			case wholeSegmentParams(r.Path):
				a.patterns = append(a.patterns, r)
			default:
				panic(fmt.Sprintf("server: %s %s: a body rule needs a path whose parameters are whole segments (no wildcard, no optional or partial parameter)", r.Method, r.Path))
			}
		}
		if r.Method == fiber.MethodGet {
			a.Get(r.Path, r.Handlers...)
		} else {
			a.Add(r.Method, r.Path, r.Handlers...)
		}
	}
}

// wholeSegmentParams: every parameter of path is a whole segment (":id"), none optional or partial, and
// there is no wildcard.
func wholeSegmentParams(path string) bool {
	for _, seg := range strings.Split(strings.Trim(path, "/"), "/") {
		if strings.ContainsAny(seg, "*+?") || strings.Contains(seg[min(1, len(seg)):], ":") {
			return false
		}
	}
	return true
}

func (a *App) routeLabel(c *fiber.Ctx) (string, string) {
	r := c.Route()
	if owner, ok := a.owners[r.Method+" "+r.Path]; ok {
		return owner, r.Path
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
			// An error may say why in a few words fit for an open port (no address, no secret).
			var why interface{ Reason() string }
			if errors.As(err, &why) {
				failed = append(failed, s.Name()+" ("+why.Reason()+")")
			} else {
				failed = append(failed, s.Name())
			}
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
