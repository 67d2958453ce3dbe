package forms

import (
	"strings"
)

// originMatcher decides whether a browser Origin may submit the forms. It is built once per
// configuration (see Service.live), so the per-request cost is one map lookup, plus a suffix check per
// wildcard pattern.
type originMatcher struct {
	exact map[string]struct{}
	wild  []wildcardOrigin
}

// wildcardOrigin is https://*.example.com[:port]: any subdomain (at any depth) of example.com.
type wildcardOrigin struct {
	scheme string // "https://"
	suffix string // ".example.com"
	port   string // "" or ":8443"
}

// newOriginMatcher compiles the configured patterns (validated by the config package).
func newOriginMatcher(patterns []string) *originMatcher {
	m := &originMatcher{exact: make(map[string]struct{}, len(patterns))}
	for _, p := range patterns {
		scheme, rest, ok := strings.Cut(p, "://")
		if !ok {
			continue
		}
		host, port := splitPort(rest)
		if (scheme == "https" && port == ":443") || (scheme == "http" && port == ":80") {
			port = "" // browsers omit the default port in Origin
		}
		if sub, ok := strings.CutPrefix(host, "*."); ok {
			m.wild = append(m.wild, wildcardOrigin{scheme: scheme + "://", suffix: "." + sub, port: port})
			continue
		}
		m.exact[scheme+"://"+host+port] = struct{}{}
	}
	return m
}

// allowed reports whether origin (the raw header) matches. An absent Origin, "null" and anything that is
// not a plain scheme://host[:port] are refused.
func (m *originMatcher) allowed(origin []byte) bool {
	if len(origin) == 0 {
		return false
	}
	if _, ok := m.exact[string(origin)]; ok {
		return true
	}
	for _, w := range m.wild {
		if w.match(string(origin)) {
			return true
		}
	}
	return false
}

func (w wildcardOrigin) match(origin string) bool {
	rest, ok := strings.CutPrefix(origin, w.scheme)
	if !ok {
		return false
	}
	host, port := splitPort(rest)
	if port != w.port {
		return false
	}
	sub, ok := strings.CutSuffix(host, w.suffix)
	if !ok || sub == "" {
		return false
	}
	for _, label := range strings.Split(sub, ".") {
		if !validLabel(label) {
			return false
		}
	}
	return true
}

// validLabel accepts what a browser puts in an Origin host: lower-case letters, digits and inner hyphens.
func validLabel(l string) bool {
	if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// splitPort splits "host:port" into "host" and ":port"; IPv6 literals keep their brackets.
func splitPort(hostport string) (host, port string) {
	i := strings.LastIndexByte(hostport, ':')
	if i < 0 || strings.IndexByte(hostport[i:], ']') >= 0 {
		return hostport, ""
	}
	return hostport[:i], hostport[i:]
}
