package config

import (
	"strings"
	"testing"
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
		"no secret file":       {Connector{ID: "x", Issuer: "https://x.example.com", ClientID: "c"}, nil, "clientSecretFile is required"},
		"http issuer":          {Connector{ID: "x", Issuer: "http://x.example.com", ClientID: "c", ClientSecretFile: "/s"}, nil, "must be https"},
		"bad id":               {Connector{ID: "X Y", Issuer: "https://x.example.com", ClientID: "c", ClientSecretFile: "/s"}, nil, `id "X Y"`},
		"hmac alg":             {Connector{ID: "x", Issuer: "https://x.example.com", ClientID: "c", ClientSecretFile: "/s", SigningAlgs: []string{"HS256"}}, nil, `"HS256" is not one of`},
		"no openid scope":      {Connector{ID: "x", Issuer: "https://x.example.com", ClientID: "c", ClientSecretFile: "/s", Scopes: []string{"email"}}, nil, "scopes must include openid"},
		"unknown in a client":  {Connector{ID: "x", Issuer: "https://x.example.com", ClientID: "c", ClientSecretFile: "/s"}, []string{"y"}, `"y" is not in auth.connectors`},
		"unknown preset":       {Connector{ID: "x", Preset: "github", Issuer: "https://x.example.com", ClientID: "c", ClientSecretFile: "/s"}, nil, `preset "github"`},
		"no client id":         {Connector{ID: "x", Issuer: "https://x.example.com", ClientSecretFile: "/s"}, nil, "clientID is required"},
		"loopback http is ok?": {Connector{ID: "x", Issuer: "http://127.0.0.1:5556", ClientSecretFile: "/s"}, nil, "clientID is required"},
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
