package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
)

// bodyService answers with the length of the body it got; /raw is a streamed path it reads itself.
type bodyService struct{}

func (bodyService) Name() string                { return "body" }
func (bodyService) Ready(context.Context) error { return nil }
func (bodyService) Routes() []Route {
	return []Route{
		Post("/len", func(c *fiber.Ctx) error { return c.SendString(strconv.Itoa(len(c.Body()))) }),
		Post("/ignore", func(c *fiber.Ctx) error { return c.SendString("ignored") }),
		Post("/raw", func(c *fiber.Ctx) error {
			if c.Context().RequestBodyStream() == nil {
				return c.SendString("buffered")
			}
			return c.SendString("streamed")
		}).StreamedBody(16),
		Get("/items/:id", func(c *fiber.Ctx) error { return c.SendString("item " + c.Params("id")) }),
	}
}

// startBodyApp serves bodyService plus extra under a server-wide body limit and returns its address.
func startBodyApp(t *testing.T, limit int, extra ...Service) string {
	t.Helper()
	app := New(Options{Logger: quietLogger(), BodyLimit: limit}, append([]Service{bodyService{}}, extra...)...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = app.Serve(ctx, ServeOptions{Listener: ln}); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// rawExchange writes req on a fresh connection and returns every response read until the server closes
// or goes quiet.
func rawExchange(t *testing.T, addr, req string) []*http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	br := bufio.NewReader(conn)
	var out []*http.Response
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return out
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(strings.NewReader(string(b)))
		out = append(out, resp)
	}
}

func body(r *http.Response) string { b, _ := io.ReadAll(r.Body); return string(b) }

func TestBoundBody_LargerThanLimit_413JSONAndClose(t *testing.T) {
	addr := startBodyApp(t, 1024)
	big := strings.Repeat("a", 2048)
	for name, req := range map[string]string{
		"content-length": "POST /len HTTP/1.1\r\nHost: x\r\nContent-Length: 2048\r\n\r\n" + big,
		"chunked":        "POST /len HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(big), big),
	} {
		resps := rawExchange(t, addr, req)
		if len(resps) != 1 {
			t.Fatalf("%s: %d responses", name, len(resps))
		}
		r := resps[0]
		if got := body(r); r.StatusCode != 413 || got != `{"status":"error"}` || !r.Close {
			t.Errorf("%s: %d %q close=%v, want 413 JSON and Connection: close", name, r.StatusCode, got, r.Close)
		}
	}
}

func TestBoundBody_WithinLimit_HandlerGetsWholeBody(t *testing.T) {
	addr := startBodyApp(t, 1024)
	chunks := "200\r\n" + strings.Repeat("b", 512) + "\r\n1ff\r\n" + strings.Repeat("c", 511) + "\r\n0\r\n\r\n"
	resps := rawExchange(t, addr, "POST /len HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"+chunks+
		"POST /len HTTP/1.1\r\nHost: x\r\nContent-Length: 1024\r\nConnection: close\r\n\r\n"+strings.Repeat("d", 1024))
	if len(resps) != 2 || body(resps[0]) != "1023" || body(resps[1]) != "1024" {
		t.Fatalf("responses: %d", len(resps))
	}
}

// A handler that never reads its body must not leave the body's bytes to be parsed as the next request.
func TestBoundBody_UnreadBodyIsNotParsedAsNextRequest(t *testing.T) {
	addr := startBodyApp(t, 1024)
	smuggled := "GET /items/smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
	resps := rawExchange(t, addr, fmt.Sprintf("POST /ignore HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(smuggled), smuggled)+
		"GET /items/real HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	var got []string
	for _, r := range resps {
		got = append(got, body(r))
	}
	if strings.Join(got, "|") != "ignored|item real" {
		t.Fatalf("responses = %q, want [ignored, item real]", got)
	}
}

func TestBoundBody_StreamedPathsAreLeftToTheService(t *testing.T) {
	addr := startBodyApp(t, 1024)
	for _, path := range []string{"/raw", "/RAW", "/raw/"} {
		resps := rawExchange(t, addr, "POST "+path+" HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")
		if len(resps) != 1 || body(resps[0]) != "streamed" {
			t.Errorf("%s: the platform buffered a streamed path's body", path)
		}
	}
}

// Cancelled before the listener goroutine runs: Serve must still return.
func TestServe_CancelledBeforeStart_Returns(t *testing.T) {
	app := New(Options{Logger: quietLogger()}, bodyService{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() { _ = app.Serve(ctx, ServeOptions{Listener: ln}); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after an early cancel")
	}
}

// smallBodyService wants bodies of at most 100 bytes on its paths.
type smallBodyService struct{}

func (smallBodyService) Name() string                { return "small" }
func (smallBodyService) Ready(context.Context) error { return nil }
func (smallBodyService) Routes() []Route {
	return []Route{
		Post("/small", func(c *fiber.Ctx) error { return c.SendString(strconv.Itoa(len(c.Body()))) }).Limit(100),
		Post("/small/:id", func(c *fiber.Ctx) error { return c.SendString(strconv.Itoa(len(c.Body()))) }).Limit(100),
	}
}

// A route whose last segment is a parameter (/small/:id) has its body rule on every path it matches,
// and on no deeper one.
func TestBoundBody_ParameterRouteKeepsItsLimit(t *testing.T) {
	addr := startBodyApp(t, 1024, smallBodyService{})
	payload := strings.Repeat("x", 200)
	for _, path := range []string{"/small/a", "/Small/b/", "/small/%7E"} {
		resps := rawExchange(t, addr, "POST "+path+" HTTP/1.1\r\nHost: x\r\nContent-Length: 200\r\n\r\n"+payload)
		if len(resps) != 1 || resps[0].StatusCode != 413 {
			t.Errorf("%s: 200 bytes to a 100-byte route: want one 413", path)
		}
	}
	resps := rawExchange(t, addr, "POST /small/a HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\nConnection: close\r\n\r\n"+payload[:50])
	if len(resps) != 1 || body(resps[0]) != "50" {
		t.Error("a body within the limit was not taken")
	}
}

func TestBoundBody_ServiceLimitAppliesToItsPathsOnly(t *testing.T) {
	addr := startBodyApp(t, 1024, smallBodyService{})

	payload := strings.Repeat("x", 200)
	for name, req := range map[string]string{
		"declared": "POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 200\r\n\r\n" + payload,
		"chunked":  "POST /Small/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nc8\r\n" + payload + "\r\n0\r\n\r\n",
	} {
		resps := rawExchange(t, addr, req)
		if len(resps) != 1 || resps[0].StatusCode != 413 || !resps[0].Close {
			t.Errorf("%s: 200 bytes to a 100-byte service: %d responses, want one 413 closing the connection", name, len(resps))
		}
	}
	resps := rawExchange(t, addr, "POST /len HTTP/1.1\r\nHost: x\r\nContent-Length: 200\r\nConnection: close\r\n\r\n"+payload)
	if len(resps) != 1 || body(resps[0]) != "200" {
		t.Error("another service's path took the small limit")
	}
}

// patternService has a route whose parameter is not its last segment, refusing bodies in its own format.
type patternService struct{}

func (patternService) Name() string                { return "pattern" }
func (patternService) Ready(context.Context) error { return nil }
func (patternService) Routes() []Route {
	return []Route{
		Put("/things/:id/parts", func(c *fiber.Ctx) error { return c.SendString(strconv.Itoa(len(c.Body()))) }).Limit(100).
			Refusing(func(c *fiber.Ctx, status int) error {
				return c.Status(status).SendString("own " + strconv.Itoa(status))
			}),
	}
}

// A route with a parameter before its last segment keeps its limit on every path it matches (and no
// other), and a refused body is answered in the route's own format, closing the connection.
func TestBoundBody_PatternRouteKeepsItsLimitAndAnswer(t *testing.T) {
	addr := startBodyApp(t, 1024, patternService{}, smallBodyService{})
	payload := strings.Repeat("x", 200)
	for _, path := range []string{"/things/a/parts", "/Things/b/parts/"} {
		resps := rawExchange(t, addr, "PUT "+path+" HTTP/1.1\r\nHost: x\r\nContent-Length: 200\r\n\r\n"+payload)
		if len(resps) != 1 || resps[0].StatusCode != 413 || !resps[0].Close || body(resps[0]) != "own 413" {
			t.Errorf("%s: 200 bytes to a 100-byte route: want one 413 in the route's format, closing", path)
		}
	}
	resps := rawExchange(t, addr, "PUT /things/a/parts HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\nConnection: close\r\n\r\n"+payload[:50])
	if len(resps) != 1 || body(resps[0]) != "50" {
		t.Error("a body within the limit was not taken")
	}
	// Another path of as many segments is not the route's: the server's limit, the platform's answer.
	resps = rawExchange(t, addr, "PUT /things/a/other HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n"+strings.Repeat("x", 2000))
	if len(resps) != 1 || resps[0].StatusCode != 413 || body(resps[0]) == "own 413" {
		t.Error("a path the pattern does not match took its answer")
	}
}
