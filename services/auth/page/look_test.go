package page_test

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/services/auth/page"
)

// The brand's custom properties, light then dark: fill, its text, links; yellow is dark enough as it
// is on the dark card.
var brandColours = regexp.MustCompile(`:root\{--accent:(#[0-9a-f]{6});--accent-fg:(#[0-9a-f]{6});--link:(#[0-9a-f]{6})\}@media \(prefers-color-scheme:dark\)\{:root\{--accent:(#[0-9a-f]{6})`)

var acme = page.Brand{ProductName: "Acme ID", LogoURL: "https://cdn.acme.example/img/logo.svg", AccentColor: "#FFFF00", StylesheetURL: "https://styles.acme.example:8443/brand.css"}

// Every page shows the brand (the logo with the product's name as its text alternative, the name in the
// title), loads the stylesheet, and its CSP allows exactly the two origins (no wildcard, no other
// host) and the brand's colours by the hash of their element.
func TestBrand_EveryPageShowsItAndTheCSPNamesItsOriginsExactly(t *testing.T) {
	r, a := page.New(), page.NewAccount()
	look := page.Look{Lang: "en", Brand: acme}
	pages := map[string]func(w http.ResponseWriter){
		"signin": func(w http.ResponseWriter) { r.RenderSignIn(w, 200, page.SignIn{ClientName: "Shop"}, nil) },
		"signin+passkey": func(w http.ResponseWriter) {
			r.RenderSignIn(w, 200, page.SignIn{ClientName: "Shop", Passkey: &page.PasskeySignIn{BeginURL: "/b"}}, nil)
		},
		"secondstep": func(w http.ResponseWriter) { r.RenderSecondStep(w, 200, page.SecondStep{ClientName: "Shop"}, nil) },
		"error":      func(w http.ResponseWriter) { r.RenderError(w, 400, page.Error{Title: "Bad request", Message: "m"}) },
		"logout":     func(w http.ResponseWriter) { r.RenderLogout(w, page.Logout{Action: "/oauth2/logout"}, nil) },
		"signedout":  func(w http.ResponseWriter) { r.RenderSignedOut(w) },
		"journey": func(w http.ResponseWriter) {
			r.RenderJourney(w, 200, page.Journey{Title: "Reset your password", Form: "forgot"})
		},
		"passkeys":    func(w http.ResponseWriter) { r.RenderPasskeys(w, 200, page.Passkeys{Email: "a@b.example"}) },
		"account":     func(w http.ResponseWriter) { a.RenderAccount(w, 200, page.Account{Email: "a@b.example"}) },
		"enrol":       func(w http.ResponseWriter) { a.RenderEnrol(w, 200, page.Enrol{}) },
		"codes":       func(w http.ResponseWriter) { a.RenderCodes(w, page.Codes{Codes: []string{"x"}}) },
		"notsignedin": func(w http.ResponseWriter) { a.RenderNotSignedIn(w, "") },
	}
	for name, render := range pages {
		rec := httptest.NewRecorder()
		render(page.WithLook(rec, look))
		body, csp := rec.Body.String(), rec.Header().Get("Content-Security-Policy")
		for _, want := range []string{
			`<img src="https://cdn.acme.example/img/logo.svg" alt="Acme ID"`,
			`<link rel="stylesheet" href="https://styles.acme.example:8443/brand.css">`,
			` – Acme ID</title>`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: no %s", name, want)
			}
		}
		for _, want := range []string{
			"img-src 'self' data: https://cdn.acme.example https://styles.acme.example:8443;",
			"font-src https://styles.acme.example:8443;",
			"https://styles.acme.example:8443", // in style-src, checked below
		} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", name, csp, want)
			}
		}
		style := regexp.MustCompile(`style-src ([^;]*)`).FindStringSubmatch(csp)
		if style == nil || !strings.HasSuffix(style[1], " https://styles.acme.example:8443") {
			t.Errorf("%s: style-src %q does not end with the stylesheet's origin", name, style)
		}
		if strings.Contains(csp, "*") || strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "/img/") || strings.Contains(csp, "https: ") {
			t.Errorf("%s: CSP %q is wider than the brand's origins", name, csp)
		}
		// The brand's colours: yellow, darkened for the fill and the links on white.
		if m := brandColours.FindStringSubmatch(body); m == nil || m[1] == "#ffff00" || m[2] != "#ffffff" && m[2] != "#000000" || m[3] == "#ffff00" || m[4] != "#ffff00" {
			t.Errorf("%s: the accent is not derived for contrast: %q", name, m)
		}
		// Every inline style element is allowed by hash or nonce.
		for _, m := range regexp.MustCompile(`(?s)<style( nonce="([^"]+)")?>(.*?)</style>`).FindAllStringSubmatch(body, -1) {
			h := sha256.Sum256([]byte(m[3]))
			if !strings.Contains(csp, "'sha256-"+base64.StdEncoding.EncodeToString(h[:])+"'") && (m[2] == "" || !strings.Contains(csp, "'nonce-"+m[2]+"'")) {
				t.Errorf("%s: a <style> element the CSP does not allow", name)
			}
		}
	}

	// Without branding: no header, no extra sources, the old CSP.
	rec := httptest.NewRecorder()
	r.RenderSignIn(rec, 200, page.SignIn{}, nil)
	if strings.Contains(rec.Body.String(), `class="brand"`) || !strings.Contains(rec.Header().Get("Content-Security-Policy"), "img-src 'self' data:; form-action") {
		t.Errorf("an unbranded page: CSP %q", rec.Header().Get("Content-Security-Policy"))
	}
	// A product name without a logo is shown as text.
	rec = httptest.NewRecorder()
	r.RenderSignIn(page.WithLook(rec, page.Look{Lang: "en", Brand: page.Brand{ProductName: "Acme ID"}}), 200, page.SignIn{}, nil)
	if !strings.Contains(rec.Body.String(), `<p class="brand-name">Acme ID</p>`) {
		t.Errorf("no product name on a page without a logo")
	}
}

func TestMatch_UILocalesThenAcceptLanguage(t *testing.T) {
	for _, c := range []struct{ ui, al, want string }{
		{"", "", "en"},
		{"de", "", "de"},
		{"de-CH", "en", "de"},
		{"fr de", "en", "de"},          // the first the pages have
		{"en", "de", "en"},             // ui_locales before Accept-Language
		{"fr", "de-AT,en;q=0.5", "de"}, // nothing of ui_locales: Accept-Language
		{"", "fr-FR,fr;q=0.9,de;q=0.8,en;q=0.7", "de"},
		{"", "en-GB,en;q=0.9,de;q=0.5", "en"},
		{"", "fr", "en"},
		{"", "*", "en"},
		{"!!", ";;;q=x", "en"},
		{"zz-Zzzz", strings.Repeat("de,", 500), "en"},
	} {
		if got := page.Match(c.ui, c.al); got != c.want {
			t.Errorf("Match(%q, %q) = %q, want %q", c.ui, c.al, got, c.want)
		}
	}
}

// Every text of every template is translated: no letters outside the template actions (nor in the
// attributes people read: aria-label, alt, title), and every {{t "..."}} has its German.
func TestGerman_EveryTextOfThePages(t *testing.T) {
	action := regexp.MustCompile(`(?s)\{\{.*?\}\}`)
	tag := regexp.MustCompile(`(?s)<[^>]*>`)
	readAttr := regexp.MustCompile(`(aria-label|alt|title|placeholder)="([^"]*)"`)
	letters := regexp.MustCompile(`\pL`)
	literal := regexp.MustCompile(`\{\{t "([^"]*)"`)
	for _, f := range []string{"page.html", "passkeys.html", "secondstep.html", "journey.html", "account.html", "brand.html", "directory.html"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		for _, m := range literal.FindAllStringSubmatch(src, -1) {
			if page.German(m[1]) == m[1] && m[1] != "Name" && m[1] != "Logo" && m[1] != "Passkeys" && m[1] != "(optional)" {
				t.Errorf("%s: no German for %q", f, m[1])
			}
		}
		noActions := action.ReplaceAllString(src, "")
		for _, m := range readAttr.FindAllStringSubmatch(noActions, -1) {
			if letters.MatchString(m[2]) {
				t.Errorf("%s: %s=%q is not translated", f, m[1], m[2])
			}
		}
		for _, text := range tag.Split(noActions, -1) {
			if letters.MatchString(text) {
				t.Errorf("%s: text %q is not translated", f, strings.TrimSpace(text))
			}
		}
	}
	// The messages the handlers build with fmt are translated with their values in place.
	for en, want := range map[string]string{
		"Too many failed sign-ins. Try again in 30 s.":                                                          "Zu viele fehlgeschlagene Anmeldungen. Versuchen Sie es in 30 s erneut.",
		"If a@b.example has an account, we have sent it a link to reset the password. It works for 15 minutes.": "Falls a@b.example ein Konto hat, haben wir einen Link zum Zurücksetzen des Passworts dorthin gesendet. Er gilt 15 Minuten.",
		"Use 12 to 256 characters.": "Verwenden Sie 12 bis 256 Zeichen.",
		"Acme Shop":                 "Acme Shop", // a name stays as it is
		"An account with your e-mail address exists already. Sign in to it another way, then link Google on your account page.": "Es gibt schon ein Konto mit Ihrer E-Mail-Adresse. Melden Sie sich anders daran an und verknüpfen Sie dann Google auf Ihrer Kontoseite.",
		"Microsoft did not answer. Please try again in a moment, or sign in another way.":                                       "Microsoft hat nicht geantwortet. Bitte versuchen Sie es gleich noch einmal, oder melden Sie sich anders an.",
		"Sign in with Google":                            "Mit Google anmelden",
		"Wrong username or password. Try again in 30 s.": "Benutzername oder Passwort falsch. Versuchen Sie es in 30 s erneut.",
		"password and a recovery code":                   "Passwort und einem Wiederherstellungscode", // a session's methods (D69)
		"Each link works once. You can still reset your password below: the browser that sets it can sign in.": "Jeder Link funktioniert einmal. Sie können Ihr Passwort unten noch zurücksetzen: Der Browser, der es setzt, kann sich anmelden.",
		"This browser can sign in to a@b.example now. Browsers that were not yours stay paused.":               "Dieser Browser kann sich jetzt bei a@b.example anmelden. Browser, die nicht Ihre waren, bleiben pausiert.",
	} {
		if got := page.German(en); got != want {
			t.Errorf("German(%q) = %q, want %q", en, got, want)
		}
	}
}

// A page in German says so (<html lang="de">) and reads German.
func TestRender_German(t *testing.T) {
	rec := httptest.NewRecorder()
	page.New().RenderSignIn(page.WithLook(rec, page.Look{Lang: "de"}), 401, page.SignIn{Error: "Wrong e-mail address or password.", SelfSignup: true}, nil)
	body := rec.Body.String()
	for _, want := range []string{`<html lang="de">`, "<title>Anmelden – der Anwendung</title>", "E-Mail-Adresse oder Passwort falsch.", "Neu hier? Konto erstellen", "weiter zu <strong>der Anwendung</strong>"} {
		if !strings.Contains(body, want) {
			t.Errorf("no %q in\n%s", want, body)
		}
	}
	rec = httptest.NewRecorder()
	page.NewAccount().RenderAccount(page.WithLook(rec, page.Look{Lang: "de"}), 200, page.Account{Email: "a@b.example"})
	if body := rec.Body.String(); !strings.Contains(body, `<html lang="de">`) || !strings.Contains(body, "<title>Ihr Konto</title>") || !strings.Contains(body, "Wo Sie angemeldet sind") {
		t.Errorf("the account page is not in German:\n%s", body)
	}
}
