package forms

import (
	"strings"
	"testing"

	"github.com/formsservice/formsservice/services/platform/config"
)

// FuzzOriginMatcher holds the Origin check to two promises. Against a fixed configuration (exact origins
// and subdomain wildcards): whatever the header says, an origin let in is itself a well-formed exact origin
// (config.ValidateOriginPattern accepts it) and is either configured as it is or a subdomain, at least one
// label deep, of a configured wildcard with the same scheme and port. And for a fuzzed pattern that the
// configuration accepts: the origin it names is let in (a subdomain of it, for a wildcard).
func FuzzOriginMatcher(f *testing.F) {
	for _, seed := range [][2]string{
		{"https://app.example.com", "https://app.example.com"},
		{"https://a.b.example.org", "https://*.example.org"},
		{"https://example.org", "https://*.example.org:8443"},
		{"https://x.example.net:8443", "http://[::1]:8080"},
		{"https://example.com.evil.test", "http://localhost:3000"},
		{"null", "https://*.example.com"},
		{"https://-a.example.org", "http://127.0.0.1"},
		{"https://a..example.org", "https://a.example:443"},
		{"HTTPS://APP.EXAMPLE.COM", "https://*.a.b.c"},
		{"https://app.example.com/", "https://app.example.com/"},
		{"https://app.example.com:443", "https://*.*.example.com"},
		{"http://[::1]:8080", "http://a%2eb.example"},
		{"https://sub.example.org:443", "https://*.example.org:443"},
		{"http://app.example.com:80", "https://app.example.com:80"},
	} {
		f.Add(seed[0], seed[1])
	}
	configured := []string{"https://app.example.com", "http://localhost:3000", "http://[::1]:8080",
		"https://*.example.org", "https://*.example.net:8443"}
	fixed := newOriginMatcher(configured)
	f.Fuzz(func(t *testing.T, origin, pattern string) {
		if fixed.allowed([]byte(origin)) {
			if err := config.ValidateOriginPattern(origin); err != nil || strings.Contains(origin, "*") {
				t.Fatalf("let in %q, which is not a well-formed origin: %v", origin, err)
			}
			if !letInBy(origin, configured) {
				t.Fatalf("let in %q, which no configured origin names", origin)
			}
		}

		if config.ValidateOriginPattern(pattern) != nil {
			return
		}
		m := newOriginMatcher([]string{pattern})
		// Browsers leave the default port out of Origin; so does what is let in.
		named := pattern
		if hasDefaultPort(pattern) {
			named = pattern[:strings.LastIndexByte(pattern, ':')]
		}
		wildcard := strings.Contains(pattern, "://*.")
		switch {
		case wildcard && !m.allowed([]byte(strings.Replace(named, "://*.", "://sub.", 1))):
			t.Fatalf("wildcard %q does not let in its subdomain", pattern)
		case wildcard && m.allowed([]byte(strings.Replace(named, "://*.", "://", 1))):
			t.Fatalf("wildcard %q lets in the bare domain", pattern)
		case !wildcard && !m.allowed([]byte(named)):
			t.Fatalf("configured origin %q is refused (as %q)", pattern, named)
		}
	})
}

// letInBy is the plain reading of the rules: an exact match, or scheme, port and domain suffix of a
// wildcard with at least one label in front.
func letInBy(origin string, patterns []string) bool {
	for _, p := range patterns {
		if p == origin {
			return true
		}
		prefix, domain, ok := strings.Cut(p, "://*.")
		if !ok {
			continue
		}
		host, port := splitPort(domain)
		rest, ok := strings.CutPrefix(origin, prefix+"://")
		if !ok || !strings.HasSuffix(rest, "."+host+port) {
			continue
		}
		sub := strings.TrimSuffix(rest, "."+host+port)
		if sub != "" && !strings.ContainsAny(sub, ":/[]@") {
			return true
		}
	}
	return false
}

func hasDefaultPort(p string) bool {
	return strings.HasPrefix(p, "https://") && strings.HasSuffix(p, ":443") ||
		strings.HasPrefix(p, "http://") && strings.HasSuffix(p, ":80")
}
