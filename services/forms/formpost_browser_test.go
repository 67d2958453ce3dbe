package forms

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/formsservice/formsservice/internal/testbrowser"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// scripts turns JavaScript on the page off or on: the forms must work for a person with it off.
func scripts(on bool) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: !on})
		return err
	})
}

// siteServer is a product's web site on its own origin (port 0), holding plain HTML forms that post to
// the forms service at formsURL (filled in once the service runs).
type siteServer struct {
	*httptest.Server
	formsURL string
}

func newSite(t *testing.T) *siteServer {
	s := &siteServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		head := `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Site</title></head><body><main>`
		switch r.URL.Path {
		case "/waitlist-form":
			// novalidate: the browser's own checks would stop what the test sends to the server's.
			fmt.Fprintf(w, head+`<h1>Join</h1><form method="post" action="%s/waitlist" novalidate>
<label for="email">E-mail</label><input id="email" name="email" type="email">
<label><input id="consent" name="consent" type="checkbox"> I agree</label>
<input type="text" name="_gotcha" tabindex="-1" autocomplete="off" hidden>
<button id="send" type="submit">Join</button></form>
<script>document.documentElement.dataset.js = "ran"</script></main></body></html>`, s.formsURL)
		case "/contact-form":
			fmt.Fprintf(w, head+`<h1>Write to us</h1><form method="post" action="%s/contact" enctype="multipart/form-data">
<label for="name">Name</label><input id="name" name="name">
<label for="email">E-mail</label><input id="email" name="email" type="email">
<label for="message">Message</label><textarea id="message" name="message"></textarea>
<input type="hidden" name="_next" value="/sent">
<button id="send" type="submit">Send</button></form></main></body></html>`, s.formsURL)
		default:
			fmt.Fprintf(w, head+`<h1 id="landed">%s</h1></main></body></html>`, r.URL.Path)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// waitLocation waits until the browser shows want.
func waitLocation(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	var got string
	testwait.For(t, 10*time.Second, "the browser at "+want, func() bool {
		loc, ok := testbrowser.TryGet(ctx, chromedp.Location())
		got = loc
		return ok && got == want
	})
}

func TestFormPost_InChromiumWithJavaScriptOff(t *testing.T) {
	site := newSite(t)        // its thanks page is configured
	bare := newSite(t)        // no site configuration: the forms' own pages
	cfg := formstest.Config() // allows formstest.Origin and the two sites
	cfg.AllowedOrigins = append(cfg.AllowedOrigins, site.URL, bare.URL)
	cfg.Forms.Sites = []config.Site{{Origin: site.URL, Name: "Example", ThanksURL: "/thanks"}}
	h := newHarness(t, harnessOpts{cfg: cfg})
	site.formsURL, bare.formsURL = h.url, h.url

	ctx := testbrowser.New(t)
	testbrowser.Do(t, ctx, "JavaScript off", scripts(false))

	// A waitlist sign-up: the browser follows the 303 to the site's thank-you page.
	testbrowser.Do(t, ctx, "the waitlist form", chromedp.Navigate(site.URL+"/waitlist-form"))
	if testbrowser.Get(t, ctx, "the page's script", chromedp.AttributeValue("html", "data-js")).Exists {
		t.Fatal("the page's script ran: JavaScript is not off")
	}
	testbrowser.Do(t, ctx, "signing up", chromedp.SendKeys("#email", "Ada@Example.com"), chromedp.Click("#consent"), chromedp.Click("#send"))
	waitLocation(t, ctx, site.URL+"/thanks")
	rec, ok := storedWaitlist(t, h, "ada@example.com")
	if !ok || rec.Origin != site.URL || !rec.Consent {
		t.Fatalf("stored %+v (%v): the browser's Origin should be the site's", rec, ok)
	}

	// A contact message through multipart/form-data, with _next.
	testbrowser.Do(t, ctx, "the contact form", chromedp.Navigate(site.URL+"/contact-form"),
		chromedp.SendKeys("#name", "Ada"), chromedp.SendKeys("#email", "ada@example.com"),
		chromedp.SendKeys("#message", "Two lines\nof a message."), chromedp.Click("#send"))
	waitLocation(t, ctx, site.URL+"/sent")
	msgs := h.rdb.XRange(t.Context(), store.ContactStream, "-", "+").Val()
	if len(msgs) != 1 || !strings.Contains(msgs[0].Values["m"].(string), `"message":"Two lines\nof a message."`) {
		t.Fatalf("stored %v", msgs)
	}

	// Field errors: the forms' error page, its links back to the fields of the form's page. Chromium
	// sends only the origin as Referer across sites (strict-origin-when-cross-origin), so they lead there.
	testbrowser.Do(t, ctx, "a wrong address", chromedp.Navigate(bare.URL+"/waitlist-form"),
		chromedp.SendKeys("#email", "not an address"), chromedp.Click("#send"))
	waitLocation(t, ctx, h.url+"/waitlist")
	text := testbrowser.Get(t, ctx, "the error page", chromedp.Text("main"))
	for _, want := range []string{"Please check the form", "E-mail address: this is not an e-mail address", "Consent: please tick the box"} {
		if !strings.Contains(text, want) {
			t.Errorf("the error page lacks %q:\n%s", want, text)
		}
	}
	href := testbrowser.Get(t, ctx, "the first link", chromedp.AttributeValue(`main li a`, "href")).Value
	if href != bare.URL+"/#email" {
		t.Errorf("the link to the field is %q", href)
	}
	checkPage(t, ctx, "the error page", h.url+"/waitlist")

	// The forms' own thank-you page (no site configuration).
	testbrowser.Do(t, ctx, "JavaScript off", scripts(false))
	testbrowser.Do(t, ctx, "a good sign-up", chromedp.Navigate(bare.URL+"/waitlist-form"),
		chromedp.SendKeys("#email", "grace@example.com"), chromedp.Click("#consent"), chromedp.Click("#send"))
	waitLocation(t, ctx, h.url+"/waitlist")
	if text := testbrowser.Get(t, ctx, "the thank-you page", chromedp.Text("main")); !strings.Contains(text, "You are on the waitlist") {
		t.Errorf("the thank-you page: %s", text)
	}
	checkPage(t, ctx, "the thank-you page", h.url+"/waitlist")
}

// checkPage runs axe-core (WCAG 2.2 AA) on the page the browser shows, at 320 px in light and dark, and
// checks that nothing scrolls sideways. The page is the answer to a POST, so it is checked where it
// stands: the viewport and colour scheme change in place (axe-core needs scripts, for DevTools only).
func checkPage(t *testing.T, ctx context.Context, what, at string) {
	t.Helper()
	testbrowser.Do(t, ctx, "scripts on for axe-core", scripts(true))
	for _, scheme := range []string{"light", "dark"} {
		w := fmt.Sprintf("%s at 320 px, %s", what, scheme)
		testbrowser.Do(t, ctx, w, testbrowser.Viewport(320, scheme))
		if got := testbrowser.Get(t, ctx, w, chromedp.Location()); got != at {
			t.Fatalf("%s: the browser left the page for %s", w, got)
		}
		testbrowser.Accessible(t, ctx, w)
		if px := testbrowser.Get(t, ctx, w, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); px > 320 {
			t.Errorf("%s: %d px wide", w, px)
		}
	}
}
