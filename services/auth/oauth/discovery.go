package oauth

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/formsservice/formsservice/services/auth/acr"
	"github.com/formsservice/formsservice/services/auth/claims"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/platform/config"
)

// discoveryDoc is a realm's encoded discovery document.
type discoveryDoc struct {
	rt  *realm.Realm
	doc []byte
}

// discoveryOf is rt's discovery document, encoded once per realm (a reload builds a new realm).
func (h *Handler) discoveryOf(rt *realm.Realm) ([]byte, error) {
	if d := h.discovery.Load(); d != nil && d.rt == rt {
		return d.doc, nil
	}
	doc, err := discovery(rt)
	if err != nil {
		return nil, err
	}
	h.discovery.Store(&discoveryDoc{rt: rt, doc: doc})
	return doc, nil
}

// discovery is the discovery document for a realm's issuer and clients: the standard scopes first, then
// groups (always: the provider supports it, though a client must list it to ask for it), then any other
// scope a client has, sorted. The account page's own client is nobody's client and adds nothing.
func discovery(rt *realm.Realm) ([]byte, error) {
	iss := rt.Issuer
	scopes := map[string]bool{claims.GroupsScope: true}
	for _, cl := range rt.Clients {
		if cl.Account {
			continue
		}
		for _, sc := range cl.Scopes {
			scopes[sc] = true
		}
	}
	list := make([]string, 0, len(scopes))
	for _, sc := range []string{"openid", "profile", "email", "offline_access", claims.GroupsScope} {
		if scopes[sc] {
			list = append(list, sc)
			delete(scopes, sc)
		}
	}
	list = append(list, slices.Sorted(maps.Keys(scopes))...)
	return json.Marshal(map[string]any{
		"issuer":                                           iss,
		"authorization_endpoint":                           iss + "/oauth2/authorize",
		"token_endpoint":                                   iss + "/oauth2/token",
		"userinfo_endpoint":                                iss + "/oauth2/userinfo",
		"jwks_uri":                                         iss + "/.well-known/jwks.json",
		"revocation_endpoint":                              iss + "/oauth2/revoke",
		"introspection_endpoint":                           iss + "/oauth2/introspect",
		"end_session_endpoint":                             iss + "/oauth2/logout",
		"backchannel_logout_supported":                     true,
		"backchannel_logout_session_supported":             true,
		"scopes_supported":                                 list,
		"response_types_supported":                         []string{"code"},
		"response_modes_supported":                         []string{"query"},
		"grant_types_supported":                            []string{"authorization_code", "refresh_token", "client_credentials"},
		"subject_types_supported":                          []string{"public"},
		"id_token_signing_alg_values_supported":            []string{"ES256"},
		"token_endpoint_auth_methods_supported":            []string{"none", "client_secret_basic", "client_secret_post", "private_key_jwt"},
		"token_endpoint_auth_signing_alg_values_supported": config.ClientAssertionAlgs,
		"revocation_endpoint_auth_methods_supported":       []string{"none", "client_secret_basic", "client_secret_post"},
		"introspection_endpoint_auth_methods_supported":    []string{"client_secret_basic"},
		"code_challenge_methods_supported":                 []string{"S256"},
		"prompt_values_supported":                          realm.SupportedPrompts,
		"claims_supported":                                 []string{"sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "email", "email_verified", "name", "amr", "acr", claims.GroupsScope, claims.SIDClaim},
		"acr_values_supported":                             acr.Supported,
		"ui_locales_supported":                             page.Languages,
		"request_parameter_supported":                      false,
		"request_uri_parameter_supported":                  false,
		"claims_parameter_supported":                       false,
		"authorization_response_iss_parameter_supported":   true,
	})
}
