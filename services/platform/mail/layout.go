package mail

import (
	"bytes"
	_ "embed"
	"fmt"
	htmltemplate "html/template"
	"net/url"
	"regexp"
	"strings"
	texttemplate "text/template"

	"github.com/formsservice/formsservice/services/platform/wcag"
)

// The one layout every transactional mail shares: the HTML part (lang and dir set, light and dark
// colours, one centred column that reads at 320 px, no external resource needed: the logo is optional
// and has the product's name as its alternative text) and its plain-text twin.
var (
	//go:embed layout.html
	layoutHTMLSrc string
	//go:embed layout.txt
	layoutTextSrc string

	layoutHTML = htmltemplate.Must(htmltemplate.New("layout.html").Parse(layoutHTMLSrc))
	layoutText = texttemplate.Must(texttemplate.New("layout.txt").Parse(layoutTextSrc))
)

// Brand is the product a mail speaks for.
type Brand struct {
	// Product is the product's name: in the header, the footer, and the logo's alternative text.
	Product string
	// LogoURL, optional, is an https URL of the logo, shown 32 px high.
	LogoURL string
	// Accent is the colour of buttons and links, "#rrggbb"; default DefaultAccent. Button text is white
	// or black, whichever contrasts more; links fall back to the text colour where the accent would
	// be under WCAG's 4.5:1 on the background.
	Accent string
}

// DefaultAccent is the accent of a Brand without one (the hosted sign-in page's blue).
const DefaultAccent = "#1f5fd6"

var hexColour = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)

// Validate reports what is wrong with b.
func (b Brand) Validate() error {
	if strings.TrimSpace(b.Product) == "" {
		return fmt.Errorf("brand: the product name is required")
	}
	if b.Accent != "" && !hexColour.MatchString(b.Accent) {
		return fmt.Errorf("brand: accent %q: want #rrggbb", b.Accent)
	}
	if b.LogoURL != "" {
		if u, err := url.Parse(b.LogoURL); err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("brand: logo URL %q: want an https URL", b.LogoURL)
		}
	}
	return nil
}

// Content is one kind of mail (a verification, a password reset, a confirmation): its subject and
// text as text/template, its HTML as html/template. Each is executed with a View, so a template reads
// its data as {{.Data.Link}} and the product as {{.Brand.Product}}; HTML writes a call-to-action as
// {{.Button .Data.Link "Confirm my address"}}.
type Content struct {
	name    string
	subject *texttemplate.Template
	text    *texttemplate.Template
	html    *htmltemplate.Template
}

// NewContent parses a content's three templates.
func NewContent(name, subject, text, html string) (*Content, error) {
	c := &Content{name: name}
	var err error
	if c.subject, err = texttemplate.New(name + ".subject").Option("missingkey=error").Parse(subject); err != nil {
		return nil, fmt.Errorf("mail content %s: %w", name, err)
	}
	if c.text, err = texttemplate.New(name + ".txt").Option("missingkey=error").Parse(text); err != nil {
		return nil, fmt.Errorf("mail content %s: %w", name, err)
	}
	if c.html, err = htmltemplate.New(name + ".html").Option("missingkey=error").Parse(html); err != nil {
		return nil, fmt.Errorf("mail content %s: %w", name, err)
	}
	return c, nil
}

// MustContent is NewContent for templates fixed in the program: it panics on a parse error.
func MustContent(name, subject, text, html string) *Content {
	c, err := NewContent(name, subject, text, html)
	if err != nil {
		panic(err)
	}
	return c
}

// View is what a content's templates see.
type View struct {
	Brand Brand
	// Lang is the mail's language (a BCP 47 tag such as "en" or "de").
	Lang string
	// Data is the caller's data.
	Data   any
	colors colors
}

// Button is a call-to-action link styled as a button in the brand's accent, for the HTML template.
// A URL that is not http(s) becomes an inert "#". The text part should give the URL itself.
func (v View) Button(href, label string) htmltemplate.HTML {
	if u, err := url.Parse(href); err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		href = "#"
	}
	esc := htmltemplate.HTMLEscapeString
	return htmltemplate.HTML(`<p style="margin:24px 0"><a class="button" href="` + esc(href) + `" style="display:inline-block;padding:12px 20px;border-radius:6px;background:` +
		string(v.colors.Accent) + `;color:` + string(v.colors.AccentFG) + `;font-weight:600;text-decoration:none">` + esc(label) + `</a></p>`)
}

// Render executes the content with data and puts it into the layout: the returned Message has Subject,
// Text and HTML set; the caller adds the recipients, the ID and the rest. lang defaults to "en".
func (c *Content) Render(lang string, b Brand, data any) (Message, error) {
	if err := b.Validate(); err != nil {
		return Message{}, err
	}
	if !validLang(lang) {
		lang = "en"
	}
	v := View{Brand: b, Lang: lang, Data: data, colors: colorsFor(b.Accent)}
	var subject, text, html bytes.Buffer
	if err := c.subject.Execute(&subject, v); err != nil {
		return Message{}, fmt.Errorf("mail content %s: %w", c.name, err)
	}
	if err := c.text.Execute(&text, v); err != nil {
		return Message{}, fmt.Errorf("mail content %s: %w", c.name, err)
	}
	if err := c.html.Execute(&html, v); err != nil {
		return Message{}, fmt.Errorf("mail content %s: %w", c.name, err)
	}
	page := struct {
		colors
		Lang, Dir, Subject, Product, LogoURL string
		Body                                 htmltemplate.HTML
	}{v.colors, lang, dir(lang), oneLine(subject.String()), b.Product, b.LogoURL, htmltemplate.HTML(html.String())}
	var outHTML, outText bytes.Buffer
	if err := layoutHTML.Execute(&outHTML, page); err != nil {
		return Message{}, fmt.Errorf("mail layout: %w", err)
	}
	if err := layoutText.Execute(&outText, struct{ Product, Body string }{b.Product, strings.TrimSpace(text.String())}); err != nil {
		return Message{}, fmt.Errorf("mail layout: %w", err)
	}
	return Message{Subject: strings.TrimSpace(page.Subject), Text: outText.String(), HTML: outHTML.String()}, nil
}

var langTag = regexp.MustCompile(`^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$`)

func validLang(s string) bool { return len(s) <= 35 && langTag.MatchString(s) }

// dir is "rtl" for the right-to-left scripts' languages.
func dir(lang string) string {
	base, _, _ := strings.Cut(strings.ToLower(lang), "-")
	switch base {
	case "ar", "he", "fa", "ur", "yi", "ps", "sd", "ug", "dv":
		return "rtl"
	}
	return "ltr"
}

// colors are the accent-derived colours, chosen for WCAG 2.2 AA contrast (4.5:1 for text).
type colors struct {
	Accent, AccentFG    htmltemplate.CSS
	LinkLight, LinkDark htmltemplate.CSS
}

// The layout's backgrounds and text colours (layout.html).
const (
	cardLight = "#ffffff"
	cardDark  = "#1f2226"
	textLight = "#1b1d21"
	textDark  = "#eceef1"
)

func colorsFor(accent string) colors {
	if !hexColour.MatchString(accent) {
		accent = DefaultAccent
	}
	accent = strings.ToLower(accent)
	c := colors{Accent: htmltemplate.CSS(accent)}
	// The button's text: white or black, whichever contrasts more with the accent; for any accent one
	// of them reaches 4.58:1.
	if wcag.Contrast(accent, "#ffffff") >= wcag.Contrast(accent, "#000000") {
		c.AccentFG = "#ffffff"
	} else {
		c.AccentFG = "#000000"
	}
	// Links in the text: the accent where it is readable on the card, else the text colour (links are
	// underlined, so they stay recognisable).
	c.LinkLight, c.LinkDark = textLight, textDark
	if wcag.Contrast(accent, cardLight) >= 4.5 {
		c.LinkLight = htmltemplate.CSS(accent)
	}
	if wcag.Contrast(accent, cardDark) >= 4.5 {
		c.LinkDark = htmltemplate.CSS(accent)
	}
	return c
}
