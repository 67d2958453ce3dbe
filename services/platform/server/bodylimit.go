package server

import (
	"io"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// bodyKey is how the body rules are looked up before routing: the method and the path normalised the way
// Fiber's default (case-insensitive, non-strict) routing matches it.
func bodyKey(method, path string) string {
	if len(path) > 1 {
		path = strings.TrimRight(path, "/")
	}
	return method + " " + strings.ToLower(path)
}

// splitLast splits a path at its last slash: "/f/demo" is "/f" and "demo" (a trailing slash is dropped
// first, as routing ignores it).
func splitLast(path string) (parent, last string) {
	if len(path) > 1 {
		path = strings.TrimRight(path, "/")
	}
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/", path[i+1:]
	}
	return path[:i], path[i+1:]
}

// boundBody reads every request body through its route's limit (or the server's) before any handler runs,
// except on streamed routes, whose handlers read it themselves. With
// body streaming on (which the forms need), fasthttp does not enforce BodyLimit itself, and c.Body()
// would buffer whatever a client sends. A body that is refused or unreadable also closes the
// connection, so that its unread tail is never parsed as the next request.
func (a *App) boundBody(serverLimit int) fiber.Handler {
	return func(c *fiber.Ctx) error {
		rule, declared := a.bodies[bodyKey(c.Method(), c.Path())]
		if !declared {
			if parent, last := splitLast(c.Path()); last != "" {
				rule, declared = a.bodies[bodyKey(c.Method(), parent)+"/:"]
			}
		}
		if rule.Streamed {
			return c.Next()
		}
		limit := serverLimit
		if declared && rule.BodyLimit > 0 {
			limit = rule.BodyLimit
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
