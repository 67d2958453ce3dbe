// Package console serves the admin console (docs/console.md, D65): a web app at <issuer>/console/ for
// the people who run a product — its users, the audit trail, the OAuth clients — that signs in through
// the hosted page with the platform's own browser SDK (ServiceAuthClient, as the provider's public
// client realm.ConsoleClientID) and does everything through the admin API (/admin/v1/…), whose bearer
// check decides what the person may do. The package only serves the files: one page, its script and
// style, and the SDK's script-tag build, all embedded, under a CSP that allows nothing from elsewhere.
package console

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"path"
	"strings"

	"github.com/formsservice/formsservice/sdk"
	"github.com/formsservice/formsservice/services/auth/page"
	"github.com/formsservice/formsservice/services/auth/realm"
)

//go:embed assets/index.html assets/console.js assets/console.css
var files embed.FS

// Options are the area's dependencies.
type Options struct {
	Realm *realm.Source
}

// Handler serves the console's page and files (routes.go mounts them).
type Handler struct {
	o      Options
	tmpl   *template.Template
	assets map[string]asset

	Page  http.HandlerFunc // GET /console/ and /console/callback (the redirect URI): the app
	Asset http.HandlerFunc // GET /console/assets/{file}: its script, style and the SDK
}

type asset struct {
	body        []byte
	contentType string
}

// New reads the embedded files once.
func New(o Options) (*Handler, error) {
	h := &Handler{o: o, assets: map[string]asset{}}
	src, err := files.ReadFile("assets/index.html")
	if err != nil {
		return nil, err
	}
	h.tmpl, err = template.New("index.html").Funcs(template.FuncMap{"t": func(lang, s string) string { return translate(lang, s) }}).Parse(string(src))
	if err != nil {
		return nil, err
	}
	for name, read := range map[string]func() ([]byte, error){
		"console.js":                 func() ([]byte, error) { return files.ReadFile("assets/console.js") },
		"console.css":                func() ([]byte, error) { return files.ReadFile("assets/console.css") },
		"service-auth-client.min.js": func() ([]byte, error) { return sdk.Files.ReadFile("dist/service-auth-client.min.js") },
	} {
		b, err := read()
		if err != nil {
			return nil, err
		}
		ct := "text/javascript; charset=utf-8"
		if path.Ext(name) == ".css" {
			ct = "text/css; charset=utf-8"
		}
		h.assets[name] = asset{body: b, contentType: ct}
	}
	h.Page, h.Asset = h.page, h.asset
	return h, nil
}

// settings is what the page's script is told (a JSON data block, not a script: the CSP runs none inline).
type settings struct {
	Issuer     string            `json:"issuer"`
	ClientID   string            `json:"clientId"`
	Scope      string            `json:"scope"`
	AdminGroup string            `json:"adminGroup"`
	Lang       string            `json:"lang"`
	Catalog    map[string]string `json:"catalog"` // the script's texts in Lang (empty for English)
}

// page answers the app: the same document at /console/ and at its redirect URI, in the language the
// browser asks for (page.Match, as the hosted pages choose theirs).
func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	rt := h.o.Realm.Current()
	if !rt.Config.Auth.Console.On() {
		http.NotFound(w, r)
		return
	}
	if strings.HasSuffix(r.URL.Path, realm.ConsolePath) { // /console: the page's relative URLs need the slash
		http.Redirect(w, r, path.Base(r.URL.Path)+"/", http.StatusFound)
		return
	}
	lang := page.Match("", r.Header.Get("Accept-Language"))
	s := settings{Issuer: rt.Issuer, ClientID: realm.ConsoleClientID, Scope: strings.Join(realm.ConsoleScopes, " "),
		AdminGroup: rt.Config.Auth.Admin.Group, Lang: lang, Catalog: catalogs[lang]}
	if s.Catalog == nil {
		s.Catalog = map[string]string{}
	}
	var b bytes.Buffer
	if err := h.tmpl.Execute(&b, struct {
		Lang     string
		Settings settings
	}{lang, s}); err != nil {
		http.Error(w, "the console's page did not render", http.StatusInternalServerError)
		return
	}
	setHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Vary", "Accept-Language")
	_, _ = w.Write(b.Bytes())
}

// asset answers one of the app's files.
func (h *Handler) asset(w http.ResponseWriter, r *http.Request) {
	a, ok := h.assets[path.Base(r.URL.Path)]
	if !ok || !h.o.Realm.Current().Config.Auth.Console.On() {
		http.NotFound(w, r)
		return
	}
	setHeaders(w)
	w.Header().Set("Content-Type", a.contentType)
	_, _ = w.Write(a.body)
}

// CSP is the console's policy: its own scripts and style only, no inline code, no frames, and calls only
// to its own origin — which is the issuer's, where the token endpoint and the admin API are.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// setHeaders: the redirect URI carries a code, so no Referer leaves; a new binary's files are fetched
// again (revalidated, never stale).
func setHeaders(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-cache")
}
