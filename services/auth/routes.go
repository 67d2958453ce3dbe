package auth

import (
	"github.com/gofiber/fiber/v2"

	"github.com/formsservice/formsservice/services/platform/server"
)

// Routes declares every endpoint of the provider, at the paths the ingress routes to it. Every auth
// endpoint reads at most maxBody (64 KB): sign-in forms and token requests are small; and every answer
// carries Strict-Transport-Security when the issuer is https. Each is counted in
// formsservice_http_requests_total{service="auth",route=...}; the provider's own metrics are in metrics.go.
func (s *Service) Routes() []server.Route {
	tokenCORS := s.cors("POST")
	userinfoCORS := s.cors("GET, POST")
	routes := []server.Route{
		server.Get("/.well-known/openid-configuration", s.discovery),
		server.Get("/.well-known/jwks.json", s.jwksHandler),

		server.Get("/oauth2/authorize", s.handleClient(s.authorize)),  // the hosted sign-in page
		server.Post("/oauth2/authorize", s.handleClient(s.authorize)), // its form

		server.Preflight("/oauth2/token", tokenCORS),
		server.Post("/oauth2/token", tokenCORS, s.handleClient(s.token)),
		server.Preflight("/oauth2/revoke", tokenCORS),
		server.Post("/oauth2/revoke", tokenCORS, s.handle(s.revoke)),

		server.Preflight("/oauth2/userinfo", userinfoCORS),
		server.Get("/oauth2/userinfo", userinfoCORS, s.handle(s.userinfo)),
		server.Post("/oauth2/userinfo", userinfoCORS, s.handle(s.userinfo)),

		server.Post("/oauth2/introspect", s.handle(s.introspect)), // resource servers only: no CORS

		server.Get("/oauth2/logout", s.handle(s.logout)),
		server.Post("/oauth2/logout", s.handle(s.logout)),

		// Passkeys (passkeys.go): the sign-in page's script asks for a ceremony here and posts the answer
		// to /oauth2/authorize; the passkeys page is reached with the sign-in session.
		server.Post("/oauth2/passkey/begin", s.handleClient(s.passkeyBegin)),
		server.Get("/account/passkeys", s.handleClient(s.passkeysPage)),
		server.Post("/account/passkeys", s.handleClient(s.passkeysPage)),
		server.Post("/account/passkeys/begin", s.handleClient(s.passkeyRegisterBegin)),

		// The mailed journeys (journeys.go): e-mail verification (verify.go) and password reset (reset.go).
		server.Get("/account/verify", s.handleClient(s.verifyEmail)),
		server.Post("/account/verify/resend", s.handleClient(s.resendVerification)),
		server.Get("/account/forgot", s.handleClient(s.forgotPage)),
		server.Post("/account/forgot", s.handleClient(s.forgot)),
		server.Get("/account/reset", s.handleClient(s.resetPage)),
		server.Post("/account/reset", s.handleClient(s.reset)),

		// The account page (account.go), signed in through the hosted page's session.
		server.Get("/account", s.handleClient(s.accountPage)),
		server.Post("/account/password", s.handleClient(s.changePassword)),
		server.Post("/account/mfa", s.handleClient(s.changeMFA)),
		server.Get("/account/totp", s.handleClient(s.enrolPage)),
		server.Post("/account/totp", s.handleClient(s.confirmEnrolment)),
		server.Post("/account/sessions/end", s.handleClient(s.endSession)),
		server.Post("/account/grants/end", s.handleClient(s.endGrant)),
	}
	for i, r := range routes {
		r.Handlers = append([]fiber.Handler{s.hsts}, r.Handlers...)
		routes[i] = r.Limit(maxBody)
	}
	return routes
}
