package server

import (
	"bytes"

	"github.com/gofiber/fiber/v2"
)

// rejectAmbiguousFraming refuses a request that declares both Content-Length and Transfer-Encoding, the
// shape of a request-smuggling attempt: a proxy in front may frame the body by one header and this
// server by the other, and the bytes after the shorter body become a request nobody checked. RFC 9112
// section 6.1 lets a server refuse it and requires closing the connection after answering it either way.
// fasthttp frames by Transfer-Encoding and forgets the Content-Length, so the raw header block is
// consulted, and only for chunked requests.
func rejectAmbiguousFraming(c *fiber.Ctx) error {
	h := &c.Request().Header
	if h.ContentLength() != -1 || !hasHeaderLine(h.RawHeaders(), "content-length") {
		return c.Next()
	}
	c.Context().SetConnectionClose()
	return c.Status(fiber.StatusBadRequest).JSON(fiber.Map{"status": "error"})
}

// hasHeaderLine reports whether the raw header block has a field called name (lower case).
func hasHeaderLine(raw []byte, name string) bool {
	for len(raw) > 0 {
		var line []byte
		line, raw, _ = bytes.Cut(raw, []byte{'\n'})
		if k, _, ok := bytes.Cut(line, []byte{':'}); ok && bytes.EqualFold(bytes.TrimSpace(k), []byte(name)) {
			return true
		}
	}
	return false
}
