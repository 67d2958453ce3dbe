//go:build e2e

package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/internal/testbrowser"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/test/contract"
	"github.com/formsservice/formsservice/test/internal/cluster"
)

// The admin console (docs/console.md) through the ingress: spec.console is on (patchForTest), the
// test's account is in the admin group (makeAdmin), and the browser that signed in to the test's client
// through Traefik goes on to the console.

// makeAdmin puts the test's account into the admin group with `formsservice users groups add` inside an
// auth pod, as docs/console.md ("In a cluster") tells a platform team to make its first admin.
func (k *kind) makeAdmin(t *testing.T, name string) {
	t.Helper()
	k.execInComponent(t, name, render.Auth,
		[]string{"/formsservice", "users", "groups", "add", "--config", render.ConfigPath, "--email", email, config.DefaultAdminGroup}, "")
}

// checkConsole posts a contact message through the ingress, then, in the browser already signed in to
// the provider (browser), opens <issuer>/console/ at the contact form's inbox searched for the message,
// signs in with the console's SDK flow (authorize with PKCE, the callback, the token exchange, all through
// Traefik over TLS: the provider's session answers authorize at once), and finds the message listed. The
// page passes axe-core.
func (in *ingress) checkConsole(t *testing.T, browser context.Context) {
	marker := strings.TrimSuffix(contract.UniqueEmail("console"), "@example.com")
	from := marker + "@example.com"
	postContact(t, in.client(netip.MustParseAddr("127.0.0.6")), in.formsURL(), map[string]any{
		"name": "Grace Hopper", "email": from, "message": "Read in the console through the ingress: " + marker,
	})

	inbox := in.issuer() + "/console/#/forms/contact?q=" + url.QueryEscape(marker)
	testbrowser.Do(t, browser, "opening "+inbox, chromedp.Navigate(inbox))
	waitShown(t, browser, "the console, signed out", "#sign-in")
	testbrowser.Do(t, browser, "signing in to the console", chromedp.Click(chromedp.CSS("#sign-in")))
	row := `#submissions[data-q="` + marker + `"] tbody tr a[data-id]`
	waitShown(t, browser, "the message in the contact form's inbox", row)
	if who := text(t, browser, "#who-email"); who != email {
		t.Errorf("the console is signed in as %q, want %s", who, email)
	}
	if n := testbrowser.Get(t, browser, "counting rows", chromedp.Evaluate[int](`document.querySelectorAll("#submissions tbody tr").length`)); n != 1 {
		t.Errorf("the search for %s lists %d submissions, want 1", marker, n)
	}
	if got := text(t, browser, "#submissions tbody tr"); !strings.Contains(got, from) || !strings.Contains(got, "Grace Hopper") {
		t.Errorf("the inbox's row does not show the message's fields (%s, Grace Hopper):\n%s", from, got)
	}
	testbrowser.Accessible(t, browser, "the console's contact inbox through the ingress")
}

// postContact posts a contact message through the ingress, as a browser on the allowed origin does.
func postContact(t *testing.T, hc *http.Client, formsURL string, body map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, formsURL+"/contact", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", e2eOrigin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("POST /contact through the ingress: %v", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /contact through the ingress: HTTP %d %s, want 201", resp.StatusCode, raw)
	}
}

// waitShown waits until the page shows sel (the console renders its views after its API calls).
func waitShown(t *testing.T, browser context.Context, what, sel string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.getClientRects().length > 0 })()`, sel)
	cluster.Eventually(t, 30*time.Second, what+" ("+sel+")", func() (bool, string) {
		if ok, done := testbrowser.TryGet(browser, chromedp.Evaluate[bool](js)); done && ok {
			return true, ""
		}
		loc, _ := testbrowser.TryGet(browser, chromedp.Location())
		body, _ := testbrowser.TryGet(browser, chromedp.Text("body"))
		return false, fmt.Sprintf("at %s the page says:\n%.1500s", loc, body)
	})
}

func text(t *testing.T, browser context.Context, sel string) string {
	t.Helper()
	return strings.TrimSpace(testbrowser.Get(t, browser, "the text of "+sel, chromedp.Evaluate[string](
		fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel))))
}
