package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Fiber's c.Method() points into the connection's request buffer, which the next request on the same
// keep-alive connection overwrites; a label kept by Prometheus must not change under it, or /metrics
// ends up with two series with the same labels and answers 500.
func TestMetrics_LabelsSurviveTheNextRequestOnTheConnection(t *testing.T) {
	app := New(Options{Logger: quietLogger()}, newEchoService(), &countingService{hits: make(chan string, 100)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	send := func(req string) (int, string) {
		t.Helper()
		if _, err := conn.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res.StatusCode, string(b)
	}
	for i := range 3 {
		send(fmt.Sprintf("GET /items/%d HTTP/1.1\r\nHost: x\r\n\r\n", i))
		send("POST /submit HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
		send("PUT /items/1 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
	}
	status, body := send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
	if status != 200 {
		t.Fatalf("/metrics answered %d:\n%.1500s", status, body)
	}
	for _, want := range []string{
		`formsservice_http_requests_total{code="200",method="GET",route="/items/:id",service="echo"} 3`,
		`formsservice_http_requests_total{code="201",method="POST",route="/submit",service="count"} 3`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
