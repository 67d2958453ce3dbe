package reliability

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// rawAnswer is what came back for raw bytes written to a connection.
type rawAnswer struct {
	status int
	header http.Header
	body   string
	closed bool // the server closed the connection without an answer
	err    error
}

// rawRequest writes req on a fresh connection and reads one response within timeout. Requests that
// net/http would refuse to send (CRLF in a header, invalid chunking, a body that lies about its size)
// can only be sent this way.
func rawRequest(addr string, req []byte, timeout time.Duration) rawAnswer {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return rawAnswer{err: err}
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	// Write in the background: the server may answer (413, 431) before it read everything.
	go func() { _, _ = conn.Write(req) }()
	return readAnswer(conn)
}

func readAnswer(conn net.Conn) rawAnswer {
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF || strings.Contains(err.Error(), "connection reset") {
			return rawAnswer{closed: true, err: err}
		}
		return rawAnswer{err: err}
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	return rawAnswer{status: res.StatusCode, header: res.Header, body: string(body)}
}

// post builds a raw HTTP/1.1 POST with a Content-Length body and extra header lines.
func post(path, body string, headers ...string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: forms.test\r\n", path)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return []byte(b.String())
}

// chunked builds a raw POST whose body is sent in chunks of size chunk.
func chunked(path, body string, chunk int, headers ...string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: forms.test\r\nTransfer-Encoding: chunked\r\n", path)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	for len(body) > 0 {
		n := min(chunk, len(body))
		fmt.Fprintf(&b, "%x\r\n%s\r\n", n, body[:n])
		body = body[n:]
	}
	b.WriteString("0\r\n\r\n")
	return []byte(b.String())
}
