package realm

import (
	"fmt"

	"github.com/ory/fosite"
)

// The admin console (auth.console.enabled; docs/console.md, D65) is a web app the provider serves at
// <issuer>/console/. It signs in through the hosted page as any browser app does, as the provider's own
// public client ConsoleClientID: PKCE, one exact redirect URI, access tokens for the admin API's
// audience only (<issuer>/admin) with the admin scopes. The admin API still checks every call: a person
// outside auth.admin.group gets a token and a 403 from every route.

// ConsoleClientID is the console's client; a configured client may not take the ID.
const ConsoleClientID = "formsservice-console"

// ConsolePath is the console's path below the issuer.
const ConsolePath = "/console"

// ConsoleScopes are what the console asks for: who signed in, a refresh token (a working day without a
// new sign-in), and every scope of the admin API (bearer.AdminScopes, which this package cannot import).
var ConsoleScopes = []string{"openid", "profile", "email", "offline_access", "users:read", "users:write", "audit:read", "forms:read", "forms:write"}

// addConsoleClient registers the console's client when the console is on.
func addConsoleClient(rt *Realm) error {
	if !rt.Config.Auth.Console.On() {
		return nil
	}
	if _, taken := rt.Clients[ConsoleClientID]; taken {
		return fmt.Errorf("auth.clients: the client ID %q is the console's own", ConsoleClientID)
	}
	home := rt.Issuer + ConsolePath + "/"
	rt.Clients[ConsoleClientID] = &Client{
		DefaultClient: &fosite.DefaultClient{
			ID:            ConsoleClientID,
			RedirectURIs:  []string{rt.Issuer + ConsolePath + "/callback"},
			GrantTypes:    []string{"authorization_code", "refresh_token"},
			ResponseTypes: []string{"code"},
			Scopes:        append([]string{}, ConsoleScopes...),
			Audience:      []string{rt.Issuer + "/admin"},
			Public:        true,
		},
		Name:            "the console",
		PostLogout:      map[string]bool{home: true},
		RedirectOrigins: map[string]bool{OriginOf(home): true},
	}
	return nil
}
