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

// paceService reads uploads: /paced through PacedBody (at least 64 KiB/s on average), /plain straight
// from the stream under the server's read timeout. Each answers the bytes it read, or 408 with how many
// it had when the read failed.
type paceService struct{}

const paceMinRate = 64 << 10

func (paceService) Name() string                { return "pace" }
func (paceService) Ready(context.Context) error { return nil }
func (paceService) Routes() []Route {
	read := func(c *fiber.Ctx, r io.Reader) error {
		n, err := io.Copy(io.Discard, r)
		if err != nil {
			c.Context().SetConnectionClose()
			return c.Status(fiber.StatusRequestTimeout).SendString("cut after " + strconv.FormatInt(n, 10))
		}
		return c.SendString(strconv.FormatInt(n, 10))
	}
	return []Route{
		Post("/paced", func(c *fiber.Ctx) error { return read(c, PacedBody(c, 1<<20, paceMinRate)) }).StreamedBody(1 << 20),
		Post("/plain", func(c *fiber.Ctx) error { return read(c, c.Context().RequestBodyStream()) }).StreamedBody(1 << 20),
	}
}

// paceReadTimeout stands in for the server's 10 s, so that an upload longer than it takes a second.
const paceReadTimeout = 500 * time.Millisecond

func startPaceApp(t *testing.T) string {
	t.Helper()
	app := New(Options{Logger: quietLogger(), ReadTimeout: paceReadTimeout}, paceService{})
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

// upload is a slow client: it declares length bytes, sends the first first bytes at once (fasthttp
// reads up to 8 KiB of a body with the headers, under the server's read timeout), then chunks of chunk
// bytes at the pace of a ticker (the pace is the test's input, not a wait for anything), stopping after
// sending stopAfter bytes when that is smaller, and returns the answer's status and body ("" and the
// error when the server closed without one). The client's own deadline only bounds a broken test.
func upload(t *testing.T, addr, path string, length, first, chunk, stopAfter int, pace time.Duration) (int, string, error) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n", path, length); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(pace)
		defer tick.Stop()
		if _, err := conn.Write([]byte(strings.Repeat("x", first))); err != nil {
			return
		}
		part := []byte(strings.Repeat("x", chunk))
		for sent := first; sent < min(length, stopAfter); sent += chunk {
			if _, err := conn.Write(part[:min(chunk, length-sent)]); err != nil {
				return // the server cut the connection
			}
			select {
			case <-tick.C:
			case <-stop:
				return
			}
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// An upload that takes several read timeouts, its bytes coming steadily, is read whole through
// PacedBody; read straight from the stream it is cut by the server's read timeout.
func TestPacedBody_AnUploadLongerThanTheReadTimeoutArrives(t *testing.T) {
	addr := startPaceApp(t)
	const chunk, chunks, pace = 16 << 10, 12, 100 * time.Millisecond // 1.2 s: 2.4 read timeouts
	start := time.Now()
	code, body, err := upload(t, addr, "/paced", chunk*chunks, 0, chunk, chunk*chunks, pace)
	if err != nil || code != 200 || body != strconv.Itoa(chunk*chunks) {
		t.Fatalf("paced: %d %q %v", code, body, err)
	}
	if took := time.Since(start); took < 2*paceReadTimeout {
		t.Fatalf("the upload took %v, not longer than the read timeout: the test proves nothing", took)
	}
	code, body, err = upload(t, addr, "/plain", chunk*chunks, 0, chunk, chunk*chunks, pace)
	if err == nil && code == 200 {
		t.Fatalf("the server's read timeout did not cut the plain read: %d %q", code, body)
	}
}

// The deadline still ends a client that stops sending (the read timeout without a byte), and one that
// trickles: a byte before every deadline, but far below the minimum rate, is cut once the body has had
// the time its size is worth (read timeout + length / minRate).
func TestPacedBody_StalledAndTricklingClientsAreCut(t *testing.T) {
	addr := startPaceApp(t)
	const chunk = 16 << 10
	start := time.Now()
	code, body, err := upload(t, addr, "/paced", 8*chunk, 0, chunk, 2*chunk, time.Millisecond)
	if err != nil || code != http.StatusRequestTimeout || body != "cut after "+strconv.Itoa(2*chunk) {
		t.Fatalf("a stalled upload: %d %q %v", code, body, err)
	}
	if took := time.Since(start); took > 10*paceReadTimeout {
		t.Fatalf("a stalled upload was cut only after %v", took)
	}
	// 40 KiB may take 0.5 s + 40 KiB / 64 KiB/s ≈ 1.1 s; 8 KiB at once and then 100 bytes every 100 ms
	// they would take 33 s.
	start = time.Now()
	code, body, err = upload(t, addr, "/paced", 40<<10, 8<<10, 100, 40<<10, 100*time.Millisecond)
	if err != nil || code != http.StatusRequestTimeout || !strings.HasPrefix(body, "cut after ") {
		t.Fatalf("a trickling upload: %d %q %v", code, body, err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("a trickling upload was cut only after %v", took)
	}
}
