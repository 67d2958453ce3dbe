package forms

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
)

// MaxBodyBytes is the documented 16 KB body limit (docs/forms.md; 16 × 1024 bytes), counted on the bytes
// received: the declared Content-Length, and for chunked bodies the decoded bytes as they arrive.
const MaxBodyBytes = 16 << 10

// drainLimit is how much of a refused body is read and thrown away so that the connection can stay open
// and the client reliably sees the answer (closing a socket with unread data makes the kernel send a
// reset, which can destroy the answer in flight). Beyond it, or after drainTimeout, the connection closes.
const (
	drainLimit    = 64 << 10
	drainTimeout  = time.Second
	lingerLimit   = 8 << 20
	lingerTimeout = 2 * time.Second
)

var (
	errTooLarge   = errors.New("body exceeds 16 KB")
	errUnreadable = errors.New("body could not be read")
)

// buffers are one request's scratch space: the body read through the limit and the record written to
// Redis. Neither outlives its handler (decoded strings are copies; go-redis has written the record to the
// connection when the script call returns).
type buffers struct {
	body   []byte
	record []byte
}

var handlerBuffers = sync.Pool{New: func() any {
	return &buffers{body: make([]byte, 0, MaxBodyBytes+1), record: make([]byte, 0, 1024)}
}}

// readBody reads the request body through the limit. The platform app streams request bodies
// (StreamRequestBody) with a 1 MiB ceiling for the whole server, and fasthttp hands over the stream even
// when the declared length exceeds that ceiling, so this is where 16 KB is enforced: at most
// MaxBodyBytes+1 bytes are ever read.
func readBody(c *fiber.Ctx, buf []byte) ([]byte, error) {
	req := c.Request()
	if req.Header.ContentLength() > MaxBodyBytes {
		return nil, errTooLarge
	}
	stream := c.Context().RequestBodyStream()
	if stream == nil { // a server without body streaming has already read (and bounded) the body
		b := req.Body()
		if len(b) > MaxBodyBytes {
			return nil, errTooLarge
		}
		return b, nil
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			return nil, errTooLarge // cap is MaxBodyBytes+1
		}
		n, err := stream.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, errUnreadable
		}
	}
	if len(buf) > MaxBodyBytes {
		return nil, errTooLarge
	}
	return buf, nil
}

// finishUnread is called after the answer to a request whose body was not read to the end (a refused
// origin, a body over the limit). Short leftovers (up to drainLimit, within drainTimeout) are read and
// thrown away here, so the connection serves the next request; fasthttp would otherwise parse them as
// that request. Longer ones get a lingering close: the connection is taken over, the answer written with
// "Connection: close", and what the client still sends is read and discarded for a bounded time before
// closing. Closing at once would make the kernel reset the connection while the client is still
// writing, and the client would lose the answer.
func finishUnread(c *fiber.Ctx) {
	fctx := c.Context()
	stream := fctx.RequestBodyStream()
	if stream == nil {
		return
	}
	conn := fctx.Conn()
	if conn != nil {
		_ = conn.SetReadDeadline(time.Now().Add(drainTimeout))
	}
	n, err := io.CopyN(io.Discard, stream, drainLimit+1)
	if err == io.EOF && n <= drainLimit {
		return
	}
	fctx.Response.SetConnectionClose()
	var answer bytes.Buffer
	if conn == nil {
		return
	}
	if _, err := fctx.Response.WriteTo(&answer); err != nil {
		return
	}
	fctx.HijackSetNoResponse(true)
	fctx.Hijack(func(conn net.Conn) {
		_ = conn.SetWriteDeadline(time.Now().Add(lingerTimeout))
		if _, err := conn.Write(answer.Bytes()); err != nil {
			return
		}
		_ = conn.SetReadDeadline(time.Now().Add(lingerTimeout))
		_, _ = io.CopyN(io.Discard, conn, lingerLimit)
	})
}

// isJSON accepts "application/json" with optional parameters, of which charset must be utf-8 (JSON
// has no other encoding on the web). A text/plain or form body — what a browser may send cross-origin
// without a preflight — is refused.
func isJSON(ct []byte) bool {
	mt, params, _ := bytes.Cut(ct, []byte{';'})
	if !bytes.EqualFold(bytes.TrimSpace(mt), []byte("application/json")) {
		return false
	}
	for len(params) > 0 {
		var p []byte
		p, params, _ = bytes.Cut(params, []byte{';'})
		k, v, _ := bytes.Cut(bytes.TrimSpace(p), []byte{'='})
		if bytes.EqualFold(bytes.TrimSpace(k), []byte("charset")) {
			v = bytes.Trim(bytes.TrimSpace(v), `"`)
			if !bytes.EqualFold(v, []byte("utf-8")) && !bytes.EqualFold(v, []byte("utf8")) {
				return false
			}
		}
	}
	return true
}

// identityEncoding refuses compressed bodies: the limit is on bytes received, and decompressing would
// let 16 KB expand into megabytes.
func identityEncoding(ce []byte) bool {
	ce = bytes.TrimSpace(ce)
	return len(ce) == 0 || bytes.EqualFold(ce, []byte("identity"))
}
