package page

import (
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"net/http"
	"net/url"
	"strings"
)

// Look is how the pages of one request look and read: the brand (the platform's, or a client's over
// it) and the language. The handlers put it on the ResponseWriter (WithLook) where the request is first
// read, so the renderers' many callers pass nothing new; a writer without one gets Default.
type Look struct {
	Lang  string // a tag of Languages: "en", "de"
	Brand Brand
}

// Brand is the product the pages speak for (config.Branding, checked at load).
type Brand struct {
	ProductName   string
	LogoURL       string // an https URL (http on loopback) without query or fragment
	AccentColor   string // #rrggbb, or "" for the pages' own blue
	StylesheetURL string
}

// Default is the look of a writer without one.
var Default = Look{Lang: "en"}

type lookWriter struct {
	http.ResponseWriter
	look *Look
	lazy func() Look
}

// WithLook returns w carrying look for the pages rendered to it.
func WithLook(w http.ResponseWriter, look Look) http.ResponseWriter {
	if lw, ok := w.(*lookWriter); ok {
		w = lw.ResponseWriter
	}
	return &lookWriter{ResponseWriter: w, look: &look}
}

// WithLookFunc returns w carrying the look f computes when a page is first rendered to it: most
// requests (tokens, JSON) render none, and do not pay for matching their language.
func WithLookFunc(w http.ResponseWriter, f func() Look) http.ResponseWriter {
	if lw, ok := w.(*lookWriter); ok {
		w = lw.ResponseWriter
	}
	return &lookWriter{ResponseWriter: w, lazy: f}
}

// LookOf is the look w carries (Default if none).
func LookOf(w http.ResponseWriter) Look {
	lw, ok := w.(*lookWriter)
	if !ok {
		return Default
	}
	if lw.look == nil { // one request is one goroutine
		l := lw.lazy()
		lw.look = &l
	}
	return *lw.look
}

// css is the brand's colours as custom properties over page.css's (nil without an accent colour).
func (b Brand) css() string {
	if b.AccentColor == "" {
		return ""
	}
	accent := strings.ToLower(b.AccentColor)
	l, d := deriveAccent(accent, cardLight), deriveAccent(accent, cardDark)
	return ":root{--accent:" + l.Fill + ";--accent-fg:" + l.Text + ";--link:" + l.Link + "}" +
		"@media (prefers-color-scheme:dark){:root{--accent:" + d.Fill + ";--accent-fg:" + d.Text + ";--link:" + d.Link + "}}"
}

// origin is scheme://host[:port] of a URL checked at load ("" for none).
func origin(s string) string {
	u, err := url.Parse(s)
	if s == "" || err != nil || u.Host == "" || strings.ContainsAny(u.Host, " ;,'\"") {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// csp is the Content-Security-Policy's sources for the brand: the logo's and the stylesheet's origins,
// exactly (no wildcard), for images; the stylesheet's for styles and fonts (a stylesheet brings its
// fonts and background images from where it lives).
func (b Brand) csp() (img, style, font string) {
	logo, sheet := origin(b.LogoURL), origin(b.StylesheetURL)
	if logo != "" {
		img = " " + logo
	}
	if sheet != "" {
		if sheet != logo {
			img += " " + sheet
		}
		style, font = " "+sheet, sheet
	}
	return img, style, font
}

// hashSource is a CSP hash source for an inline element's text.
func hashSource(s string) string {
	h := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"
}

// headData is what the pages' head template reads: the title, the look and the brand's style.
type headData struct {
	Title string
	Look  Look
	Style template.CSS
}

func head(l Look, title string) headData {
	return headData{Title: title, Look: l, Style: template.CSS(l.Brand.css())}
}
