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
		if !declared {
			rule, declared = a.patternRule(c.Method(), c.Path())
		}
		if rule.Streamed {
			return c.Next()
		}
		limit := serverLimit
		if declared && rule.BodyLimit > 0 {
			limit = rule.BodyLimit
		}
		refuse := func(status int) error {
			c.Context().SetConnectionClose()
			if rule.Refuse != nil {
				return rule.Refuse(c, status)
			}
			return c.Status(status).JSON(fiber.Map{"status": "error"})
		}
		req := c.Request()
		if req.Header.ContentLength() > limit {
			return refuse(fiber.StatusRequestEntityTooLarge)
		}
		if stream := c.Context().RequestBodyStream(); stream != nil {
			body, err := io.ReadAll(io.LimitReader(stream, int64(limit)+1))
			if err != nil {
				return refuse(fiber.StatusBadRequest)
			}
			if len(body) > limit {
				return refuse(fiber.StatusRequestEntityTooLarge)
			}
			req.SetBodyRaw(body) // also releases the stream, which is now read to its end
		}
		return c.Next()
	}
}

// patternRule is the body rule of a route whose path has parameters before its last segment
// (/admin/v1/users/:id/groups): its segments compared one by one, a parameter matching any one segment.
// Such routes are few (the admin API's), so a list is searched.
func (a *App) patternRule(method, path string) (Route, bool) {
	segs := strings.Split(strings.Trim(strings.ToLower(path), "/"), "/")
	for _, r := range a.patterns {
		if r.Method != method {
			continue
		}
		want := strings.Split(strings.Trim(strings.ToLower(r.Path), "/"), "/")
		if len(want) != len(segs) {
			continue
		}
		match := true
		for i, w := range want {
			if !strings.HasPrefix(w, ":") && w != segs[i] || strings.HasPrefix(w, ":") && segs[i] == "" {
				match = false
				break
			}
		}
		if match {
			return r, true
		}
	}
	return Route{}, false
}
