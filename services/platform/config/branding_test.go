package config

import (
	"strings"
	"testing"
)

func TestBranding_ParsedValidatedAndOverriddenPerClient(t *testing.T) {
	c, err := Parse([]byte(`publicURL: https://id.example.com
auth:
  branding: {productName: Acme ID, logoURL: "https://cdn.example.com/logo.svg", accentColor: "#AA3300", stylesheetURL: "https://cdn.example.com/brand.css"}
  clients:
  - clientID: shop
    redirectURIs: [https://shop.example.com/cb]
    branding: {productName: Acme Shop, accentColor: "#00aa55"}
`))
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	b := c.Auth.Branding
	if b.ProductName != "Acme ID" || b.LogoURL != "https://cdn.example.com/logo.svg" || b.AccentColor != "#AA3300" || b.StylesheetURL != "https://cdn.example.com/brand.css" {
		t.Errorf("parsed %+v", b)
	}
	got := b.Over(c.Auth.Clients[0].Branding)
	want := Branding{ProductName: "Acme Shop", LogoURL: b.LogoURL, AccentColor: "#00aa55", StylesheetURL: b.StylesheetURL}
	if got != want {
		t.Errorf("client over platform: %+v, want %+v", got, want)
	}
	if b.Over(nil) != b {
		t.Errorf("no client branding changed the platform's")
	}

	for yaml, want := range map[string]string{
		`accentColor: "#12345"`:                              `auth.branding.accentColor "#12345": want #rrggbb`,
		`accentColor: blue`:                                  "want #rrggbb",
		`accentColor: "#12345g"`:                             "want #rrggbb",
		`logoURL: "http://cdn.example.com/l.png"`:            "auth.branding.logoURL: \"http://cdn.example.com/l.png\": must be https",
		`logoURL: "https://cdn.example.com/l.png?v=1"`:       "no user info, query or fragment",
		`logoURL: "https://u:p@cdn.example.com/l.png"`:       "no user info",
		`logoURL: "/logo.png"`:                               "want an absolute https URL",
		`stylesheetURL: "https://cdn.example.com/a;b.css"`:   "auth.branding.stylesheetURL",
		`stylesheetURL: "https://cdn.example.com/a b.css"`:   "without spaces",
		`stylesheetURL: "javascript:alert(1)"`:               "want an absolute https URL",
		`stylesheetURL: "https://cdn.example.com/x.css#top"`: "no user info, query or fragment",
		"productName: \"a\\u0007b\"":                         "auth.branding.productName",
		"productName: " + strings.Repeat("x", 81):            "at most 80 characters",
		"productName: \"   \"":                               "productName",
		"colour: red":                                        "unknown",
	} {
		c, err := Parse([]byte("auth:\n  branding: {" + yaml + "}\n"))
		if err == nil {
			c.ApplyDefaults()
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", yaml, err, want)
		}
	}
	// A client's override is checked as well, and named.
	c, err = Parse([]byte("auth:\n  clients:\n  - {clientID: shop, redirectURIs: [\"https://shop.example.com/cb\"], branding: {accentColor: red}}\n"))
	if err == nil {
		c.ApplyDefaults()
		err = c.Validate()
	}
	if err == nil || !strings.Contains(err.Error(), `auth.clients[shop].branding.accentColor "red"`) {
		t.Errorf("client override: %v", err)
	}
	// Loopback http is fine for development.
	if err := BrandingURL("http://127.0.0.1:8081/logo.png"); err != nil {
		t.Errorf("loopback http: %v", err)
	}
}
