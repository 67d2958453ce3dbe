package config

import (
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Dev-server fixtures, always the same so that docs and tests can rely on them (docs/architecture.md, D5).
const (
	DevClientID = "demo"
	DevEmail    = "demo@example.com"
	DevPassword = "demo-password"
)

// DevPublicURL is the dev server's public URL (its issuer) on the default address. It is localhost, not
// 127.0.0.1: a browser treats both as a secure context, but only a host name can be WebAuthn's relying
// party ID, so passkeys work on it (D74).
const DevPublicURL = "http://localhost:8080"

// DevFixtures returns the dev server's fixed configuration.
func DevFixtures() *Config {
	zero := 0
	off, on := false, true
	return &Config{
		PublicURL:      DevPublicURL,
		AllowedOrigins: []string{"http://localhost:8080", "http://127.0.0.1:8080"},
		Forms:          Forms{RateLimitPerMinute: &zero},
		Auth: Auth{AskToReplaceWeakPasswords: &off, Console: AuthConsole{Enabled: &on}, Clients: []OAuthClient{{
			ClientID:               DevClientID,
			RedirectURIs:           []string{"http://localhost:8080/demo/callback", "http://127.0.0.1:8080/demo/callback"},
			PostLogoutRedirectURIs: []string{"http://localhost:8080/demo/", "http://127.0.0.1:8080/demo/"},
			Scopes:                 []string{"openid", "profile", "email", "offline_access"},
		}}},
	}
}

// MergeDevFixtures adds the dev fixtures to c without taking anything away: the developer's origins and
// clients come first, the fixtures' are added when missing, and unset scalars take the fixtures' values.
// publicURL is where the dev server listens (http://localhost:8080 unless ADDR says otherwise).
func MergeDevFixtures(c *Config, publicURL string) {
	dev := DevFixtures()
	if c.PublicURL == "" {
		c.PublicURL = publicURL
	}
	// The fixtures name port 8080; a dev server on another address (ADDR, or a test's free port) also
	// accepts its own origin so that its demo page works, and on localhost also 127.0.0.1 of its port,
	// as the fixtures do for 8080.
	demo := &dev.Auth.Clients[0]
	for _, u := range []string{publicURL, loopbackAlias(publicURL)} {
		if u == "" {
			continue
		}
		dev.AllowedOrigins = appendMissing(dev.AllowedOrigins, u)
		demo.RedirectURIs = appendMissing(demo.RedirectURIs, u+"/demo/callback")
		demo.PostLogoutRedirectURIs = appendMissing(demo.PostLogoutRedirectURIs, u+"/demo/")
	}
	for _, o := range dev.AllowedOrigins {
		c.AllowedOrigins = appendMissing(c.AllowedOrigins, o)
	}
	if c.Forms.RateLimitPerMinute == nil {
		c.Forms.RateLimitPerMinute = dev.Forms.RateLimitPerMinute
	}
	if c.Auth.AskToReplaceWeakPasswords == nil {
		c.Auth.AskToReplaceWeakPasswords = dev.Auth.AskToReplaceWeakPasswords
	}
	if c.Auth.Console.Enabled == nil { // the console at /console/, the dev user its admin (D65)
		c.Auth.Console.Enabled = dev.Auth.Console.Enabled
	}
	for _, cl := range dev.Auth.Clients {
		if !slices.ContainsFunc(c.Auth.Clients, func(x OAuthClient) bool { return x.ClientID == cl.ClientID }) {
			c.Auth.Clients = append(c.Auth.Clients, cl)
		}
	}
}

// loopbackAlias is http://127.0.0.1:<port> for http://localhost:<port>, the other name the dev server
// answers to there; "" for any other URL.
func loopbackAlias(u string) string {
	rest, ok := strings.CutPrefix(u, "http://localhost:")
	if !ok || strings.ContainsAny(rest, "/?#") {
		return ""
	}
	return "http://127.0.0.1:" + rest
}

func appendMissing(list []string, v string) []string {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

// DevSelfSignup turns sign-up on for the dev server unless the developer's file (path, already read
// without error; "" for none) sets auth.selfSignup itself: a newcomer's `make run` offers "Create an
// account", and an app that wants it off tries that in dev too. The setting is a plain bool, so whether
// the file set it is read from the file.
func DevSelfSignup(c *Config, path string) {
	if !fileSets(path, "auth", "selfSignup") {
		c.Auth.SelfSignup = true
	}
}

// fileSets reports whether the YAML file at path has the key under the keys before it.
func fileSets(path string, keys ...string) bool {
	if path == "" {
		return false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var doc any
	if yaml.Unmarshal(data, &doc) != nil {
		return false
	}
	for _, k := range keys {
		m, ok := doc.(map[string]any)
		if !ok {
			return false
		}
		if doc, ok = m[k]; !ok {
			return false
		}
	}
	return true
}
