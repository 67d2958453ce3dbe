package auth

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/formsservice/formsservice/services/auth/admin"
	"github.com/formsservice/formsservice/services/auth/console"
	"github.com/formsservice/formsservice/services/platform/server"
)

// maxBody bounds every request body the auth endpoints read (declared on each route below; the server
// enforces it before any handler runs).
const maxBody = 64 << 10

// samlMaxBody bounds the body of a SAML ACS post: a signed Response, base64-encoded, with an IdP's
// attributes and groups (Entra's and ADFS's run to tens of KB).
const samlMaxBody = 512 << 10

// Routes declares every endpoint of the provider, at the paths the ingress routes to it, and the area
// that answers it. Every auth endpoint reads at most maxBody (64 KB): sign-in forms and token requests
// are small; and every answer carries Strict-Transport-Security when the issuer is https. Each is
// counted in formsservice_http_requests_total{service="auth",route=...}; the areas count their own.
func (s *Service) Routes() []server.Route {
	web, oauth, signin, saml, journeys, account, adm := s.web, s.oauth, s.signin, s.saml, s.journeys, s.account, s.admin
	if adm == nil {
		adm = &admin.Handler{} // (&Service{}).Routes() lists the paths without a service
	}
	con := s.console
	if con == nil {
		con = &console.Handler{}
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
		// A SAML connector (D76): our SP metadata for the IdP, and the Assertion Consumer Service, where
		// the IdP posts its answer (HTTP-POST binding; it goes on to /oauth2/callback, same-site).
		server.Get("/oauth2/saml/:connector/metadata", web.Handle(saml.Metadata)),
		server.Post("/oauth2/saml/:connector/acs", web.HandleClient(saml.ACS)),
		// Its SingleLogoutService (D89, package oauth as logout is): the IdP's LogoutResponse to ours,
		// or its own LogoutRequest (HTTP-Redirect binding).
		server.Get("/oauth2/saml/:connector/slo", web.Handle(oauth.SAMLLogout)),

		// package journeys: the mailed journeys, e-mail verification and password reset.
		server.Get("/account/verify", web.HandleClient(journeys.VerifyPage)),
		server.Post("/account/verify", web.HandleClient(journeys.VerifyEmail)),
		server.Post("/account/verify/resend", web.HandleClient(journeys.ResendVerification)),
		server.Get("/account/forgot", web.HandleClient(journeys.ForgotPage)),
		server.Post("/account/forgot", web.HandleClient(journeys.Forgot)),
		server.Get("/account/reset", web.HandleClient(journeys.ResetPage)),
		server.Post("/account/reset", web.HandleClient(journeys.Reset)),
		// The links of the owner's notices (D66): "this wasn't me" after a sign-in in a new browser, and
		// the unblock link after a lockout. Each GET shows a button and acts on nothing.
		server.Get("/account/not-me", web.HandleClient(journeys.NotMePage)),
		server.Post("/account/not-me", web.HandleClient(journeys.NotMe)),
		server.Get("/account/unblock", web.HandleClient(journeys.UnblockPage)),
		server.Post("/account/unblock", web.HandleClient(journeys.Unblock)),

		// package account: the account page and the passkeys page, signed in through the hosted page's
		// session.
		server.Get("/account", web.HandleClient(account.Page)),
		server.Post("/account/password", web.HandleClient(account.ChangePassword)),
		server.Post("/account/mfa", web.HandleClient(account.ChangeMFA)),
		server.Get("/account/totp", web.HandleClient(account.EnrolPage)),
		server.Post("/account/totp", web.HandleClient(account.ConfirmEnrolment)),
		server.Post("/account/sessions/end", web.HandleClient(account.EndSession)),
		server.Post("/account/sessions/end-others", web.HandleClient(account.EndOtherSessions)),
		server.Post("/account/grants/end", web.HandleClient(account.EndGrant)),
		server.Post("/account/connectors/link", web.HandleClient(account.LinkIdentity)),
		server.Post("/account/connectors/unlink", web.HandleClient(account.UnlinkIdentity)),
		// An ldap connector links through its own form: the directory binds as the person (D82).
		server.Get("/account/connectors/ldap", web.HandleClient(account.DirectoryLinkPage)),
		server.Post("/account/connectors/ldap", web.HandleClient(account.LinkDirectory)),
		server.Get("/account/passkeys", web.HandleClient(account.Passkeys)),
		server.Post("/account/passkeys", web.HandleClient(account.Passkeys)),
		server.Post("/account/passkeys/begin", web.HandleClient(account.PasskeyRegisterBegin)),

		// package admin: the admin API, a resource server of the provider's own (bearer tokens for the
		// audience <issuer>/admin, package bearer; docs/architecture.md D50, D59), described by
		// services/auth/admin/openapi.yaml, which lists exactly these routes.
		server.Get("/admin/v1/whoami", web.Handle(adm.Whoami)),
		server.Get("/admin/v1/openapi.yaml", web.Handle(adm.OpenAPI)),
		server.Get("/admin/v1/users", web.Handle(adm.Users)),
		server.Post("/admin/v1/users", web.Handle(adm.CreateUser)),
		server.Get("/admin/v1/users/:id", web.Handle(adm.User)),
		server.Delete("/admin/v1/users/:id", web.Handle(adm.DeleteUser)),
		server.Post("/admin/v1/users/:id/disable", web.Handle(adm.DisableUser)),
		server.Post("/admin/v1/users/:id/enable", web.Handle(adm.EnableUser)),
		server.Put("/admin/v1/users/:id/groups", web.Handle(adm.SetGroups)),
		server.Delete("/admin/v1/users/:id/mfa", web.Handle(adm.ResetMFA)),
		server.Get("/admin/v1/users/:id/factors", web.Handle(adm.UserFactors)),
		server.Delete("/admin/v1/users/:id/passkeys/:passkey", web.Handle(adm.RemovePasskey)),
		server.Post("/admin/v1/users/:id/verification", web.Handle(adm.SendVerification)),
		server.Post("/admin/v1/users/:id/sign-out", web.Handle(adm.SignOut)),
		server.Get("/admin/v1/users/:id/sessions", web.Handle(adm.UserSessions)),
		server.Get("/admin/v1/users/:id/grants", web.Handle(adm.UserGrants)),
		server.Get("/admin/v1/audit", web.Handle(adm.Audit)),
		server.Get("/admin/v1/clients", web.Handle(adm.Clients)),
		server.Get("/admin/v1/clients/:id", web.Handle(adm.Client)),
		// The forms' data on the forms' store (D63); an export streams its rows (a Fiber handler of its
		// own), and is declared before the submission it would otherwise be taken for.
		server.Get("/admin/v1/forms", web.Handle(adm.Forms)),
		server.Get("/admin/v1/forms/:form", web.Handle(adm.Form)),
		server.Get("/admin/v1/forms/:form/submissions", web.Handle(adm.Submissions)),
		server.Get("/admin/v1/forms/:form/submissions/export", adm.ExportSubmissions),
		server.Get("/admin/v1/forms/:form/submissions/:id", web.Handle(adm.Submission)),
		server.Delete("/admin/v1/forms/:form/submissions/:id", web.Handle(adm.DeleteSubmission)),
		server.Post("/admin/v1/forms/:form/submissions/:id/release", web.Handle(adm.ReleaseSubmission)),
		server.Post("/admin/v1/forms/:form/submissions/:id/spam", web.Handle(adm.MarkSpam)),
		server.Post("/admin/v1/forms/:form/submissions/:id/files/:file/link", web.Handle(adm.FileLink)),
		server.Get("/admin/v1/forms/:form/dead-letters", web.Handle(adm.DeadLetters)),
		server.Post("/admin/v1/forms/:form/dead-letters/:id/retry", web.Handle(adm.RetryDeadLetter)),
		server.Delete("/admin/v1/forms/:form/dead-letters/:id", web.Handle(adm.DiscardDeadLetter)),
		server.Get("/admin/v1/waitlist/entries", web.Handle(adm.Waitlist)),
		server.Get("/admin/v1/waitlist/entries/export", adm.ExportWaitlist),
		server.Post("/admin/v1/erasures", web.Handle(adm.Erase)),

		// package console: the admin console (D65), a web app that signs in through the hosted page as the
		// provider's own client formsservice-console and calls the admin API; /console/callback is its
		// redirect URI. 404 unless auth.console.enabled. (Routing is not strict: /console is this route too.)
		server.Get("/console/", web.Handle(con.Page)),
		server.Get("/console/callback", web.Handle(con.Page)),
		server.Get("/console/assets/:file", web.Handle(con.Asset)),
	}
	for i, r := range routes {
		r.Handlers = append([]fiber.Handler{web.HSTS}, r.Handlers...)
		r = r.Limit(maxBody)
		if strings.HasSuffix(r.Path, "/acs") {
			r = r.Limit(samlMaxBody) // a signed SAML Response with many attributes or groups
		}
		if strings.HasPrefix(r.Path, admin.Prefix+"/") {
			// The API's bodies are small, and a refused one is a problem like its other refusals.
			r = r.Limit(admin.MaxBody).Refusing(admin.RefuseBody)
		}
		routes[i] = r
	}
	return routes
}
