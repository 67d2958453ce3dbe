package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestConnectors_PresetsAndValidation(t *testing.T) {
	c := &Config{PublicURL: "https://auth.example.com", Auth: Auth{
		Connectors: []Connector{
			{ID: "google", Preset: PresetGoogle, ClientID: "g", ClientSecretFile: "/s/g"},
			{ID: "entra", Preset: PresetMicrosoft, ClientID: "m", ClientSecretFile: "/s/m"},
		},
		Clients: []OAuthClient{{ClientID: "app", RedirectURIs: []string{"https://app.example.com/cb"}, Connectors: []string{"google", "entra"}}},
	}}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	g, m := c.Auth.Connectors[0], c.Auth.Connectors[1]
	gh := Config{PublicURL: "https://auth.example.com", Auth: Auth{Connectors: []Connector{{ID: "gh", Type: TypeGitHub, ClientID: "Iv1.x", ClientSecretFile: "/s/gh", Orgs: []string{"acme-corp"}}}}}
	gh.ApplyDefaults()
	if err := gh.Validate(); err != nil {
		t.Fatal(err)
	}
	if h := gh.Auth.Connectors[0]; h.BaseURL != GitHubURL || h.Name != "GitHub" || !h.Trusts() || !h.ReadsGroups() || h.GroupsPrefix != "gh:" ||
		!slices.Equal(h.Scopes, []string{"read:user", "user:email", "read:org"}) || len(h.SigningAlgs) != 0 {
		t.Errorf("github defaults: %+v", h)
	}
	if g.Issuer != "https://accounts.google.com" || !g.Trusts() || g.Claims.EmailVerified != "email_verified" || g.Name != "Google" {
		t.Errorf("google preset: %+v", g)
	}
	if m.Issuer != "https://login.microsoftonline.com/organizations/v2.0" || m.Trusts() || m.Claims.EmailVerified != "xms_edov" || !m.MultiTenant() {
		t.Errorf("microsoft preset: %+v", m)
	}

	for name, tc := range map[string]struct {
		conn Connector
		list []string
		want string
	}{
		"no secret file":        {Connector{ID: "x", Issuer: "https://x.example.com", ClientID: "c"}, nil, "clientSecretFile is required"},
		"http issuer":           {Connector{ID: "x", Issuer: "http://x.example.com", ClientID: "c", ClientSecretFile: "/s"}, nil, "must be https"},
		"bad id":                {Connector{ID: "X Y", Issuer: "https://x.example.com", ClientID: "c", ClientSecretFile: "/s"}, nil, `id "X Y"`},
		"hmac alg":              {Connector{ID: "x", Issuer: "https://x.example.com", ClientID: "c", ClientSecretFile: "/s", SigningAlgs: []string{"HS256"}}, nil, `"HS256" is not one of`},
		"no openid scope":       {Connector{ID: "x", Issuer: "https://x.example.com", ClientID: "c", ClientSecretFile: "/s", Scopes: []string{"email"}}, nil, "scopes must include openid"},
		"unknown in a client":   {Connector{ID: "x", Issuer: "https://x.example.com", ClientID: "c", ClientSecretFile: "/s"}, []string{"y"}, `"y" is not in auth.connectors`},
		"unknown preset":        {Connector{ID: "x", Preset: "github", Issuer: "https://x.example.com", ClientID: "c", ClientSecretFile: "/s"}, nil, `preset "github"`},
		"no client id":          {Connector{ID: "x", Issuer: "https://x.example.com", ClientSecretFile: "/s"}, nil, "clientID is required"},
		"loopback http is ok?":  {Connector{ID: "x", Issuer: "http://127.0.0.1:5556", ClientSecretFile: "/s"}, nil, "clientID is required"},
		"issuer with user info": {Connector{ID: "x", Issuer: "https://u:p@x.example.com", ClientID: "c", ClientSecretFile: "/s"}, nil, "the upstream's issuer URL is required"},
		"unknown type":          {Connector{ID: "x", Type: "kerberos", Issuer: "https://x.example.com", ClientID: "c", ClientSecretFile: "/s"}, nil, `type "kerberos"`},
		"oidc with orgs":        {Connector{ID: "x", Issuer: "https://x.example.com", ClientID: "c", ClientSecretFile: "/s", Orgs: []string{"acme"}}, nil, "are for type github"},
		"github with issuer":    {Connector{ID: "x", Type: TypeGitHub, Issuer: "https://x.example.com", ClientID: "c", ClientSecretFile: "/s"}, nil, "are for type oidc"},
		"github with a preset":  {Connector{ID: "x", Type: TypeGitHub, Preset: PresetGoogle, ClientID: "c", ClientSecretFile: "/s"}, nil, "takes none"},
		"github over http":      {Connector{ID: "x", Type: TypeGitHub, BaseURL: "http://github.example.com", ClientID: "c", ClientSecretFile: "/s"}, nil, "must be https"},
		"github with a path":    {Connector{ID: "x", Type: TypeGitHub, BaseURL: "https://example.com/github", ClientID: "c", ClientSecretFile: "/s"}, nil, "no path"},
		"github bad org":        {Connector{ID: "x", Type: TypeGitHub, ClientID: "c", ClientSecretFile: "/s", Orgs: []string{"-acme"}}, nil, `"-acme" is not a GitHub organisation`},
	} {
		c := &Config{PublicURL: "https://auth.example.com", Auth: Auth{Connectors: []Connector{tc.conn},
			Clients: []OAuthClient{{ClientID: "app", RedirectURIs: []string{"https://app.example.com/cb"}, Connectors: tc.list}}}}
		c.ApplyDefaults()
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", name, err, tc.want)
		}
		if name == "loopback http is ok?" && strings.Contains(err.Error(), "must be https") {
			t.Errorf("a loopback http issuer was refused: %v", err)
		}
	}
}

// The example of docs/auth.md "Signing in with other providers" is a configuration this package
// accepts, and means what the page says: the presets' issuers, Microsoft's tenant, the mapped claim.
func TestConnectors_DocsExample(t *testing.T) {
	c := docsExample(t, "## Signing in with other providers")
	want := map[string]string{"google": "https://accounts.google.com", "entra": "https://login.microsoftonline.com/contoso.onmicrosoft.com/v2.0",
		"keycloak": "https://sso.example.com/realms/staff"}
	for id, issuer := range want {
		conn, ok := c.Auth.ConnectorByID(id)
		if !ok || conn.Issuer != issuer {
			t.Errorf("%s: %+v, want issuer %s", id, conn, issuer)
		}
	}
	if k, _ := c.Auth.ConnectorByID("keycloak"); k.Claims.Name != "preferred_username" || !k.Trusts() {
		t.Errorf("keycloak: %+v", k)
	}
	if e, _ := c.Auth.ConnectorByID("entra"); e.Trusts() || e.MultiTenant() {
		t.Errorf("entra for one tenant: %+v", e)
	}
	if cl := c.Auth.Clients[0]; len(cl.Connectors) != 3 {
		t.Errorf("the client offers %v", cl.Connectors)
	}
}

// The GitHub example of docs/auth.md is a configuration this package accepts, with GitHub's defaults.
func TestConnectors_GitHubDocsExample(t *testing.T) {
	c := docsExample(t, "### GitHub\n")
	if g, _ := c.Auth.ConnectorByID("github"); g.Type != TypeGitHub || g.BaseURL != GitHubURL || !slices.Equal(g.Orgs, []string{"acme"}) || !g.Trusts() {
		t.Errorf("github: %+v", g)
	}
}

// The re-check's keys (D78): their defaults, and what they refuse.
func TestConnectors_RecheckKeys(t *testing.T) {
	c := &Config{PublicURL: "https://auth.example.com", Auth: Auth{Connectors: []Connector{
		{ID: "x", Issuer: "https://x.example.com", ClientID: "c", ClientSecretFile: "/s", OfflineAccess: true},
		{ID: "gh", Type: TypeGitHub, ClientID: "c", ClientSecretFile: "/s", RecheckEvery: Duration(time.Second), OnUpstreamDown: UpstreamDownEnd},
	}}}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if x := c.Auth.Connectors[0]; x.RecheckEvery != DefaultRecheckEvery || x.OnUpstreamDown != UpstreamDownKeep {
		t.Errorf("defaults: recheckEvery %s, onUpstreamDown %q", x.RecheckEvery.D(), x.OnUpstreamDown)
	}
	if gh := c.Auth.Connectors[1]; gh.RecheckEvery.D() != time.Second || gh.OnUpstreamDown != UpstreamDownEnd {
		t.Errorf("set values were changed: %+v", gh)
	}
	for name, tc := range map[string]struct {
		conn Connector
		want string
	}{
		"too often":        {Connector{RecheckEvery: Duration(time.Millisecond)}, "recheckEvery 1ms: between 1s and 24h"},
		"too rare":         {Connector{RecheckEvery: Duration(25 * time.Hour)}, "between 1s and 24h"},
		"unknown policy":   {Connector{OnUpstreamDown: "retry"}, `onUpstreamDown "retry": keep or end`},
		"offline + github": {Connector{Type: TypeGitHub, OfflineAccess: true}, "offlineAccess is for type oidc"},
	} {
		conn := tc.conn
		conn.ID, conn.ClientID, conn.ClientSecretFile = "x", "c", "/s"
		if conn.Type == "" {
			conn.Issuer = "https://x.example.com"
		}
		c := &Config{PublicURL: "https://auth.example.com", Auth: Auth{Connectors: []Connector{conn}}}
		c.ApplyDefaults()
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", name, err, tc.want)
		}
	}
}

// docsExample is the first YAML example in docs/auth.md after heading (a line's start up to its end, as
// written, "\n" included where the heading must end there), as the configuration of an issuer: parsed,
// defaulted and valid, or the test fails.
func docsExample(t *testing.T, heading string) *Config {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "auth.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), heading)
	_, block, ok2 := strings.Cut(section, "```yaml\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatalf("docs/auth.md has no YAML example under %q", heading)
	}
	c, err := Parse([]byte("publicURL: https://auth.example.com\n" + block))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}
