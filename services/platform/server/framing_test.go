package server

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
)

// countingService counts the requests that reach its handler.
type countingService struct{ hits chan string }

func (s *countingService) Name() string { return "count" }
func (s *countingService) Routes() []Route {
	return []Route{Post("/submit", func(c *fiber.Ctx) error {
		body := c.Body()
		s.hits <- string(body)
		return c.SendStatus(fiber.StatusCreated)
	})}
}
func (s *countingService) Ready(context.Context) error { return nil }

func TestApp_ContentLengthAndTransferEncoding_Refused400AndConnectionClosed(t *testing.T) {
	svc := &countingService{hits: make(chan string, 10)}
	app := New(Options{Logger: quietLogger()}, svc)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })

	// A chunked request that also declares Content-Length, with a second request pipelined behind its
	// empty chunked body: a proxy framing by Content-Length would have forwarded it as one request.
	smuggled := "POST /submit HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
	raw := "POST /submit HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 400 || strings.TrimSpace(string(body)) != `{"status":"error"}` {
		t.Errorf("answer %d %s, want 400 {\"status\":\"error\"}", res.StatusCode, body)
	}
	if _, err := http.ReadResponse(br, nil); err == nil {
		t.Error("the pipelined request behind the ambiguous one was answered: the connection stayed open")
	}
	select {
	case b := <-svc.hits:
		t.Errorf("a request reached the handler (body %q)", b)
	default:
	}

	// Chunked alone and Content-Length alone are ordinary.
	for _, req := range []string{
		"POST /submit HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"POST /submit HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
	} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = c.Write([]byte(req))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err != nil || res.StatusCode != 201 {
			t.Errorf("%q: %v %v", req[:60], res, err)
		}
		if got := <-svc.hits; got != "hello" {
			t.Errorf("body %q", got)
		}
	}
}

func TestHasHeaderLine(t *testing.T) {
	raw := []byte("Host: x\r\ncontent-LENGTH : 4\r\nX-Content-Length-Note: y\r\n")
	if !hasHeaderLine(raw, "content-length") {
		t.Error("missed Content-Length")
	}
	if hasHeaderLine([]byte("Host: x\r\nX-Content-Length: 4\r\n"), "content-length") {
		t.Error("matched X-Content-Length")
	}
}
