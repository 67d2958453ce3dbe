package auth_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testbrowser"
	"github.com/formsservice/formsservice/internal/testdex"
)

// In Chromium, through the real Dex (internal/testdex): the sign-in page's Dex button (axe-checked,
// light and dark, 320 px), Dex's own login page with Dex's password form, and back to the app with a
// code whose tokens name a new account made just in time, amr fed (D81).
func TestFederation_Dex_InChromium(t *testing.T) {
	f, _ := startDex(t, setup{}, nil, dexAda)
	verifier := oauth2.GenerateVerifier()
	x := &person{t: t, p: f.provider, ctx: testbrowser.New(t)}
	x.do("opening the app's sign-in", chromedp.Navigate(f.authorizeURL("state-dex-chromium", verifier)))
	x.waitFor("the sign-in page", `a[data-connector="dex"]`)
	if s := x.text("the connector's button", `a[data-connector="dex"]`); s != "Sign in with Dex" {
		t.Errorf("the button says %q", s)
	}
	x.check("the sign-in page with the Dex button", "")
	x.mark()
	x.do("choosing Dex", chromedp.Click(chromedp.CSS(`a[data-connector="dex"]`)))
	x.waitFor("Dex's login page", `#submit-login`)
	if !strings.HasPrefix(x.location(), f.issuer+"/auth/local/login?") {
		t.Fatalf("the login page is at %s, not Dex's password form", x.location())
	}
	x.mark()
	x.do("signing in at Dex", chromedp.SendKeys(chromedp.CSS(`input[name="login"]`), dexAda.Email),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), dexAda.Password), chromedp.Click(chromedp.CSS(`#submit-login`)))
	code := x.landedCode()
	if code == "" {
		t.Fatal("no code after signing in through Dex")
	}
	tk := f.exchange(code, verifier)
	if tk.status != http.StatusOK {
		t.Fatalf("exchange: %d %s", tk.status, tk.Error)
	}
	c := idClaims(t, tk.IDToken)
	u, err := f.svc.Users().ByIdentity(context.Background(), "dex", testdex.Subject(dexAda))
	if err != nil || u.Email != dexAda.Email || c["sub"] != u.ID {
		t.Fatalf("the account of Dex's subject: %+v (%v); claims %v", u, err, c)
	}
	if amr, _ := c["amr"].([]any); !slices.Contains(amr, any("fed")) {
		t.Fatalf("amr %v, want fed", c["amr"])
	}
}
