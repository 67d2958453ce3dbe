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
	// BotCheck, when set, makes every submission from the origin carry a CAPTCHA token that the forms
	// verify with the provider before storing it.
	BotCheck *BotCheck `json:"botCheck,omitempty"`
	// ConsentVersion names the consent text the site's waitlist form shows ("2026-01 newsletter"); it
	// is kept with every sign-up from the site, so that the consent can be shown later (GDPR Art. 7(1)).
	ConsentVersion string `json:"consentVersion,omitempty"`
}

// BotCheck is a site's CAPTCHA provider (docs/forms.md, "Bot checks").
type BotCheck struct {
	// Provider is turnstile (Cloudflare Turnstile), hcaptcha or recaptcha (Google reCAPTCHA v2 or v3).
	Provider string `json:"provider"`
	// SecretFile holds the provider's secret key for the site (a mounted Secret), read when the
	// configuration is loaded; a missing or empty file stops the service at start-up.
	SecretFile string `json:"secretFile"`
	// VerifyURL is the provider's siteverify endpoint; default the provider's own. Tests and air-gapped
	// installations point it at theirs.
	VerifyURL string `json:"verifyURL,omitempty"`
	// MinScore is the lowest reCAPTCHA v3 score taken (0 to 1; default 0.5). Answers without a score
	// (v2, Turnstile, hCaptcha) need only the provider's success.
	MinScore *float64 `json:"minScore,omitempty"`
	// Action, when set, is the only action taken (turnstile and recaptcha: the name the page gives the
	// check, reCAPTCHA v3's grecaptcha.execute action or Turnstile's data-action); default any.
	Action string `json:"action,omitempty"`
}

// DefaultMinScore is the reCAPTCHA v3 score taken when minScore is not set (Google's suggestion).
const DefaultMinScore = 0.5

// Score returns the effective minimum score.
func (b BotCheck) Score() float64 {
	if b.MinScore == nil {
		return DefaultMinScore
	}
	return *b.MinScore
}

func (b BotCheck) validate(at string) []error {
	var errs []error
	switch b.Provider {
	case "turnstile", "hcaptcha", "recaptcha":
	default:
		errs = append(errs, fmt.Errorf("%s.provider %q: want turnstile, hcaptcha or recaptcha", at, b.Provider))
	}
	if b.SecretFile == "" || strings.TrimSpace(b.SecretFile) != b.SecretFile || strings.ContainsRune(b.SecretFile, 0) {
		errs = append(errs, fmt.Errorf("%s.secretFile: required, a file name (such as a mounted Secret's) holding the provider's secret key", at))
	}
	if b.VerifyURL != "" {
		if u, err := url.Parse(b.VerifyURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			errs = append(errs, fmt.Errorf("%s.verifyURL %q: want an http(s) URL", at, b.VerifyURL))
		}
	}
	if b.MinScore != nil && (*b.MinScore < 0 || *b.MinScore > 1) {
		errs = append(errs, fmt.Errorf("%s.minScore: between 0 and 1", at))
	}
	if b.Action != "" && (b.Provider == "hcaptcha" || len(b.Action) > 100 || strings.TrimSpace(b.Action) != b.Action) {
		errs = append(errs, fmt.Errorf("%s.action %q: for turnstile or recaptcha only, up to 100 characters, no surrounding spaces", at, b.Action))
	}
	return errs
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
		if len([]rune(s.ConsentVersion)) > maxSiteName {
			errs = append(errs, fmt.Errorf("%s.consentVersion: at most %d characters", at, maxSiteName))
		}
		if len([]rune(s.Name)) > maxSiteName {
			errs = append(errs, fmt.Errorf("%s.name: at most %d characters", at, maxSiteName))
		}
		if s.BotCheck != nil {
			errs = append(errs, s.BotCheck.validate(at+".botCheck")...)
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
