// Package page renders the forms' own HTML pages: the answers to plain HTML form posts (thank you, the
// field errors, a refusal) and the confirmation and unsubscribe pages of the waitlist's double opt-in.
// Server-side HTML that works without JavaScript, one inline stylesheet allowed by its hash in the
// Content-Security-Policy, light and dark, one column that reads at 320 px.
package page

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"html/template"
)

//go:embed page.html
var pageHTML string

//go:embed page.css
var pageCSS string

var (
	tmpl = template.Must(template.New("page").Funcs(template.FuncMap{
		"css": func() template.CSS { return template.CSS(pageCSS) },
	}).Parse(pageHTML))
	styleHash = func() string {
		h := sha256.Sum256([]byte(pageCSS))
		return "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"
	}()
)

// Message is a page of paragraphs, with an optional form of one button (a confirmation).
type Message struct {
	Site  string // the site's name, above the title
	Title string
	Text  []string
	// Action, Hidden and Button make the page a form: POST Action with the hidden fields.
	Action string
	Hidden map[string]string
	Button string
	// Back links back to the site.
	Back string
}

// FieldError is one line of the error page.
type FieldError struct {
	Label, Message string
	Href           string // the field on the form's page, when known
}

// Errors is the page listing a form post's field errors.
type Errors struct {
	Site   string
	Title  string
	Text   []string
	Errors []FieldError
	Back   string
}

// RenderMessage returns the HTML of a message page.
func RenderMessage(m Message) []byte { return render("message", m) }

// RenderErrors returns the HTML of an error page.
func RenderErrors(e Errors) []byte { return render("errors", e) }

func render(name string, data any) []byte {
	var b bytes.Buffer
	if err := tmpl.ExecuteTemplate(&b, name, data); err != nil {
		// The templates are fixed and their data plain strings: this is a programming error.
		panic("page: " + err.Error())
	}
	return b.Bytes()
}

// Headers are the security headers of every page, as name/value pairs. No script runs on them; the
// one stylesheet is allowed by its hash; their own forms post only to the forms service; nothing may
// frame them; and no Referer leaves them (a confirmation link's token stays out of the site's logs).
func Headers() [][2]string {
	return [][2]string{
		{"Content-Type", "text/html; charset=utf-8"},
		{"Content-Security-Policy", "default-src 'none'; style-src " + styleHash + "; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"},
		{"X-Frame-Options", "DENY"},
		{"X-Content-Type-Options", "nosniff"},
		{"Referrer-Policy", "no-referrer"},
		{"Cache-Control", "no-store"},
	}
}
