// Package web is the provider's web kit: what every area's handlers share to speak HTTP to a browser or
// an app. It mounts net/http handlers (what fosite speaks) in Fiber with the client's address, and holds
// the cookies, the CSRF double submit, CORS, the rate limits' answers, the pages' look and language, the
// refusals explained to developers, and the one test of "the store did not answer". It knows nothing of
// sign-in sessions (package signon) or of any area's flow.
package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/clientip"
	"github.com/formsservice/formsservice/services/platform/refusal"
	"github.com/formsservice/formsservice/services/platform/storeerr"
)

// Kit is the web kit of one provider.
type Kit struct {
	Realm    *realm.Source
	Pages    *page.Renderer
	Throttle *throttle.Limiter
	Log      *slog.Logger
	refusals *refusal.Recorder
	// rateLimited counts the requests refused by auth.rateLimit, by limit.
	rateLimited *prometheus.CounterVec
}

// Options are the kit's dependencies.
type Options struct {
	Realm      *realm.Source
	Pages      *page.Renderer
	Throttle   *throttle.Limiter
	Log        *slog.Logger
	Registerer prometheus.Registerer
	// Dev is the all-in-one dev server: refused sign-in links are explained at info level, and on the
	// error page.
	Dev bool
}

// New builds the kit and registers its metrics.
func New(o Options) (*Kit, error) {
	k := &Kit{Realm: o.Realm, Pages: o.Pages, Throttle: o.Throttle, Log: o.Log}
	var err error
	k.refusals, err = refusal.New(refusal.Options{Service: "auth", Logger: o.Log, Registerer: o.Registerer, Dev: o.Dev, Reasons: refusalReasons})
	if err != nil {
		return nil, err
	}
	k.rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "formsservice_auth_rate_limited_total",
		Help: "Requests refused by auth.rateLimit (429), by limit: authorize-ip, authorize-user, token-ip, token-user.",
	}, []string{"limit"})
	if err := o.Registerer.Register(k.rateLimited); err != nil {
		return nil, err
	}
	return k, nil
}

// Handle mounts a net/http handler (what fosite speaks) in Fiber. The server has already bounded the
// body (declared on each route in routes.go).
func (k *Kit) Handle(h http.HandlerFunc) fiber.Handler {
	return k.HandleClient(func(w http.ResponseWriter, r *http.Request, _ string) { h(w, r) })
}

// ClientHandler is a net/http handler that also counts the client: clientKey is its clientip.Key (its
// address, or its IPv6 /64, with X-Forwarded-For believed only from the configured proxies, and only its
// right-most untrusted hop, which a client cannot forge).
type ClientHandler func(w http.ResponseWriter, r *http.Request, clientKey string)

// HandleClient mounts a ClientHandler: the client's address is read from the connection here, where
// Fiber has it, passed on as the key, and carried in the request's context with its user agent for the
// audit trail (audit.WithOrigin).
func (k *Kit) HandleClient(h ClientHandler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		addr := clientip.Addr(c, k.Realm.Current().Proxies)
		key := clientip.Key(addr)
		ua := string(c.Request().Header.UserAgent())
		return adaptor.HTTPHandlerFunc(asNetHTTP(func(w http.ResponseWriter, r *http.Request) {
			// The adaptor's context is fasthttp's RequestCtx, which the server reuses for the next request
			// on the connection: its Done (v1.51) reads a field Shutdown writes without a lock, and its
			// Value reads user values the server resets once the handler returns. Both raced under -race
			// in CI: a mail-send deadline watching Done at shutdown, and a mail sent after the answer
			// (journeys' sendLater) looking up a value after the reset. So handlers get a context of
			// their own, not derived from it: no handler reads Fiber's values, and its Done only ever
			// closed at shutdown, which waits for open requests anyway.
			// Every page of the request in its language and the platform's branding (a client's, where
			// the handler knows the client, through PageLook).
			r = ownRequest(r.WithContext(audit.WithOrigin(context.Background(), addr, ua)))
			w = page.WithLookFunc(w, func() page.Look { return PageLook(r, k.Realm.Current(), nil) })
			h(w, r, key)
		}))(c)
	}
}

// ownRequest gives r strings of its own. The adaptor's request shares fasthttp's request buffer: its
// method, host, URL and headers are strings over bytes that the server overwrites with the connection's
// next request once the handler returns. Anything a handler keeps past its answer (an audit event, a
// mail sent later naming the client, a log line written by another goroutine) would then read another
// request's bytes. One copy here, of a few hundred bytes, closes that for every handler. The body
// needs none: what reads it (ParseForm, a JSON decoder) copies it out.
func ownRequest(r *http.Request) *http.Request {
	r.Method = strings.Clone(r.Method)
	r.Proto = strings.Clone(r.Proto)
	r.Host = strings.Clone(r.Host)
	r.RequestURI = strings.Clone(r.RequestURI)
	if r.URL != nil {
		u := *r.URL
		u.Scheme, u.Opaque, u.Host = strings.Clone(u.Scheme), strings.Clone(u.Opaque), strings.Clone(u.Host)
		u.Path, u.RawPath = strings.Clone(u.Path), strings.Clone(u.RawPath)
		u.RawQuery, u.Fragment, u.RawFragment = strings.Clone(u.RawQuery), strings.Clone(u.Fragment), strings.Clone(u.RawFragment)
		if u.User != nil { // only in an absolute-form request URI
			name := strings.Clone(u.User.Username())
			if pw, ok := u.User.Password(); ok {
				u.User = url.UserPassword(name, strings.Clone(pw))
			} else {
				u.User = url.User(name)
			}
		}
		r.URL = &u
	}
	own := make(http.Header, len(r.Header))
	for k, vs := range r.Header {
		c := make([]string, len(vs))
		for i, v := range vs {
			c[i] = strings.Clone(v)
		}
		own[strings.Clone(k)] = c
	}
	r.Header = own
	for i, te := range r.TransferEncoding {
		r.TransferEncoding[i] = strings.Clone(te)
	}
	return r
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

// HSTS tells browsers to reach an https issuer over https only (RFC 6797), on every answer of the
// provider (routes.go puts it first on each route): a first plain-http visit cannot be downgraded
// afterwards.
func (k *Kit) HSTS(c *fiber.Ctx) error {
	if k.Realm.Current().Secure {
		c.Set(fiber.HeaderStrictTransportSecurity, "max-age=31536000")
	}
	return c.Next()
}

// IsUnavailable reports a failure of a store (every store's ErrUnavailable wraps
// storeerr.ErrUnavailable) or of the hashing pool: the request was fine, the service could not serve it
// now (503, never 500).
func IsUnavailable(err error) bool {
	return errors.Is(err, storeerr.ErrUnavailable) || errors.Is(err, users.ErrBusy)
}

// BadForm answers a form that could not be read.
func (k *Kit) BadForm(w http.ResponseWriter) {
	k.Pages.RenderError(w, http.StatusBadRequest, page.Error{Title: "Bad request", Message: "The form could not be read."})
}

// AccountUnavailable answers a page of the account or a mailed journey whose store did not answer: 503
// with Retry-After, never a 500.
func (k *Kit) AccountUnavailable(w http.ResponseWriter, err error) {
	k.Log.Warn("account page: store unavailable", "err", err)
	w.Header().Set("Retry-After", "5")
	k.Pages.RenderError(w, http.StatusServiceUnavailable, page.Error{Title: "Try again", Message: "Your account is briefly unavailable. Please try again in a moment."})
}
