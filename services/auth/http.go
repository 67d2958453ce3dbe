package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/sso"
	"github.com/formsservice/formsservice/services/auth/store"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/clientip"
)

// maxBody bounds every request body the auth endpoints read (declared on each route in routes.go; the
// server enforces it before any handler runs).
const maxBody = 64 << 10

// handle mounts a net/http handler (what fosite speaks) in Fiber. The server has already bounded the
// body (maxBody, declared in routes.go).
func (s *Service) handle(h http.HandlerFunc) fiber.Handler {
	return s.handleClient(func(w http.ResponseWriter, r *http.Request, _ string) { h(w, r) })
}

// clientHandler is a net/http handler that also counts the client: clientKey is its clientip.Key (its
// address, or its IPv6 /64, with X-Forwarded-For believed only from the configured proxies, and only its
// right-most untrusted hop, which a client cannot forge).
type clientHandler func(w http.ResponseWriter, r *http.Request, clientKey string)

// handleClient mounts a clientHandler: the client's address is read from the connection here, where
// Fiber has it, passed on as the key, and carried in the request's context with its user agent for the
// audit trail (audit.WithOrigin).
func (s *Service) handleClient(h clientHandler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		addr := clientip.Addr(c, s.rt().proxies)
		key := clientip.Key(addr)
		ua := string(c.Request().Header.UserAgent())
		return adaptor.HTTPHandlerFunc(asNetHTTP(func(w http.ResponseWriter, r *http.Request) {
			// The adaptor's context is fasthttp's RequestCtx, which the server reuses for the next request
			// on the connection: its Done (v1.51) reads a field Shutdown writes without a lock, and its
			// Value reads user values the server resets once the handler returns. Both raced under -race
			// in CI: a mail-send deadline watching Done at shutdown, and a mail sent after the answer
			// (journeys.go's sendLater) looking up a value after the reset. So handlers get a context of
			// their own, not derived from it: no handler reads Fiber's values, and its Done only ever
			// closed at shutdown, which waits for open requests anyway.
			// Every page of the request in its language and the platform's branding (a client's, where
			// the handler knows the client, through pageLook).
			w = page.WithLookFunc(w, func() page.Look { return s.pageLook(r, s.rt(), nil) })
			h(w, r.WithContext(audit.WithOrigin(context.Background(), addr, ua)), key)
		}))(c)
	}
}

// asNetHTTP makes an answer without a body carry no Content-Type, as on net/http (which only sniffs
// a type from a body) and as fosite expects: the adaptor would sniff "text/plain" from an empty body,
// and strict clients refuse that on, say, a revocation's 200 (oidc-client-ts throws on any present
// Content-Type that is not JSON). A nil value keeps the adaptor from adding one (net/http's convention
// for suppressing an automatic header).
func asNetHTTP(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		cw := &bodyWatcher{ResponseWriter: w}
		h(cw, r)
		if _, typed := w.Header()["Content-Type"]; !typed && !cw.wrote {
			w.Header()["Content-Type"] = nil
		}
	}
}

// bodyWatcher notes whether a handler wrote any body.
type bodyWatcher struct {
	http.ResponseWriter
	wrote bool
}

func (b *bodyWatcher) Write(p []byte) (int, error) {
	b.wrote = b.wrote || len(p) > 0
	return b.ResponseWriter.Write(p)
}

// hsts tells browsers to reach an https issuer over https only (RFC 6797), on every answer of the
// provider (routes.go puts it first on each route): a first plain-http visit cannot be downgraded
// afterwards.
func (s *Service) hsts(c *fiber.Ctx) error {
	if s.rt().secure {
		c.Set(fiber.HeaderStrictTransportSecurity, "max-age=31536000")
	}
	return c.Next()
}

// Cookie names: under https the __Host- prefix pins the cookie to this exact host and path /.
func cookieName(rt *runtime, base string) string {
	if rt.secure {
		return "__Host-" + base
	}
	return base
}

const (
	sessionCookie = "fs_session"
	csrfCookie    = "fs_csrf"
)

func setCookie(w http.ResponseWriter, rt *runtime, base, value string, maxAge time.Duration) {
	c := &http.Cookie{
		Name:     cookieName(rt, base),
		Value:    value,
		Path:     "/",
		HttpOnly: true,
		Secure:   rt.secure,
		SameSite: http.SameSiteLaxMode,
	}
	if maxAge < 0 {
		c.MaxAge = -1
	} else if maxAge > 0 {
		c.MaxAge = int(maxAge / time.Second)
	}
	http.SetCookie(w, c)
}

func readCookie(r *http.Request, rt *runtime, base string) string {
	c, err := r.Cookie(cookieName(rt, base))
	if err != nil {
		return ""
	}
	return c.Value
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// csrfToken returns the browser's CSRF token (double-submit: the same random value in an HttpOnly
// cookie and in the form), setting a new cookie when there is none.
func csrfToken(w http.ResponseWriter, r *http.Request, rt *runtime) string {
	if v := readCookie(r, rt, csrfCookie); len(v) == 43 {
		return v
	}
	v := randomToken()
	setCookie(w, rt, csrfCookie, v, 0)
	return v
}

// csrfValid checks the double-submit token and, when the browser sends Origin, that the form was posted
// from this host ("null", what a sandboxed or opaque-origin page sends, is refused). A cross-site page
// can neither read the cookie nor set it.
func csrfValid(r *http.Request, rt *runtime) bool {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return false
		}
	}
	cookie := readCookie(r, rt, csrfCookie)
	form := r.PostForm.Get("csrf_token")
	return len(cookie) == 43 && subtle.ConstantTimeCompare([]byte(cookie), []byte(form)) == 1
}

// cors answers the browser's CORS questions for the endpoints a browser app calls directly (token,
// revoke, userinfo): allowed are the origins of the registered clients' redirect URIs.
func (s *Service) cors(methods string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		origin := c.Get(fiber.HeaderOrigin)
		c.Vary(fiber.HeaderOrigin)
		allowed := origin != "" && s.rt().origins[strings.ToLower(origin)]
		if c.Method() == fiber.MethodOptions {
			if !allowed {
				return c.SendStatus(fiber.StatusForbidden)
			}
			c.Set(fiber.HeaderAccessControlAllowOrigin, origin)
			c.Set(fiber.HeaderAccessControlAllowMethods, methods)
			c.Set(fiber.HeaderAccessControlAllowHeaders, "authorization, content-type")
			c.Set(fiber.HeaderAccessControlMaxAge, "600")
			return c.SendStatus(fiber.StatusNoContent)
		}
		if allowed {
			c.Set(fiber.HeaderAccessControlAllowOrigin, origin)
			c.Set(fiber.HeaderAccessControlExposeHeaders, "www-authenticate")
		}
		return c.Next()
	}
}

// isUnavailable reports a failure of the store or of the hashing pool: the request was fine, the
// service could not serve it now (503, never 500).
func isUnavailable(err error) bool {
	for _, target := range []error{store.ErrUnavailable, users.ErrUnavailable, users.ErrBusy, sso.ErrUnavailable, throttle.ErrUnavailable} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}
