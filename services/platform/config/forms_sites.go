package config

import (
	"fmt"
	"net/url"
	"strings"
)

// Site is what the forms do for one allowed origin beyond the JSON contract: where a plain HTML form
// post goes afterwards (docs/forms.md, "Plain HTML forms").
type Site struct {
	// Origin is one of allowedOrigins, spelled exactly as there (an exact origin or a wildcard pattern).
	Origin string `json:"origin"`
	// Name is the site's or product's name, shown on the forms' own pages.
	Name string `json:"name,omitempty"`
	// ThanksURL is where a form post is sent (303) once it is taken: a path on the posting origin
	// ("/thanks") or an absolute http(s) URL. Without it, and without a _next field, the forms answer
	// with a thank-you page of their own.
	ThanksURL string `json:"thanksURL,omitempty"`
	// ErrorURL, when set, receives a form post whose fields failed (303, the errors in the query as
	// error_<field>=<code>) instead of the forms' own error page: a path on the posting origin or an
	// absolute http(s) URL.
	ErrorURL string `json:"errorURL,omitempty"`
}

// maxSiteName bounds a site's name (it goes into page titles and mail subjects).
const maxSiteName = 80

// validateSites checks forms.sites against the allowed origins: every site names one of them, once.
func validateSites(sites []Site, allowed []string) []error {
	var errs []error
	seen := map[string]bool{}
	for i, s := range sites {
		at := fmt.Sprintf("forms.sites[%d]", i)
		if s.Origin == "" {
			errs = append(errs, fmt.Errorf("%s.origin: required (one of allowedOrigins)", at))
		} else if !contains(allowed, s.Origin) {
			errs = append(errs, fmt.Errorf("%s.origin %q: not in allowedOrigins (spell it exactly as there)", at, s.Origin))
		}
		if seen[s.Origin] {
			errs = append(errs, fmt.Errorf("%s.origin %q: named by two sites", at, s.Origin))
		}
		seen[s.Origin] = true
		if len([]rune(s.Name)) > maxSiteName {
			errs = append(errs, fmt.Errorf("%s.name: at most %d characters", at, maxSiteName))
		}
		for _, u := range []struct{ key, v string }{{"thanksURL", s.ThanksURL}, {"errorURL", s.ErrorURL}} {
			if u.v != "" {
				if err := CheckSiteURL(u.v); err != nil {
					errs = append(errs, fmt.Errorf("%s.%s %q: %w", at, u.key, u.v, err))
				}
			}
		}
	}
	return errs
}

// CheckSiteURL accepts what a site's thanksURL and errorURL may be: a path on the posting origin
// ("/thanks", not "//host") or an absolute http(s) URL with a host, without user information or a
// fragment (the forms add a query; a fragment would hide it from the server that gets it).
func CheckSiteURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL")
	case strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//") && !strings.HasPrefix(s, "/\\"):
		if u.Scheme != "" || u.Host != "" || u.Fragment != "" {
			return fmt.Errorf("a path must have nothing but a path and a query")
		}
		return nil
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return fmt.Errorf("want a path (/thanks) or an http(s) URL")
	case u.User != nil || u.Fragment != "":
		return fmt.Errorf("no user information and no fragment")
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
