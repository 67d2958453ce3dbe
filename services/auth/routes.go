package auth

import (
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/formsservice/formsservice/services/platform/server"
)

// maxBody bounds every request body the auth endpoints read (declared on each route below; the server
// enforces it before any handler runs).
const maxBody = 64 << 10

// Routes declares every endpoint of the provider, at the paths the ingress routes to it, and the area
// that answers it. Every auth endpoint reads at most maxBody (64 KB): sign-in forms and token requests
// are small; and every answer carries Strict-Transport-Security when the issuer is https. Each is
// counted in formsservice_http_requests_total{service="auth",route=...}; the areas count their own.
func (s *Service) Routes() []server.Route {
	web, oauth, signin, journeys, account, admin := s.web, s.oauth, s.signin, s.journeys, s.account, s.admin
	var whoami http.Handler = http.NotFoundHandler() // (&Service{}).Routes() lists the paths without a service
	if admin != nil {
		whoami = admin.Whoami
	}
	tokenCORS := web.CORS("POST")
	userinfoCORS := web.CORS("GET, POST")
	routes := []server.Route{
		// package oauth: discovery, tokens, resource servers, logout.
		server.Get("/.well-known/openid-configuration", oauth.Discovery),
		server.Get("/.well-known/jwks.json", oauth.JWKS),
		server.Preflight("/oauth2/token", tokenCORS),
		server.Post("/oauth2/token", tokenCORS, web.HandleClient(oauth.Token)),
		server.Preflight("/oauth2/revoke", tokenCORS),
		server.Post("/oauth2/revoke", tokenCORS, web.Handle(oauth.Revoke)),
		server.Preflight("/oauth2/userinfo", userinfoCORS),
		server.Get("/oauth2/userinfo", userinfoCORS, web.Handle(oauth.Userinfo)),
		server.Post("/oauth2/userinfo", userinfoCORS, web.Handle(oauth.Userinfo)),
		server.Post("/oauth2/introspect", web.Handle(oauth.Introspect)), // resource servers only: no CORS
		server.Get("/oauth2/logout", web.Handle(oauth.Logout)),
		server.Post("/oauth2/logout", web.Handle(oauth.Logout)),

		// package signin: the hosted sign-in page and its form; the page's script asks for a passkey
		// ceremony at /oauth2/passkey/begin and posts the answer to /oauth2/authorize.
		server.Get("/oauth2/authorize", web.HandleClient(signin.Authorize)),
		server.Post("/oauth2/authorize", web.HandleClient(signin.Authorize)),
		server.Post("/oauth2/passkey/begin", web.HandleClient(signin.PasskeyBegin)),
		// An upstream provider's answer (a connector's button, D58), for a sign-in or the account page's
		// link; its authorization request was kept in the trip's state.
		server.Get("/oauth2/callback", web.HandleClient(signin.Callback)),

		// package journeys: the mailed journeys, e-mail verification and password reset.
		server.Get("/account/verify", web.HandleClient(journeys.VerifyPage)),
		server.Post("/account/verify", web.HandleClient(journeys.VerifyEmail)),
		server.Post("/account/verify/resend", web.HandleClient(journeys.ResendVerification)),
		server.Get("/account/forgot", web.HandleClient(journeys.ForgotPage)),
		server.Post("/account/forgot", web.HandleClient(journeys.Forgot)),
		server.Get("/account/reset", web.HandleClient(journeys.ResetPage)),
		server.Post("/account/reset", web.HandleClient(journeys.Reset)),

		// package account: the account page and the passkeys page, signed in through the hosted page's
		// session.
		server.Get("/account", web.HandleClient(account.Page)),
		server.Post("/account/password", web.HandleClient(account.ChangePassword)),
		server.Post("/account/mfa", web.HandleClient(account.ChangeMFA)),
		server.Get("/account/totp", web.HandleClient(account.EnrolPage)),
		server.Post("/account/totp", web.HandleClient(account.ConfirmEnrolment)),
		server.Post("/account/sessions/end", web.HandleClient(account.EndSession)),
		server.Post("/account/grants/end", web.HandleClient(account.EndGrant)),
		server.Post("/account/connectors/link", web.HandleClient(account.LinkIdentity)),
		server.Post("/account/connectors/unlink", web.HandleClient(account.UnlinkIdentity)),
		server.Get("/account/passkeys", web.HandleClient(account.Passkeys)),
		server.Post("/account/passkeys", web.HandleClient(account.Passkeys)),
		server.Post("/account/passkeys/begin", web.HandleClient(account.PasskeyRegisterBegin)),

		// package admin: the admin API, a resource server of the provider's own (bearer tokens for the
		// audience <issuer>/admin, package bearer; docs/architecture.md D50).
		server.Get("/admin/v1/whoami", web.Handle(whoami.ServeHTTP)),
	}
	for i, r := range routes {
		r.Handlers = append([]fiber.Handler{web.HSTS}, r.Handlers...)
		routes[i] = r.Limit(maxBody)
	}
	return routes
}
