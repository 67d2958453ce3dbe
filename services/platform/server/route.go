package server

import "github.com/gofiber/fiber/v2"

// Route is one endpoint and every fact the server needs about it, declared once in the owning service's
// routes.go: method, path, handlers, and how much of a request body the server reads for it.
type Route struct {
	Method string
	Path   string
	// Handlers answer the request, in order (middleware such as CORS first).
	Handlers []fiber.Handler
	// BodyLimit is the largest request body in bytes; 0 means the server's limit (Options.BodyLimit).
	BodyLimit int
	// Streamed means the handler reads the body itself, through BodyLimit, after its own earlier checks
	// (the forms answer a foreign origin with 403 before reading a byte). The server leaves it unread.
	Streamed bool
	// Refuse answers a body the server refuses before the handler runs (413 over BodyLimit, 400
	// unreadable) in the route's own format (the admin API's RFC 9457 problems); nil: the platform's
	// JSON status body. The connection is closed either way.
	Refuse func(c *fiber.Ctx, status int) error
}

// Get declares a GET route (Fiber also answers HEAD for it).
func Get(path string, h ...fiber.Handler) Route {
	return Route{Method: fiber.MethodGet, Path: path, Handlers: h}
}

// Post declares a POST route.
func Post(path string, h ...fiber.Handler) Route {
	return Route{Method: fiber.MethodPost, Path: path, Handlers: h}
}

// Put declares a PUT route.
func Put(path string, h ...fiber.Handler) Route {
	return Route{Method: fiber.MethodPut, Path: path, Handlers: h}
}

// Delete declares a DELETE route.
func Delete(path string, h ...fiber.Handler) Route {
	return Route{Method: fiber.MethodDelete, Path: path, Handlers: h}
}

// Preflight declares an OPTIONS route: a CORS preflight.
func Preflight(path string, h ...fiber.Handler) Route {
	return Route{Method: fiber.MethodOptions, Path: path, Handlers: h}
}

// Limit returns the route with a body limit smaller than the server's.
func (r Route) Limit(bytes int) Route { r.BodyLimit = bytes; return r }

// Refusing returns the route with its own answer to a refused body (Route.Refuse).
func (r Route) Refusing(refuse func(c *fiber.Ctx, status int) error) Route {
	r.Refuse = refuse
	return r
}

// StreamedBody returns the route with its body left for the handler to read, through limit.
func (r Route) StreamedBody(limit int) Route { r.BodyLimit, r.Streamed = limit, true; return r }
