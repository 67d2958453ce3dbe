package realm

import (
	"slices"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/services/auth/keys"
	"github.com/formsservice/formsservice/services/platform/config"
)

type fixedConfig struct{ c *config.Config }

func (f fixedConfig) Current() *config.Config { return f.c }

func consoleRealm(t *testing.T, on *bool, clients ...config.OAuthClient) (*Realm, error) {
	t.Helper()
	ks, err := keys.Generate()
	if err != nil {
		t.Fatal(err)
	}
	c := &config.Config{PublicURL: "https://id.example.com", Auth: config.Auth{Clients: clients, Console: config.AuthConsole{Enabled: on}}}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := NewSource(Options{Config: fixedConfig{c}, Keys: ks})
	if err != nil {
		return nil, err
	}
	return s.Current(), nil
}

// The console's client (D65): registered only with the console on; public, PKCE, one exact redirect
// URI, tokens for the admin API's audience only, the admin scopes; its ID not a configured client's.
func TestConsoleClient_OnlyWhenOnAndForTheAdminAPIOnly(t *testing.T) {
	on, off := true, false
	for _, v := range []*bool{nil, &off} {
		rt, err := consoleRealm(t, v)
		if err != nil {
			t.Fatal(err)
		}
		if rt.Clients[ConsoleClientID] != nil {
			t.Errorf("enabled %v: the console's client exists", v)
		}
	}
	rt, err := consoleRealm(t, &on)
	if err != nil {
		t.Fatal(err)
	}
	cl := rt.Clients[ConsoleClientID]
	if cl == nil {
		t.Fatal("no console client with the console on")
	}
	if !cl.IsPublic() || !slices.Equal(cl.GetRedirectURIs(), []string{"https://id.example.com/console/callback"}) ||
		!slices.Equal(cl.GetAudience(), []string{"https://id.example.com/admin"}) || !cl.PostLogout["https://id.example.com/console/"] {
		t.Errorf("the console's client: public %v, redirect %v, audience %v, post-logout %v", cl.IsPublic(), cl.GetRedirectURIs(), cl.GetAudience(), cl.PostLogout)
	}
	for _, s := range []string{"openid", "offline_access", "users:read", "users:write", "audit:read", "forms:read", "forms:write"} {
		if !slices.Contains(cl.GetScopes(), s) {
			t.Errorf("the console's client may not ask for %s", s)
		}
	}
	if cl.GetGrantTypes().Has("client_credentials") {
		t.Error("the console's client may get tokens of its own")
	}

	_, err = consoleRealm(t, &on, config.OAuthClient{ClientID: ConsoleClientID, RedirectURIs: []string{"https://evil.example/cb"}})
	if err == nil || !strings.Contains(err.Error(), "console's own") {
		t.Errorf("a configured client took the console's ID: %v", err)
	}
}
