package forms

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
)

// MaxBodyBytes is the spec's 16 KB body limit (16 × 1024 bytes), counted on the bytes received: the
// declared Content-Length, and for chunked bodies the decoded bytes as they arrive.
const MaxBodyBytes = 16 << 10

// drainLimit is how much of a refused body is read and thrown away so that the connection can stay open
// and the client reliably sees the answer (closing a socket with unread data makes the kernel send a
// reset, which can destroy the answer in flight). Beyond it, or after drainTimeout, the connection closes.
const (
	drainLimit   = 64 << 10
	drainTimeout = time.Second
)

var (
	errTooLarge   = errors.New("body exceeds 16 KB")
	errUnreadable = errors.New("body could not be read")
)

// bodyBuffers hold one body each; a body never outlives its handler.
var bodyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, MaxBodyBytes+1); return &b }}

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

// finishUnread is called when an answer is sent without reading the whole body. It reads and discards
// what is left, up to drainLimit and drainTimeout, so the connection can serve the next request;
// otherwise the connection is closed after the answer (fasthttp would parse the leftover body as the
// next request).
func finishUnread(c *fiber.Ctx) {
	stream := c.Context().RequestBodyStream()
	if stream == nil {
		return
	}
	if conn := c.Context().Conn(); conn != nil {
		_ = conn.SetReadDeadline(time.Now().Add(drainTimeout))
	}
	n, err := io.CopyN(io.Discard, stream, drainLimit+1)
	if err != io.EOF || n > drainLimit {
		c.Context().SetConnectionClose()
	}
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
