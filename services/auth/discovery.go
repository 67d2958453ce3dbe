package auth

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/formsservice/formsservice/services/auth/acr"
	"github.com/formsservice/formsservice/services/auth/keys"
)

var jwksCacheControl = fmt.Sprintf("public, max-age=%d", int(keys.JWKSMaxAge/time.Second))

// discovery is /.well-known/openid-configuration (OpenID Connect Discovery 1.0, RFC 8414). Browsers
// fetch it from any origin, so it is served with Access-Control-Allow-Origin: *. The document depends
// only on the configuration: it is built with the runtime, not per request.
func (s *Service) discovery(c *fiber.Ctx) error {
	c.Set(fiber.HeaderAccessControlAllowOrigin, "*")
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	return c.Send(s.rt().discovery)
}

// discoveryDoc is the discovery document for an issuer and its clients: the standard scopes first, then
// groups (always: the provider supports it, though a client must list it to ask for it), then any other
// scope a client has, sorted.
func discoveryDoc(iss string, clients map[string]*client) ([]byte, error) {
	scopes := map[string]bool{groupsScope: true}
	for _, cl := range clients {
		for _, sc := range cl.Scopes {
			scopes[sc] = true
		}
	}
	list := make([]string, 0, len(scopes))
	for _, sc := range []string{"openid", "profile", "email", "offline_access", groupsScope} {
		if scopes[sc] {
			list = append(list, sc)
			delete(scopes, sc)
		}
	}
	list = append(list, slices.Sorted(maps.Keys(scopes))...)
	return json.Marshal(map[string]any{
		"issuer":                                         iss,
		"authorization_endpoint":                         iss + "/oauth2/authorize",
		"token_endpoint":                                 iss + "/oauth2/token",
		"userinfo_endpoint":                              iss + "/oauth2/userinfo",
		"jwks_uri":                                       iss + "/.well-known/jwks.json",
		"revocation_endpoint":                            iss + "/oauth2/revoke",
		"introspection_endpoint":                         iss + "/oauth2/introspect",
		"end_session_endpoint":                           iss + "/oauth2/logout",
		"scopes_supported":                               list,
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"subject_types_supported":                        []string{"public"},
		"id_token_signing_alg_values_supported":          []string{"ES256"},
		"token_endpoint_auth_methods_supported":          []string{"none", "client_secret_basic", "client_secret_post"},
		"revocation_endpoint_auth_methods_supported":     []string{"none", "client_secret_basic", "client_secret_post"},
		"introspection_endpoint_auth_methods_supported":  []string{"client_secret_basic"},
		"code_challenge_methods_supported":               []string{"S256"},
		"prompt_values_supported":                        supportedPrompts,
		"claims_supported":                               []string{"sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "email", "email_verified", "name", "amr", "acr", groupsScope},
		"acr_values_supported":                           acr.Supported,
		"request_parameter_supported":                    false,
		"request_uri_parameter_supported":                false,
		"claims_parameter_supported":                     false,
		"authorization_response_iss_parameter_supported": true,
	})
}

// jwksHandler is /.well-known/jwks.json: the current, previous and next signing keys. Its max-age is
// the wait a rotation keeps between publishing a next key and signing with it (keys.JWKSMaxAge).
func (s *Service) jwksHandler(c *fiber.Ctx) error {
	c.Set(fiber.HeaderAccessControlAllowOrigin, "*")
	c.Set(fiber.HeaderCacheControl, jwksCacheControl)
	c.Set(fiber.HeaderContentType, "application/jwk-set+json")
	return c.Send(s.jwks)
}
