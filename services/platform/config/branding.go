package config

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Branding is how the hosted pages (sign-in, second step, the mailed journeys, passkeys, the account
// page) present the product: auth.branding for the platform, oauthClients[].branding to override any
// field for one client's sign-in. Every field is optional; without any the pages look as before.
// The accent colour is never refused for its contrast: the pages derive from it a button fill with at
// least 3:1 and a link colour with at least 4.5:1 against the card in light and dark mode, and a button
// text (black or white) with at least 4.5:1 on the fill (docs/architecture.md D36).
type Branding struct {
	// ProductName is shown at the top of every page and in its title, and is the logo's alternative text.
	ProductName string `json:"productName,omitempty"`
	// LogoURL is an https URL of the logo image (http only on localhost and loopback addresses), shown
	// 40 px high; the pages' Content-Security-Policy allows exactly its origin for images.
	LogoURL string `json:"logoURL,omitempty"`
	// AccentColor is the colour of buttons and links, "#rrggbb".
	AccentColor string `json:"accentColor,omitempty"`
	// StylesheetURL is an https URL of a stylesheet loaded after the pages' own; the pages'
	// Content-Security-Policy allows exactly its origin for styles, images and fonts.
	StylesheetURL string `json:"stylesheetURL,omitempty"`
}

// MaxProductName bounds Branding.ProductName (runes).
const MaxProductName = 80

var accentColor = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)

// Over returns b with the fields o sets replaced (a client's branding over the platform's).
func (b Branding) Over(o *Branding) Branding {
	if o == nil {
		return b
	}
	if o.ProductName != "" {
		b.ProductName = o.ProductName
	}
	if o.LogoURL != "" {
		b.LogoURL = o.LogoURL
	}
	if o.AccentColor != "" {
		b.AccentColor = o.AccentColor
	}
	if o.StylesheetURL != "" {
		b.StylesheetURL = o.StylesheetURL
	}
	return b
}

// validate reports what is wrong with b; at names it in the messages (auth.branding).
func (b Branding) validate(at string) []error {
	var errs []error
	if n := utf8.RuneCountInString(b.ProductName); n > MaxProductName || !utf8.ValidString(b.ProductName) ||
		strings.IndexFunc(b.ProductName, unicode.IsControl) >= 0 || (n > 0 && strings.TrimSpace(b.ProductName) == "") {
		errs = append(errs, fmt.Errorf("%s.productName: at most %d characters of text without control characters", at, MaxProductName))
	}
	if b.AccentColor != "" && !accentColor.MatchString(b.AccentColor) {
		errs = append(errs, fmt.Errorf("%s.accentColor %q: want #rrggbb, like #1f5fd6", at, b.AccentColor))
	}
	for _, f := range []struct{ name, url string }{{"logoURL", b.LogoURL}, {"stylesheetURL", b.StylesheetURL}} {
		if f.url != "" {
			if err := BrandingURL(f.url); err != nil {
				errs = append(errs, fmt.Errorf("%s.%s: %w", at, f.name, err))
			}
		}
	}
	return errs
}

// BrandingURL accepts what a page's Content-Security-Policy can name as it is: an https URL (http only
// on localhost and loopback addresses) with a host, without user info, query or fragment, and without
// the characters that end or separate a CSP source (space, comma, semicolon, quotes).
func BrandingURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "" || u.Opaque != "":
		return fmt.Errorf("%q: want an absolute https URL", s)
	case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#"):
		return fmt.Errorf("%q: no user info, query or fragment", s)
	case strings.ContainsAny(s, " ,;'\"\\<>") || len(s) > 2048:
		return fmt.Errorf("%q: at most 2048 characters, without spaces, commas, semicolons, quotes or angle brackets", s)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && loopbackHost(u.Hostname()):
		return nil
	}
	return fmt.Errorf("%q: must be https (http only for localhost and loopback addresses)", s)
}
