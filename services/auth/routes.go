package auth

import "github.com/gofiber/fiber/v2"

// Routes mounts every endpoint of the provider, at the paths the ingress routes to it.
func (s *Service) Routes(r fiber.Router) {
	r.Get("/.well-known/openid-configuration", s.discovery)
	r.Get("/.well-known/jwks.json", s.jwksHandler)

	r.Get("/oauth2/authorize", s.handle(s.authorize))  // the hosted sign-in page
	r.Post("/oauth2/authorize", s.handle(s.authorize)) // its form

	tokenCORS := s.cors("POST")
	r.Options("/oauth2/token", tokenCORS)
	r.Post("/oauth2/token", tokenCORS, s.handle(s.token))
	r.Options("/oauth2/revoke", tokenCORS)
	r.Post("/oauth2/revoke", tokenCORS, s.handle(s.revoke))

	userinfoCORS := s.cors("GET, POST")
	r.Options("/oauth2/userinfo", userinfoCORS)
	r.Get("/oauth2/userinfo", userinfoCORS, s.handle(s.userinfo))
	r.Post("/oauth2/userinfo", userinfoCORS, s.handle(s.userinfo))

	r.Post("/oauth2/introspect", s.handle(s.introspect)) // resource servers only: no CORS

	r.Get("/oauth2/logout", s.handle(s.logout))
	r.Post("/oauth2/logout", s.handle(s.logout))
}
