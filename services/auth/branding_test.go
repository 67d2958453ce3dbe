package auth_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/services/platform/config"
)

// Discovery names the pages' languages; a client's branding reaches its sign-in page over the
// platform's, with its logo's origin in the CSP; the account client's page has the platform's; and a
// wrong password answered to a ui_locales=de request stays German (the form posts to the request).
func TestBranding_PerClientOverPlatform_DiscoveryLanguages(t *testing.T) {
	p := startProvider(t, setup{mutate: func(c *config.Config) {
		c.Auth.Branding = config.Branding{ProductName: "Acme ID", LogoURL: "https://cdn.acme.example/id.svg"}
		c.Auth.Clients[0].Branding = &config.Branding{ProductName: "Acme Shop", LogoURL: "https://shop-cdn.acme.example/shop.svg", AccentColor: "#0a7d45"}
	}})
	p.user(testEmail, testPassword)

	res, err := http.Get(p.base + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var doc struct {
		UILocales []string `json:"ui_locales_supported"`
	}
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil || !slices.Equal(doc.UILocales, []string{"en", "de"}) {
		t.Fatalf("discovery ui_locales_supported: %v %v", doc.UILocales, err)
	}

	b := newBrowser(t)
	signin := b.get(p.authorizeURL("state-brand-1", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("ui_locales", "de")))
	csp := signin.Header.Get("Content-Security-Policy")
	if !strings.Contains(signin.body, `alt="Acme Shop"`) || !strings.Contains(signin.body, `src="https://shop-cdn.acme.example/shop.svg"`) ||
		!strings.Contains(csp, "img-src 'self' data: https://shop-cdn.acme.example;") || strings.Contains(csp, "cdn.acme.example/") {
		t.Fatalf("the client's branding: CSP %q\n%.1500s", csp, signin.body)
	}
	if !strings.Contains(signin.body, `<html lang="de">`) {
		t.Fatalf("ui_locales=de: not German\n%.300s", signin.body)
	}
	form := formTo(t, p.base, signin.body, "/oauth2/authorize")
	form.fields.Set("email", testEmail)
	form.fields.Set("password", "not the password")
	refused := b.postForm(form.action, form.fields)
	if refused.StatusCode != http.StatusUnauthorized || !strings.Contains(refused.body, `<html lang="de">`) || !strings.Contains(refused.body, "E-Mail-Adresse oder Passwort falsch.") {
		t.Fatalf("the refusal: %d\n%.1500s", refused.StatusCode, refused.body)
	}

	ab := newBrowser(t)
	account := ab.get(p.base + "/account") // a redirect to the hosted sign-in
	account = ab.get(p.base + account.Header.Get("Location"))
	if !strings.Contains(account.body, `alt="Acme ID"`) || !strings.Contains(account.Header.Get("Content-Security-Policy"), "img-src 'self' data: https://cdn.acme.example;") {
		t.Fatalf("the account's sign-in has not the platform's branding: %q\n%.1500s", account.Header.Get("Content-Security-Policy"), account.body)
	}
}
