package admin

import (
	"net/http"

	"github.com/formsservice/formsservice/services/auth/bearer"
	"github.com/formsservice/formsservice/services/auth/realm"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Client is a registered OAuth client as its configuration says, without anything secret: never its
// secret (nor the file it is read from); of a private_key_jwt client only its keys' IDs.
type Client struct {
	ClientID                string   `json:"client_id"`
	Name                    string   `json:"name"`
	Public                  bool     `json:"public"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	Scopes                  []string `json:"scopes"`
	RedirectURIs            []string `json:"redirect_uris"`
	PostLogoutRedirectURIs  []string `json:"post_logout_redirect_uris"`
	Audiences               []string `json:"audiences"`
	Resources               []string `json:"resources"`
	RequireMFA              bool     `json:"require_mfa"`
	RequireVerifiedEmail    bool     `json:"require_verified_email"`
	KeyIDs                  []string `json:"key_ids"`
}

func clientOf(rt *realm.Realm, c config.OAuthClient) Client {
	method := "none"
	switch {
	case c.TokenEndpointAuthMethod == config.AuthPrivateKeyJWT:
		method = config.AuthPrivateKeyJWT
	case c.SecretFile != "":
		method = "client_secret_basic"
	}
	name := c.Name
	if name == "" {
		name = c.ClientID
	}
	out := Client{ClientID: c.ClientID, Name: name, Public: method == "none", TokenEndpointAuthMethod: method,
		GrantTypes: nonNil(c.GrantTypes), Scopes: nonNil(c.Scopes), RedirectURIs: nonNil(c.RedirectURIs),
		PostLogoutRedirectURIs: nonNil(c.PostLogoutRedirectURIs), Audiences: nonNil(c.Audiences), Resources: nonNil(c.Resources),
		RequireMFA: c.RequireMFA, RequireVerifiedEmail: c.RequireVerifiedEmail, KeyIDs: []string{}}
	if rc := rt.Clients[c.ClientID]; rc != nil && rc.Keys != nil {
		for _, k := range rc.Keys.Keys {
			out.KeyIDs = append(out.KeyIDs, k.KeyID)
		}
	}
	return out
}

func nonNil(ss []string) []string { return append([]string{}, ss...) }

// listClients is GET /admin/v1/clients: every client of the configuration in force, in its order.
func (h *Handler) listClients(w http.ResponseWriter, _ *http.Request, _ bearer.Principal) {
	rt := h.o.Realm.Current()
	out := struct {
		Clients []Client `json:"clients"`
	}{[]Client{}}
	for _, c := range rt.Config.Auth.Clients {
		out.Clients = append(out.Clients, clientOf(rt, c))
	}
	writeJSON(w, http.StatusOK, out)
}

// getClient is GET /admin/v1/clients/{id}.
func (h *Handler) getClient(w http.ResponseWriter, r *http.Request, _ bearer.Principal) {
	rt := h.o.Realm.Current()
	id := segment(r, 1)
	for _, c := range rt.Config.Auth.Clients {
		if c.ClientID == id {
			writeJSON(w, http.StatusOK, clientOf(rt, c))
			return
		}
	}
	problem(w, http.StatusNotFound, "No such client.", nil)
}
