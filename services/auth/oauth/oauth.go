// Package oauth is the provider's OAuth 2.0 and OpenID Connect endpoints that are not the hosted
// sign-in: the token endpoint (authorization code with PKCE, refresh, client credentials), revocation (RFC 7009),
// introspection (RFC 7662), userinfo, discovery and the JWKS, and RP-initiated logout. fosite does the
// protocol; this package checks what fosite does not, counts, audits, and answers store outages as
// temporarily_unavailable.
package oauth

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/backchannel"
	"github.com/formsservice/formsservice/services/auth/federation"
	"github.com/formsservice/formsservice/services/auth/keys"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/auth/signon"
	"github.com/formsservice/formsservice/services/auth/store"
	"github.com/formsservice/formsservice/services/auth/throttle"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/auth/web"
	"github.com/formsservice/formsservice/services/platform/server"
)

// Options are the endpoints' dependencies.
type Options struct {
	Web        *web.Kit
	SignOn     *signon.Kit
	Store      *store.Store
	Users      *users.Store
	Throttle   *throttle.Limiter
	Audit      *audit.Recorder
	Keys       *keys.Set
	Log        *slog.Logger
	Registerer prometheus.Registerer
	// Backchannel queues the logout tokens of a session that logs out (nil: none are sent).
	Backchannel *backchannel.Notifier
	// Federation re-checks at a refresh the grants signed in through a connector (D78).
	Federation *federation.Kit
}

// Handler serves the endpoints.
type Handler struct {
	web      *web.Kit
	signOn   *signon.Kit
	store    *store.Store
	users    *users.Store
	throttle *throttle.Limiter
	audit    *audit.Recorder
	signer   *keys.Signer
	jwks     []byte
	log      *slog.Logger
	// backchannel queues logout tokens for relying parties (D60).
	backchannel *backchannel.Notifier
	federation  *federation.Kit
	metrics     metrics
	// discovery is the encoded discovery document of a realm, built once per realm.
	discovery atomic.Pointer[discoveryDoc]
}

// metrics are the token endpoint's own; request counts and latency per route come from the platform.
type metrics struct {
	tokens       *prometheus.CounterVec
	tokenLatency *prometheus.HistogramVec
	rechecks     *prometheus.CounterVec
}

// New builds the handler and registers its metrics.
func New(o Options) (*Handler, error) {
	h := &Handler{web: o.Web, signOn: o.SignOn, store: o.Store, users: o.Users, throttle: o.Throttle, audit: o.Audit,
		signer: o.Keys.Signer(), jwks: o.Keys.JWKS(), log: o.Log, backchannel: o.Backchannel, federation: o.Federation}
	h.metrics = metrics{
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "formsservice_auth_tokens_issued_total",
			Help: "Token responses issued by grant type.",
		}, []string{"grant_type"}),
		tokenLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "formsservice_auth_token_duration_seconds",
			Help:    "Token endpoint latency by grant type and outcome (ok or the OAuth error code).",
			Buckets: server.LatencyBuckets,
		}, []string{"grant_type", "outcome"}),
		rechecks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "formsservice_auth_upstream_rechecks_total",
			Help: "Re-checks at refresh of grants signed in through a connector, by connector and result (D78).",
		}, []string{"connector", "result"}),
	}
	for _, c := range []prometheus.Collector{h.metrics.tokens, h.metrics.tokenLatency, h.metrics.rechecks} {
		if err := o.Registerer.Register(c); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func (h *Handler) realm() *realm.Realm { return h.web.Realm.Current() }

var jwksCacheControl = fmt.Sprintf("public, max-age=%d", int(keys.JWKSMaxAge/time.Second))

// Discovery is /.well-known/openid-configuration (OpenID Connect Discovery 1.0, RFC 8414). Browsers
// fetch it from any origin, so it is served with Access-Control-Allow-Origin: *. The document depends
// only on the configuration: it is built once per realm, not per request.
func (h *Handler) Discovery(c *fiber.Ctx) error {
	doc, err := h.discoveryOf(h.realm())
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderAccessControlAllowOrigin, "*")
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	return c.Send(doc)
}

// JWKS is /.well-known/jwks.json: the current, previous and next signing keys. Its max-age is the wait
// a rotation keeps between publishing a next key and signing with it (keys.JWKSMaxAge).
func (h *Handler) JWKS(c *fiber.Ctx) error {
	c.Set(fiber.HeaderAccessControlAllowOrigin, "*")
	c.Set(fiber.HeaderCacheControl, jwksCacheControl)
	c.Set(fiber.HeaderContentType, "application/jwk-set+json")
	return c.Send(h.jwks)
}

// grantLabel bounds the grant_type label to the grants the provider knows.
func grantLabel(g string) string {
	switch g {
	case "authorization_code", "refresh_token", grantClientCredentials:
		return g
	}
	return "other"
}
