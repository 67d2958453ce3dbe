package mail

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/formsservice/formsservice/internal/testbrowser"
)

// The layout in Chromium, as a mail client that renders HTML shows it: WCAG 2.2 AA by axe-core at 320 px
// in light and dark mode, with a light and a dark accent, and no sideways scrolling.
func TestLayout_InChromium_AccessibleAtPhoneWidthInLightAndDark(t *testing.T) {
	pages := map[string]string{}
	for name, b := range map[string]Brand{
		"default": {Product: "Acme"},
		"yellow":  {Product: "Acme", Accent: "#ffd400"},
		"logo":    {Product: "Acme", Accent: "#0b7a3e", LogoURL: "https://acme.example/logo.png"},
	} {
		m, err := verify.Render("en", b, verifyData{Name: "Zoë", Link: "https://id.acme.example/verify?t=abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz", Minutes: 30})
		if err != nil {
			t.Fatal(err)
		}
		pages["/"+name] = m.HTML
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, pages[r.URL.Path])
	}))
	defer srv.Close()
	ctx := testbrowser.New(t)
	for path := range pages {
		for _, scheme := range []string{"light", "dark"} {
			what := fmt.Sprintf("mail layout %s at 320 px, %s", path, scheme)
			testbrowser.Do(t, ctx, what, testbrowser.Viewport(320, scheme), chromedp.Navigate(srv.URL+path), chromedp.WaitReady("body"))
			testbrowser.Accessible(t, ctx, what)
			if w := testbrowser.Get(t, ctx, what, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 320 {
				t.Errorf("%s: %d px wide", what, w)
			}
			bg := testbrowser.Get(t, ctx, what, chromedp.Evaluate[string](`getComputedStyle(document.querySelector(".card")).backgroundColor`))
			if want := map[string]string{"light": "rgb(255, 255, 255)", "dark": "rgb(31, 34, 38)"}[scheme]; bg != want {
				t.Errorf("%s: the card is %s, want %s", what, bg, want)
			}
		}
	}
}
