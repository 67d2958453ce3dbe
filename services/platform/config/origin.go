package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// ValidateOriginPattern accepts an exact origin scheme://host[:port] (no path, query, user or fragment)
// or a subdomain wildcard https://*.example.com[:port].
func ValidateOriginPattern(p string) error {
	u, err := url.Parse(p)
	if err != nil {
		return fmt.Errorf("origin %q: %v", p, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("origin %q: scheme must be http or https", p)
	}
	if u.Opaque != "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(p, "/") {
		return fmt.Errorf("origin %q: must be scheme://host[:port] with nothing after it", p)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("origin %q: host is empty", p)
	}
	if port := u.Port(); port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("origin %q: bad port", p)
		}
	}
	if p != strings.ToLower(p) {
		return fmt.Errorf("origin %q: must be lower case, as browsers send it", p)
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		if u.Scheme != "https" {
			return fmt.Errorf("origin %q: wildcards are allowed only for https", p)
		}
		if !strings.Contains(rest, ".") || strings.Contains(rest, "*") {
			return fmt.Errorf("origin %q: a wildcard needs a registrable domain after it, like https://*.example.com", p)
		}
		return nil
	}
	if strings.Contains(host, "*") {
		return fmt.Errorf("origin %q: '*' is allowed only as the first label, like https://*.example.com", p)
	}
	if net.ParseIP(host) == nil && strings.ContainsAny(host, " _") {
		return fmt.Errorf("origin %q: bad host", p)
	}
	return nil
}
