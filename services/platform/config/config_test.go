package config

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParse_UnknownKeyIsAnError(t *testing.T) {
	_, err := Parse([]byte("allowedOrigins: [https://a.example]\nallowedOrigin: x\n"))
	if err == nil || !strings.Contains(err.Error(), "allowedOrigin") {
		t.Fatalf("want an error naming the unknown key, got %v", err)
	}
}

func TestLoad_DefaultsAndEnvironment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("publicURL: https://id.example.com\nredis: {url: redis://r:6379/0, timeout: 300ms}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"FORMSSERVICE_ALLOWED_ORIGINS": "https://a.example, https://*.b.example"}
	c, err := Load(path, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if got := c.AllowedOrigins; len(got) != 2 || got[1] != "https://*.b.example" {
		t.Errorf("origins from the environment: %v", got)
	}
	if c.Redis.Timeout.D() != 300*time.Millisecond {
		t.Errorf("redis timeout = %v", c.Redis.Timeout.D())
	}
	if c.Auth.Issuer != "https://id.example.com" || c.Auth.AccessTokenLifetime.D() != 15*time.Minute ||
		c.Auth.RefreshTokenLifetime.D() != 720*time.Hour || c.Auth.CodeLifetime.D() != time.Minute {
		t.Errorf("auth defaults: %+v", c.Auth)
	}
	if c.Forms.RateLimit() != 60 {
		t.Errorf("default rate limit = %d", c.Forms.RateLimit())
	}
}

func TestLoad_ReportsEveryProblemAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	doc := "logLevel: loud\nallowedOrigins: [ftp://x.example]\nauth: {clients: [{clientID: a, redirectURIs: [https://a/cb]}, {clientID: a, redirectURIs: [https://a/cb]}]}\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, nil)
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"logLevel", "ftp://x.example", `duplicate clientID "a"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestValidateOriginPattern(t *testing.T) {
	good := []string{"https://example.com", "http://localhost:3000", "http://127.0.0.1:8080", "https://*.example.com", "http://[::1]:8080"}
	bad := []string{"example.com", "https://example.com/", "https://example.com/path", "https://*.com", "http://*.example.com",
		"https://a.*.example.com", "https://Example.com", "https://user@example.com", "https://example.com:99999", "null", "*", "https://"}
	for _, o := range good {
		if err := ValidateOriginPattern(o); err != nil {
			t.Errorf("%q refused: %v", o, err)
		}
	}
	for _, o := range bad {
		if err := ValidateOriginPattern(o); err == nil {
			t.Errorf("%q accepted", o)
		}
	}
}

func TestMergeDevFixtures_AddsWithoutRemoving(t *testing.T) {
	c := &Config{AllowedOrigins: []string{"http://localhost:3000"},
		Auth: Auth{Clients: []OAuthClient{{ClientID: "my-app", RedirectURIs: []string{"http://localhost:3000/cb"}}}}}
	MergeDevFixtures(c, "http://127.0.0.1:9999")
	want := []string{"http://localhost:3000", "http://localhost:8080", "http://127.0.0.1:8080", "http://127.0.0.1:9999"}
	if strings.Join(c.AllowedOrigins, " ") != strings.Join(want, " ") {
		t.Errorf("origins = %v, want %v", c.AllowedOrigins, want)
	}
	if len(c.Auth.Clients) != 2 || c.Auth.Clients[0].ClientID != "my-app" || c.Auth.Clients[1].ClientID != DevClientID {
		t.Fatalf("clients = %+v", c.Auth.Clients)
	}
	demo := c.Auth.Clients[1]
	if demo.RedirectURIs[len(demo.RedirectURIs)-1] != "http://127.0.0.1:9999/demo/callback" {
		t.Errorf("demo client lacks the dev server's own callback: %v", demo.RedirectURIs)
	}
	if c.Forms.RateLimit() != 0 {
		t.Errorf("dev rate limit should be off unless configured, got %d", c.Forms.RateLimit())
	}
	if c.PublicURL != "http://127.0.0.1:9999" {
		t.Errorf("publicURL = %q", c.PublicURL)
	}
}

// A dev server on localhost (the default, or a test's free port) keeps 127.0.0.1 of its port as an origin
// and a redirect URI of the demo client, as the fixtures do for 8080: a page opened there still works.
func TestMergeDevFixtures_OnLocalhost_AlsoAccepts127001OfItsPort(t *testing.T) {
	c := &Config{}
	MergeDevFixtures(c, "http://localhost:9999")
	if c.PublicURL != "http://localhost:9999" {
		t.Errorf("publicURL = %q", c.PublicURL)
	}
	want := []string{"http://localhost:8080", "http://127.0.0.1:8080", "http://localhost:9999", "http://127.0.0.1:9999"}
	if strings.Join(c.AllowedOrigins, " ") != strings.Join(want, " ") {
		t.Errorf("origins = %v, want %v", c.AllowedOrigins, want)
	}
	demo := c.Auth.Clients[0]
	for _, u := range []string{"http://localhost:9999/demo/callback", "http://127.0.0.1:9999/demo/callback"} {
		if !slices.Contains(demo.RedirectURIs, u) {
			t.Errorf("the demo client lacks %s: %v", u, demo.RedirectURIs)
		}
	}
	for _, u := range []string{"http://localhost:9999/demo/", "http://127.0.0.1:9999/demo/"} {
		if !slices.Contains(demo.PostLogoutRedirectURIs, u) {
			t.Errorf("the demo client lacks the post-logout URI %s: %v", u, demo.PostLogoutRedirectURIs)
		}
	}

	// The developer's publicURL wins over the listen address, and has no alias added.
	c = &Config{PublicURL: "https://dev.example.test"}
	MergeDevFixtures(c, "http://localhost:9999")
	if c.PublicURL != "https://dev.example.test" {
		t.Errorf("the developer's publicURL became %q", c.PublicURL)
	}
}

// The dev server's issuer is a host name, so passkeys are offered in `make run` (D74): WebAuthn takes no
// IP address as relying party ID, and passkeys on an IP-address issuer are switched off.
func TestDevFixtures_IssuerIsLocalhost_PasskeysOn(t *testing.T) {
	c := &Config{}
	MergeDevFixtures(c, DevPublicURL)
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(c.Auth.Issuer)
	if err != nil || u.Hostname() != "localhost" || u.Scheme != "http" || u.Port() != "8080" {
		t.Fatalf("the dev issuer is %q, want http://localhost:8080", c.Auth.Issuer)
	}
	if net.ParseIP(u.Hostname()) != nil || !c.Auth.Passkeys.On() {
		t.Errorf("passkeys in the dev configuration: on %v, issuer %s", c.Auth.Passkeys.On(), c.Auth.Issuer)
	}
}

// platform.ParseProxyTrust skips an entry it cannot read; such an entry must stop the configuration
// instead, or the ingress silently goes untrusted and all its clients share one rate limit.
func TestValidate_TrustedProxiesMustBeAddressesOrCIDRs(t *testing.T) {
	good := &Config{TrustedProxies: []string{"10.0.0.0/8", "192.168.1.7", "fd00::/8", "::1", " 172.16.0.0/12 "}}
	good.ApplyDefaults()
	if err := good.Validate(); err != nil {
		t.Fatalf("valid proxies refused: %v", err)
	}
	for _, bad := range []string{"10.0.0.0/33", "10.0.0", "ingress.example", "10.0.0.0/8,10.1.0.0/16", ""} {
		c := &Config{TrustedProxies: []string{bad}}
		c.ApplyDefaults()
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "trustedProxies") {
			t.Errorf("trustedProxies %q: %v, want an error naming trustedProxies", bad, err)
		}
	}
}

// The dev server turns rate limiting off unless the developer's file configures it.
func TestMergeDevFixtures_KeepsAConfiguredRateLimit(t *testing.T) {
	five := 5
	c := &Config{Forms: Forms{RateLimitPerMinute: &five}}
	MergeDevFixtures(c, DevPublicURL)
	if got := c.Forms.RateLimit(); got != 5 {
		t.Errorf("configured rate limit 5 became %d", got)
	}
}

// The dev server serves the console (D65) unless the developer's file turns it off; production does not
// unless configured.
func TestMergeDevFixtures_ConsoleOnUnlessTurnedOff(t *testing.T) {
	c := &Config{}
	MergeDevFixtures(c, DevPublicURL)
	if !c.Auth.Console.On() {
		t.Error("the dev server's console is off")
	}
	off := false
	c = &Config{Auth: Auth{Console: AuthConsole{Enabled: &off}}}
	MergeDevFixtures(c, DevPublicURL)
	if c.Auth.Console.On() {
		t.Error("the developer's enabled: false was overridden")
	}
	prod, err := Parse([]byte("publicURL: https://id.example.com\n"))
	if err != nil || prod.Auth.Console.On() {
		t.Errorf("a configuration without auth.console serves it: %v", err)
	}
	on, err := Parse([]byte("publicURL: https://id.example.com\nauth:\n  console:\n    enabled: true\n"))
	if err != nil || !on.Auth.Console.On() {
		t.Errorf("auth.console.enabled: true: %v", err)
	}
}

func TestParse_RefusesControlCharactersByPath(t *testing.T) {
	for doc, want := range map[string]string{
		`publicURL: "\x7f"`:                          `publicURL: a value holds the control character U+007F`,
		`allowedOrigins: [ok, "\u0080"]`:             `allowedOrigins[1]: a value holds the control character U+0080`,
		`auth: {clients: [{name: "Web\x01App"}]}`:    `auth.clients[0].name: a value holds the control character U+0001`,
		`health: {checks: {"x\x1b": {timeout: 1s}}}`: `health.checks: a key holds the control character U+001B`,
		`health: {checks: {"\uFFFF": {}}}`:           `health.checks: a key holds the control character U+FFFF`,
	} {
		_, err := Parse([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%s) = %v, want an error containing %q", doc, err, want)
		}
	}
	// Tabs and line breaks are text, not control: a folded description keeps loading.
	if _, err := Parse([]byte("auth: {clients: [{clientID: web, name: \"Web\\tApp\\n\"}]}")); err != nil {
		t.Fatalf("a tab and a newline were refused: %v", err)
	}
}
