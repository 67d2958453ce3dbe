package platform

import (
	"io"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// BodyStreamer is a Service that reads the request bodies of some of its paths itself, through a
// tighter limit and in its own order of checks (the forms: origin before size). The platform leaves
// those bodies alone.
type BodyStreamer interface {
	StreamedPaths() []string
}

// streamedKey normalises a path the way Fiber's default (case-insensitive, non-strict) routing matches.
func streamedKey(path string) string {
	if len(path) > 1 {
		path = strings.TrimRight(path, "/")
	}
	return strings.ToLower(path)
}

// boundBody reads every other request body through the server's limit before any handler runs. With
// body streaming on (which the forms need), fasthttp does not enforce BodyLimit itself, and c.Body()
// would buffer whatever a client sends. A body that is refused or unreadable also closes the
// connection, so that its unread tail is never parsed as the next request.
func (a *App) boundBody(limit int) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if a.streamed[streamedKey(c.Path())] {
			return c.Next()
		}
		req := c.Request()
		if req.Header.ContentLength() > limit {
			c.Context().SetConnectionClose()
			return c.Status(fiber.StatusRequestEntityTooLarge).JSON(fiber.Map{"status": "error"})
		}
		if stream := c.Context().RequestBodyStream(); stream != nil {
			body, err := io.ReadAll(io.LimitReader(stream, int64(limit)+1))
			if err != nil {
				c.Context().SetConnectionClose()
				return c.Status(fiber.StatusBadRequest).JSON(fiber.Map{"status": "error"})
			}
			if len(body) > limit {
				c.Context().SetConnectionClose()
				return c.Status(fiber.StatusRequestEntityTooLarge).JSON(fiber.Map{"status": "error"})
			}
			req.SetBodyRaw(body) // also releases the stream, which is now read to its end
		}
		return c.Next()
	}
}
