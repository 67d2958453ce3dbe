// Package page renders the hosted sign-in pages: server-side HTML that works without JavaScript, one
// inline stylesheet allowed by its hash in the Content-Security-Policy (no 'unsafe-inline'), labels and
// errors tied to their fields for screen readers.
package page

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"strings"
)

//go:embed page.html
var pageHTML string

//go:embed page.css
var pageCSS string

//go:embed passkeys.html
var passkeysHTML string

//go:embed brand.html
var brandHTML string

// Renderer renders the pages.
type Renderer struct {
	tmpl      map[string]*template.Template // by language (Languages)
	styleHash string
}

// New parses the templates, once for each language (their t translates into it).
func New() *Renderer {
	css := template.CSS(pageCSS)
	t := template.Must(template.New("page").Funcs(template.FuncMap{"css": func() template.CSS { return css }, "head": head}).
		Funcs(passkeyFuncs).Funcs(translateFuncs("en")).Parse(pageHTML))
	for _, src := range []string{passkeysHTML, secondStepHTML, journeyHTML, brandHTML, directoryHTML} {
		template.Must(t.Parse(src))
	}
	return &Renderer{tmpl: perLanguage(t), styleHash: hashSource(pageCSS)}
}

// perLanguage clones t (not executed yet) for each language, its t translating into it.
func perLanguage(t *template.Template) map[string]*template.Template {
	m := map[string]*template.Template{}
	for _, lang := range Languages {
		m[lang] = template.Must(t.Clone()).Funcs(translateFuncs(lang))
	}
	return m
}

// translateFuncs are the templates' t for lang: {{t "Sign in"}}, {{t .Error}} (a message from a
// handler), {{t "Remove %s" .Name}} (a pattern with its arguments, strings).
func translateFuncs(lang string) template.FuncMap {
	return template.FuncMap{"t": func(s string, args ...any) string {
		if len(args) > 0 {
			if tr, ok := catalogs[lang][s]; ok {
				s = tr
			}
			return fmt.Sprintf(s, args...)
		}
		return translate(lang, s)
	}}
}

// SignIn is the data of the sign-in page.
type SignIn struct {
	Action     string // the form's target: /oauth2/authorize with the authorization request's query
	CSRF       string
	ClientName string
	Email      string
	Error      string // shown above the sign-in form: wrong credentials, throttled, expired form
	Notice     string // a status above the sign-in form (after a sign-up: "we sent you a message")
	SelfSignup bool
	SignupOpen bool
	SignupName string
	// SignupEmail and the field errors of the sign-up form (keys: name, email, password).
	SignupEmail string
	SignupError string
	Fields      map[string]string
	// Passkey offers signing in with a passkey (nil: not offered).
	Passkey *PasskeySignIn
	// Connectors are the upstream providers the page offers, each a button (D58).
	Connectors []Connector
	// ForgotURL is the "Forgot password?" link (host-relative; "" for none).
	ForgotURL string
	// ResendAction, when set, offers to send the verification link to Email again (a client that
	// requires a verified address refused the sign-in); ResendClient is the client it returns to.
	ResendAction string
	ResendClient string
	// Look is set by the renderer (WithLook).
	Look Look
}

// Connector is an upstream provider's button: its ID, the name it shows, and where it leads (the
// authorization request with connector_id: a link, not a form, so that the page's CSP form-action
// need not name every upstream).
type Connector struct {
	ID, Name, URL string
	// Brand gives the button a provider's own look ("github"); "" is the page's secondary button.
	Brand string
}

// Error is the data of an error page (an authorization request that cannot be redirected back).
type Error struct {
	Title   string
	Message string
	// Developer is shown by the dev server only: what the request sent and what is registered.
	Developer []string
	Look      Look // set by the renderer
}

// Logout is the data of the sign-out confirmation.
type Logout struct {
	Action string
	CSRF   string
	Hidden map[string]string
	Look   Look // set by the renderer
}

// Security headers for every page. formActions are the origins a form on the page may submit to or be
// redirected to afterwards (browsers apply form-action to the redirect too).
// A page with a script (nonce not empty) allows that one script element and its requests to this origin.
func (r *Renderer) headers(w http.ResponseWriter, formActions []string, nonce string, b Brand) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	script := ""
	if nonce != "" {
		script = "; script-src 'nonce-" + nonce + "'; connect-src 'self'"
	}
	img, style, font := b.csp()
	if css := b.css(); css != "" {
		style = " " + hashSource(css) + style
	}
	if font != "" {
		font = "; font-src " + font
	}
	h.Set("Content-Security-Policy", "default-src 'none'; style-src "+r.styleHash+style+script+"; img-src 'self' data:"+img+font+"; form-action 'self'"+
		prefixSpace(formActions)+"; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: under no-referrer browsers send "Origin: null" with the page's own
	// form posts, and the CSRF check wants the real origin. Other sites (the client after the redirect)
	// still get no Referer, so the authorization request's URL does not leak.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
}

func prefixSpace(list []string) string {
	var b strings.Builder
	for _, s := range list {
		if s == "" || strings.ContainsAny(s, " ;,'\"") {
			continue
		}
		b.WriteByte(' ')
		b.WriteString(s)
	}
	return b.String()
}

func (r *Renderer) render(w http.ResponseWriter, status int, name string, data any, formActions []string) {
	r.renderScripted(w, status, name, data, formActions, "")
}

// renderScripted renders a page whose data carries nonce for its script element ("" for none), in the
// look w carries (the data's Look is set from it).
func (r *Renderer) renderScripted(w http.ResponseWriter, status int, name string, data any, formActions []string, nonce string) {
	look := LookOf(w)
	tmpl := r.tmpl[look.Lang]
	if tmpl == nil {
		tmpl = r.tmpl[Languages[0]]
	}
	var buf bytes.Buffer
	if err := tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		// The templates are fixed and their data plain; this is a programming error.
		http.Error(w, "page error", http.StatusInternalServerError)
		return
	}
	r.headers(w, formActions, nonce, look.Brand)
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// RenderSignIn writes the sign-in page.
func (r *Renderer) RenderSignIn(w http.ResponseWriter, status int, d SignIn, formActions []string) {
	if d.Fields == nil {
		d.Fields = map[string]string{}
	}
	d.Look = LookOf(w)
	if d.ClientName == "" {
		d.ClientName = translate(d.Look.Lang, "the application")
	}
	if d.Passkey != nil {
		nonce := newNonce()
		r.renderScripted(w, status, "signin", signInPage{d, nonce}, formActions, nonce)
		return
	}
	r.render(w, status, "signin", signInPage{SignIn: d}, formActions)
}

// RenderError writes an error page.
func (r *Renderer) RenderError(w http.ResponseWriter, status int, d Error) {
	d.Look = LookOf(w)
	r.render(w, status, "error", d, nil)
}

// RenderLogout writes the sign-out confirmation.
func (r *Renderer) RenderLogout(w http.ResponseWriter, d Logout, formActions []string) {
	d.Look = LookOf(w)
	r.render(w, http.StatusOK, "logout", d, formActions)
}

// RenderSignedOut writes the page shown after signing out without a return address.
func (r *Renderer) RenderSignedOut(w http.ResponseWriter) {
	r.render(w, http.StatusOK, "signedout", Error{Look: LookOf(w)}, nil)
}
