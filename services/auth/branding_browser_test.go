package auth_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testbrowser"
	"github.com/formsservice/formsservice/services/platform/config"
)

// brandAssets serves a logo and a stylesheet from an origin of their own (another port), as a CDN
// would, and returns that origin.
func brandAssets(t *testing.T) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 120, 40))
	for x := range 120 {
		for y := range 40 {
			img.Set(x, y, color.RGBA{0x20, 0x40, 0x90, 0xff})
		}
	}
	var logo bytes.Buffer
	if err := png.Encode(&logo, img); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/brand/logo.png", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(logo.Bytes())
	})
	// A rule the test can see applied; it changes nothing axe-core checks.
	mux.HandleFunc("/brand/brand.css", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/css")
		_, _ = w.Write([]byte("h1{letter-spacing:0.5px}\n"))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// acceptLanguage makes the browser send header as its Accept-Language.
func acceptLanguage(header string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Accept-Language": header}})
		return err
	})
}

func (x *person) eval(what, js string) string {
	x.t.Helper()
	return testbrowser.Get(x.t, x.ctx, what, chromedp.Evaluate[string](js))
}

// The hosted pages in the platform's branding, with a client's override, and in the person's language:
// ui_locales picks German, and English over a German Accept-Language; Accept-Language alone picks
// German; the logo (from its own origin, with the product's name as its text alternative) and the
// stylesheet load under the CSP, and an accent colour far under 3:1 on white (gold) gives buttons that
// meet it. axe-core and the non-text contrast check pass on every page and state, at 320 px, light and
// dark.
func TestBranding_InChromium_LanguagesLogoAccentStylesheet(t *testing.T) {
	assets := brandAssets(t)
	p := startProvider(t, setup{mutate: func(c *config.Config) {
		c.Auth.SelfSignup = true
		c.Auth.Branding = config.Branding{ProductName: "Acme ID", LogoURL: assets + "/brand/logo.png", AccentColor: "#ffd700", StylesheetURL: assets + "/brand/brand.css"}
		c.Auth.Clients[0].Branding = &config.Branding{ProductName: "Acme Shop"}
	}})
	p.user(testEmail, testPassword)
	x := &person{t: t, p: p, ctx: testbrowser.New(t)}
	branded := func(what, product string) {
		t.Helper()
		if alt := x.eval(what, `document.querySelector("header.brand img").alt`); alt != product {
			t.Errorf("%s: the logo's alt is %q, want %q", what, alt, product)
		}
		if w := testbrowser.Get(t, x.ctx, what, chromedp.Evaluate[int](`(() => { const i = document.querySelector("header.brand img"); return i.complete ? i.naturalWidth : -1; })()`)); w != 120 {
			t.Errorf("%s: the logo did not load (naturalWidth %d): the CSP refused its origin?", what, w)
		}
		if ls := x.eval(what, `getComputedStyle(document.querySelector("h1")).letterSpacing`); ls != "0.5px" {
			t.Errorf("%s: the brand's stylesheet is not applied (h1 letter-spacing %q)", what, ls)
		}
		if title := x.eval(what, `document.title`); !strings.HasSuffix(title, " – "+product) {
			t.Errorf("%s: title %q does not name %s", what, title, product)
		}
		// Gold (#ffd700) is 1.4:1 on white: in light mode the button is a darker gold (in dark mode
		// gold itself, 9:1 on the dark card).
		x.do(what, testbrowser.Viewport(320, "light"))
		if bg := x.eval(what, `getComputedStyle(document.querySelector("button[type=submit]:not(.secondary)")).backgroundColor`); bg == "rgb(255, 215, 0)" || bg == "rgb(31, 95, 214)" {
			t.Errorf("%s: the button is %s: the accent is not used, or used as it is", what, bg)
		}
	}
	lang := func(what, want string) {
		t.Helper()
		if l := x.eval(what, `document.documentElement.lang`); l != want {
			t.Errorf("%s: <html lang=%q>, want %q", what, l, want)
		}
	}

	// ui_locales=de: German, in the client's branding over the platform's.
	x.do("sign-in with ui_locales=de", chromedp.Navigate(p.authorizeURL("state-0123456789", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("ui_locales", "fr de"))))
	x.waitFor("the sign-in page", "#password")
	lang("ui_locales=fr de", "de")
	x.says("German sign-in", "h1", "Anmelden")
	x.says("German sign-in", "label[for=email]", "E-Mail-Adresse")
	branded("German sign-in", "Acme Shop")
	x.check("sign-in, German, branded", "")
	// An error state, still German (the form posts to the authorization request, ui_locales with it).
	x.signIn(testEmail, "not the password")
	x.waitFor("the refusal", "#signin-error")
	lang("after a wrong password", "de")
	x.says("the refusal", "#signin-error", "E-Mail-Adresse oder Passwort falsch.")
	branded("German sign-in refused", "Acme Shop")
	x.check("sign-in refused, German, branded", "")

	// ui_locales=en wins over a German Accept-Language.
	x.do("German browser", acceptLanguage("de-AT,de;q=0.9,en;q=0.5"))
	x.mark()
	x.do("sign-in with ui_locales=en", chromedp.Navigate(p.authorizeURL("state-0123456790", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("ui_locales", "en"))))
	x.waitFor("the sign-in page", "#password")
	lang("ui_locales=en, Accept-Language de", "en")
	x.says("English sign-in", "h1", "Sign in")

	// Accept-Language alone: German, on the journeys and in the platform's branding (no client).
	x.open("forgot password", p.base+"/account/forgot", "#email")
	lang("forgot, Accept-Language de", "de")
	x.says("German forgot", "h1", "Passwort zurücksetzen")
	branded("German forgot", "Acme ID")
	x.check("forgot password, German, branded", "")
	x.mark()
	// The browser's own check of type=email is lifted, so that the server's answer shows.
	testbrowser.Get(t, x.ctx, "lifting the browser's check", chromedp.Evaluate[bool](`(document.querySelector("#email").type = "text") === "text"`))
	x.do("a malformed address", chromedp.SendKeys(chromedp.CSS("#email"), "not-an-address"), chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
	x.waitFor("the field's error", "#email-error")
	x.says("German field error", "#email-error", "Geben Sie eine E-Mail-Adresse")
	x.check("forgot password, field error, German", "")

	// The account page: signed in through the hosted page, German, the platform's branding.
	x.open("the account page", p.base+"/account", "#password")
	x.says("the account's sign-in", ".sub", "weiter zu Ihrem Konto")
	x.signIn(testEmail, testPassword)
	x.waitFor("the account page", "#password-title")
	lang("account, Accept-Language de", "de")
	x.says("German account page", "h1", "Ihr Konto")
	branded("German account page", "Acme ID")
	x.check("account page, German, branded", "")

	// No preference the pages have: English.
	x.do("French browser", acceptLanguage("fr-FR,fr;q=0.9"))
	x.open("the account page in French", p.base+"/account", "#password-title")
	lang("Accept-Language fr", "en")
	x.says("English account page", "h1", "Your account")
}
