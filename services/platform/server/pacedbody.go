package server

import (
	"bytes"
	"io"
	"net"
	"time"

	"github.com/gofiber/fiber/v2"
)

// A large upload (a declared form's files, up to 100 MiB) takes longer than the server's read timeout
// (Options.ReadTimeout, 10 s), which fasthttp sets once per request, for its headers and its body
// together: on a phone's uplink the upload would be cut half-way. The timeout stays for every request,
// and a streamed route that takes large bodies reads through PacedBody instead, whose deadline moves
// with the bytes: the connection may be silent for at most the read timeout at a time (a slowloris
// client that stops is cut as before), and the whole body must arrive at an average of at least
// minRate (a client that trickles a byte before each deadline is cut too, once the body has had the time
// its size is worth).

// PacedBody returns the request body of a streamed route (Route.StreamedBody), to be read within the
// read timeout between any two reads and within ReadTimeout + maxBytes/minRate (bytes a second) in all,
// counted from now. maxBytes is the most the route reads (its declared Content-Length when smaller).
// Without a streamed body (a server that read it already) it returns the body read.
func PacedBody(c *fiber.Ctx, maxBytes, minRate int64) io.Reader {
	fctx := c.Context()
	stream := fctx.RequestBodyStream()
	if stream == nil {
		return bytes.NewReader(c.Request().Body())
	}
	conn := fctx.Conn()
	idle := c.App().Server().ReadTimeout
	if conn == nil || idle <= 0 || minRate <= 0 {
		return stream
	}
	if cl := int64(c.Request().Header.ContentLength()); cl >= 0 && cl < maxBytes {
		maxBytes = cl
	}
	end := time.Now().Add(idle + time.Duration(float64(maxBytes)/float64(minRate)*float64(time.Second)))
	return &pacedReader{r: stream, conn: conn, idle: idle, end: end}
}

// pacedReader moves the connection's read deadline before each read: the idle window from now, never
// past end.
type pacedReader struct {
	r    io.Reader
	conn net.Conn
	idle time.Duration
	end  time.Time
}

func (p *pacedReader) Read(b []byte) (int, error) {
	d := time.Now().Add(p.idle)
	if d.After(p.end) {
		d = p.end
	}
	if err := p.conn.SetReadDeadline(d); err != nil {
		return 0, err
	}
	return p.r.Read(b)
}
