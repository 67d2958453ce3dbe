package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/formsservice/formsservice/internal/testbrowser"
	"github.com/formsservice/formsservice/internal/testredis"
)

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return -1, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestDevServer_ServesTheDemoPageWithTheSDK(t *testing.T) {
	url := startCommand(t, "dev", devEnv(t, nil))
	code, page := httpGet(t, url+"/demo/")
	if code != 200 {
		t.Fatalf("GET /demo/: %d %s", code, page)
	}
	if !strings.Contains(page, `data-auth-base="`+url+`"`) {
		t.Errorf("the page does not name the dev server's issuer %s", url)
	}
	if code, js := httpGet(t, url+"/demo/service-auth-client.min.js"); code != 200 || !strings.Contains(js, "ServiceAuthClient") {
		t.Errorf("GET the SDK bundle: %d", code)
	}
	if code, _ := httpGet(t, url+"/demo/callback?code=x&state=y"); code != 200 {
		t.Errorf("GET the redirect URI: %d", code)
	}
}

func TestFormsCommand_DoesNotServeTheDemoPage(t *testing.T) {
	url := startFormsCommand(t, testredis.Start(t, testredis.Options{AppendFsync: "no"}).URL())
	if code, _ := httpGet(t, url+"/demo/"); code != 404 {
		t.Fatalf("production forms service answered /demo/ with %d, want 404", code)
	}
}

// The demo page is one of the pages we render: axe-core (WCAG 2.2 AA) and the non-text contrast check of
// the hosted pages (WCAG 1.4.11) at 320 px in both colour schemes, nothing scrolling sideways, and the
// dark palette in dark mode. (The SDK's Chromium tests check the
// same page signed in, at 320 and 390 px, sdk/test/browser/layout.test.ts.)
func TestDevServer_DemoPage_AccessibleAtPhoneWidthInLightAndDark(t *testing.T) {
	url := startCommand(t, "dev", devEnv(t, nil))
	ctx := testbrowser.New(t)
	for _, scheme := range []string{"light", "dark"} {
		what := "/demo/ at 320 px, " + scheme
		testbrowser.Do(t, ctx, what, testbrowser.Viewport(320, scheme), chromedp.Navigate(url+"/demo/"),
			chromedp.WaitVisible(`#auth-status[data-state="signed-out"]`))
		testbrowser.Accessible(t, ctx, what)
		testbrowser.NonTextContrast(t, ctx, what) // field borders, buttons, focus rings: 3:1, as the hosted pages
		if w := testbrowser.Get(t, ctx, what, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 320 {
			t.Errorf("%s: the page is %d px wide", what, w)
		}
		bg := testbrowser.Get(t, ctx, what, chromedp.Evaluate[string](`getComputedStyle(document.documentElement).backgroundColor`))
		if (scheme == "dark") != (bg == "rgb(21, 23, 26)") {
			t.Errorf("%s: the background is %s", what, bg)
		}
	}
}
