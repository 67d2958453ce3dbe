package forms

import "testing"

func TestOriginMatcher(t *testing.T) {
	m := newOriginMatcher([]string{
		"https://www.example.com",
		"http://localhost:3000",
		"https://*.example.org",
		"https://*.example.net:8443",
		"https://default-port.example:443",
	})
	allowed := []string{
		"https://www.example.com",
		"http://localhost:3000",
		"https://a.example.org",
		"https://a.b.example.org",
		"https://x-1.example.org",
		"https://a.example.net:8443",
		"https://default-port.example",
	}
	refused := []string{
		"",
		"null",
		"https://example.com",
		"http://www.example.com",          // scheme differs
		"https://www.example.com:443",     // browsers never send the default port; exact match only
		"https://www.example.com/",        // not an origin
		"https://www.example.com.evil.io", // suffix trick
		"https://wwwexample.com",
		"http://localhost:3001",
		"http://localhost",
		"https://example.org",       // the wildcard is for subdomains only
		"http://a.example.org",      // https only
		"https://a.example.org:444", // port differs
		"https://evilexample.org",
		"https://a..example.org",
		"https://-a.example.org",
		"https://A.example.org", // browsers lower-case hosts
		"https://a.example.org.evil.io",
		"https://a.example.net",      // port required
		"https://a.example.net:8444", //
		"https://a.example.org/path",
		"https://user@a.example.org",
		"HTTPS://www.example.com",
	}
	for _, o := range allowed {
		if !m.allowed([]byte(o)) {
			t.Errorf("origin %q refused, want allowed", o)
		}
	}
	for _, o := range refused {
		if m.allowed([]byte(o)) {
			t.Errorf("origin %q allowed, want refused", o)
		}
	}
}
