package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// echoService is a minimal Service for exercising the platform; the real services have their own tests.
type echoService struct {
	ready   atomic.Bool
	release chan struct{}
	started chan struct{}
	ran     atomic.Bool
}

func newEchoService() *echoService {
	s := &echoService{release: make(chan struct{}), started: make(chan struct{}, 1)}
	s.ready.Store(true)
	return s
}

func (s *echoService) Name() string { return "echo" }
func (s *echoService) Routes() []Route {
	return []Route{
		Get("/items/:id", func(c *fiber.Ctx) error { return c.SendString(c.Params("id")) }),
		Get("/slow", func(c *fiber.Ctx) error {
			s.started <- struct{}{}
			<-s.release
			return c.SendString("finished")
		}),
		Get("/boom", func(c *fiber.Ctx) error { panic("boom") }),
		Get("/fail", func(c *fiber.Ctx) error { return errors.New("secret internal detail") }),
	}
}
func (s *echoService) Ready(context.Context) error {
	if !s.ready.Load() {
		return errors.New("store down")
	}
	return nil
}
func (s *echoService) Run(ctx context.Context) error { s.ran.Store(true); <-ctx.Done(); return nil }

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestApp_MetricsUseRouteTemplatesNotRawPaths(t *testing.T) {
	m := NewMetrics()
	app := New(Options{Logger: quietLogger(), Metrics: m}, newEchoService())
	for _, p := range []string{"/items/1", "/items/2", "/nope/ada@example.com"} {
		resp, err := app.Test(httptestRequest(p))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("echo", "/items/:id", "GET", "200")); got != 2 {
		t.Errorf("requests{route=/items/:id} = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("platform", "unmatched", "GET", "404")); got != 1 {
		t.Errorf("requests{route=unmatched} = %v, want 1", got)
	}
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				if strings.Contains(l.GetValue(), "ada@example.com") {
					t.Errorf("a raw path leaked into %s{%s}", f.GetName(), l.GetName())
				}
			}
		}
	}
}

func TestApp_PanicAndErrorsAnswerJSONWithoutInternals(t *testing.T) {
	app := New(Options{Logger: quietLogger()}, newEchoService())
	for _, p := range []string{"/boom", "/fail"} {
		resp, err := app.Test(httptestRequest(p))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 500 || string(body) != `{"status":"error"}` {
			t.Errorf("%s: %d %s", p, resp.StatusCode, body)
		}
	}
}

func TestApp_ReadyzFollowsServiceReadiness(t *testing.T) {
	svc := newEchoService()
	app := New(Options{Logger: quietLogger()}, svc)
	if code := status(t, app, "/readyz"); code != 200 {
		t.Fatalf("ready service: %d", code)
	}
	svc.ready.Store(false)
	if code := status(t, app, "/readyz"); code != 503 {
		t.Fatalf("unready service: %d", code)
	}
	if code := status(t, app, "/livez"); code != 200 {
		t.Fatalf("livez of an unready service: %d", code)
	}
}

// SIGTERM during a request: the request finishes, readiness turns to 503 first, and Serve returns.
func TestServe_ShutdownFinishesRequestsInFlight(t *testing.T) {
	svc := newEchoService()
	app := New(Options{Logger: quietLogger()}, svc)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	// The drain delay is long enough for a loaded machine to ask /readyz inside it.
	go func() { served <- app.Serve(ctx, ServeOptions{Listener: ln, DrainDelay: 2 * time.Second}) }()

	result := make(chan string, 1)
	go func() {
		resp, err := http.Get(base + "/slow")
		if err != nil {
			result <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// Answered after the drain began: the client is told not to reuse the connection.
		result <- fmt.Sprintf("%s (connection close: %t)", b, resp.Close)
	}()
	<-svc.started
	cancel() // what SIGTERM does through signal.NotifyContext

	// Inside the drain delay, readiness turns to 503 (once Serve has seen the cancellation).
	testwait.Until(t, 1500*time.Millisecond, "readyz 503 with Connection: close while draining", func() error {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatalf("readyz while draining: %v", err) // the listener stays open through the drain delay
		}
		resp.Body.Close()
		if resp.StatusCode != 503 || !resp.Close {
			return fmt.Errorf("%d (connection close: %t)", resp.StatusCode, resp.Close)
		}
		return nil
	})
	close(svc.release)
	if got := <-result; got != "finished (connection close: true)" {
		t.Fatalf("request in flight: %q", got)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after shutdown")
	}
	if !svc.ran.Load() {
		t.Error("the service's Run was not started")
	}
	if _, err := http.Get(base + "/livez"); err == nil {
		t.Error("listener still accepting after shutdown")
	}
}

func httptestRequest(path string) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, path, nil)
	return r
}

func status(t *testing.T, app *App, path string) int {
	t.Helper()
	resp, err := app.Test(httptestRequest(path))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Two services that declare the same method and path are a wiring mistake: New refuses at start-up
// instead of letting whichever mounted first answer.
func TestNew_DuplicateRouteDeclaration_Panics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "GET /items/:id declared by both echo and echo") {
			t.Fatalf("recover() = %v, want a panic naming the route and both services", r)
		}
	}()
	New(Options{Logger: quietLogger()}, newEchoService(), newEchoService())
}

// A body rule is applied before routing, by exact path, by the parent of a last-segment parameter, or
// segment by segment; a wildcard or an optional parameter cannot be matched there and cannot carry one.
func TestNew_BodyRuleOnPatternRoute_Panics(t *testing.T) {
	for _, path := range []string{"/items/*/edit", "/items/:id?/edit", "/items/x:id/edit"} {
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("a body limit on %s was accepted", path)
				}
			}()
			New(Options{Logger: quietLogger()}, patternLimitService{path})
		}()
	}
}

type patternLimitService struct{ path string }

func (patternLimitService) Name() string                { return "pattern" }
func (patternLimitService) Ready(context.Context) error { return nil }
func (s patternLimitService) Routes() []Route {
	return []Route{Post(s.path, func(c *fiber.Ctx) error { return nil }).Limit(10)}
}

// Options.Before run ahead of every route (the dev server's move to its issuer's host name): one can
// answer a path a service owns, or pass the request on to it.
func TestNew_BeforeRunsAheadOfTheRoutes(t *testing.T) {
	before := func(c *fiber.Ctx) error {
		if c.Get("X-Move") != "" {
			return c.Redirect("http://elsewhere.test"+c.OriginalURL(), fiber.StatusFound)
		}
		return c.Next()
	}
	app := New(Options{Logger: quietLogger(), Before: []fiber.Handler{before}}, newEchoService())
	req := httptestRequest("/items/7")
	req.Header.Set("X-Move", "1")
	resp, err := app.Test(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "http://elsewhere.test/items/7" {
		t.Errorf("the handler before the routes: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if code := status(t, app, "/items/7"); code != http.StatusOK {
		t.Errorf("passed on to the route: %d", code)
	}
	if code := status(t, app, "/nowhere"); code != http.StatusNotFound {
		t.Errorf("an unknown path passed on: %d", code)
	}
}
