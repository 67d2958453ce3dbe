package page

import (
	"bytes"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"html/template"
	"net/http"
	"strings"
)

// The account page (/account) and its steps: the same look as the sign-in page, in a wider column, with
// the stylesheet allowed by a nonce drawn for each answer (the QR code is inline SVG drawn with
// attributes only, so nothing else needs allowing).

//go:embed account.html
var accountHTML string

//go:embed account.css
var accountCSS string

// AccountRenderer renders the account pages.
type AccountRenderer struct{ tmpl map[string]*template.Template } // by language

// NewAccount parses the account templates.
func NewAccount() *AccountRenderer {
	css, acss := template.CSS(pageCSS), template.CSS(accountCSS)
	t := template.Must(template.New("account").Funcs(template.FuncMap{
		"css":        func() template.CSS { return css },
		"accountCSS": func() template.CSS { return acss },
		"brandCSS":   func(l Look) template.CSS { return template.CSS(l.Brand.css()) },
	}).Funcs(translateFuncs("en")).Parse(accountHTML))
	template.Must(t.Parse(brandHTML))
	return &AccountRenderer{tmpl: perLanguage(t)}
}

// Frame is what every account page has.
type Frame struct {
	Title string
	Nonce string // set by the renderer
	CSRF  string
	// Base is the issuer's path ("" at the root): every link and form is below it.
	Base string
	// FormActions are further origins the page's forms lead to (an upstream provider a link form
	// redirects to, D58), for the CSP's form-action.
	FormActions []string
	Look        Look // set by the renderer, from the writer (WithLook)
}

// Account is the data of the account page.
type Account struct {
	Frame
	Email, Name string
	Notice      string // what the last action did (role=status)
	Error       string // a page-wide failure (role=alert)
	// PasswordError and MFAError head their forms; Fields are the errors by field (current_password,
	// new_password, mfa_password).
	PasswordError string
	MFAError      string
	Fields        map[string]string
	MFA           MFAStatus
	// Passkeys: the service offers passkeys, so the page links to their own page (/account/passkeys).
	Passkeys bool
	// Groups the user is in (read-only: an operator sets them with `formsservice users groups`).
	Groups   []string
	Sessions []SessionRow
	Grants   []GrantRow
	// Identities are the linked accounts at upstream providers; Linkable the providers not linked yet
	// (D58).
	Identities []IdentityRow
	Linkable   []Connector
	// VerifyFirst: the address is not verified, so the page offers no way to add a passkey or a second
	// factor, and says why, with the form that sends the link again.
	VerifyFirst *VerifyFirst
}

// OtherSessions says whether a browser other than this one is signed in: the page then offers to sign
// them all out in one step.
func (a Account) OtherSessions() bool {
	for _, s := range a.Sessions {
		if !s.Current {
			return true
		}
	}
	return false
}

// IdentityRow is a linked upstream account on the account page.
type IdentityRow struct {
	Connector, Name, Email, Linked string
}

// VerifyFirst is the notice of the account pages while the account's address is not verified: an
// unverified account gets no credential but its password (docs/security.md "Account pre-hijacking").
type VerifyFirst struct {
	Base, CSRF, Email string
}

// MFAStatus is the second factor as the page shows it.
type MFAStatus struct {
	On           bool
	Since        string
	RecoveryLeft int
}

// SessionRow is one browser signed in.
type SessionRow struct {
	ID        string
	Browser   string // "Firefox on Linux"
	UserAgent string
	SignedIn  string
	LastUsed  string
	Methods   string // "password and a code"
	Current   bool
}

// GrantRow is one app with access.
type GrantRow struct {
	ID       string
	Client   string
	Offline  bool
	SignedIn string
	LastUsed string
}

// Enrol is the data of the authenticator app set-up.
type Enrol struct {
	Frame
	QR           template.HTML // from mfa.QRSVG
	Secret       string        // in groups of four
	SecretSpoken string        // letter by letter, for screen readers
	URI          string
	Error        string
	// Return is the authorization request to go back to afterwards ("" for the account page), and
	// ClientName the application that asked for a second factor.
	Return     string
	ClientName string
	// NeedPassword asks for the password too (the session signed in a while ago); PasswordError is
	// what was wrong with it.
	NeedPassword  bool
	PasswordError string
	// VerifyFirst: the address is not verified, so no secret is drawn and the page says why.
	VerifyFirst *VerifyFirst
}

// Codes is the data of the page that shows new recovery codes, once.
type Codes struct {
	Frame
	Notice        string
	Codes         []string
	ContinueURL   string
	ContinueLabel string
}

// RenderAccount writes the account page.
func (r *AccountRenderer) RenderAccount(w http.ResponseWriter, status int, d Account) {
	if d.Fields == nil {
		d.Fields = map[string]string{}
	}
	d.Title = "Your account"
	r.render(w, status, "account", &d.Frame, &d)
}

// RenderEnrol writes the authenticator app set-up.
func (r *AccountRenderer) RenderEnrol(w http.ResponseWriter, status int, d Enrol) {
	d.Title = "Set up an authenticator app"
	r.render(w, status, "enrol", &d.Frame, &d)
}

// RenderCodes writes new recovery codes.
func (r *AccountRenderer) RenderCodes(w http.ResponseWriter, d Codes) {
	d.Title = "Save your recovery codes"
	r.render(w, http.StatusOK, "codes", &d.Frame, &d)
}

// RenderNotSignedIn writes the page for a browser that declined to sign in to its account.
func (r *AccountRenderer) RenderNotSignedIn(w http.ResponseWriter, base string) {
	d := Frame{Title: "Not signed in", Base: base}
	r.render(w, http.StatusUnauthorized, "notsignedin", &d, &d)
}

// render draws a nonce into frame (which data embeds) and writes the page with its headers.
func (r *AccountRenderer) render(w http.ResponseWriter, status int, name string, frame *Frame, data any) {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	frame.Nonce = base64.RawURLEncoding.EncodeToString(b) // nothing html/template escapes in the attribute
	frame.Look = LookOf(w)
	tmpl := r.tmpl[frame.Look.Lang]
	if tmpl == nil {
		tmpl = r.tmpl[Languages[0]]
	}
	var buf bytes.Buffer
	if err := tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		http.Error(w, "page error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	img, style, font := frame.Look.Brand.csp()
	if font != "" {
		font = "; font-src " + font
	}
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'nonce-"+frame.Nonce+"'"+style+"; img-src 'self' data:"+img+font+"; form-action 'self'"+formActions(frame.FormActions)+"; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// formActions are origins for a CSP source list: each " origin", and nothing that could end the list
// or the directive.
func formActions(origins []string) string {
	var b strings.Builder
	for _, o := range origins {
		if o != "" && !strings.ContainsAny(o, " ;,'\"\r\n") {
			b.WriteString(" " + o)
		}
	}
	return b.String()
}
