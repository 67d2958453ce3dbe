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

// BodyLimiter is a Service whose request bodies are all smaller than the server's limit (auth's forms
// and token requests: 64 KB). The platform enforces it on the service's static paths, with the same
// JSON 413 and closed connection as the server limit.
type BodyLimiter interface {
	BodyLimit() int
}

// setPathLimits records each BodyLimiter's limit for the paths its routes were mounted at. Paths with
// parameters cannot be matched before routing and keep the server limit.
func (a *App) setPathLimits(services []Service) {
	byName := map[string]Service{}
	for _, s := range services {
		byName[s.Name()] = s
	}
	for key, owner := range a.owners {
		bl, ok := byName[owner].(BodyLimiter)
		if !ok {
			continue
		}
		_, path, _ := strings.Cut(key, " ")
		p := streamedKey(path)
		if n, seen := a.limits[p]; !seen || bl.BodyLimit() < n {
			a.limits[p] = bl.BodyLimit()
		}
	}
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
func (a *App) boundBody(serverLimit int) fiber.Handler {
	return func(c *fiber.Ctx) error {
		key := streamedKey(c.Path())
		if a.streamed[key] {
			return c.Next()
		}
		limit, ok := a.limits[key]
		if !ok {
			limit = serverLimit
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
