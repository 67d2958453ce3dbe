package auth_test

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testbrowser"
	"github.com/formsservice/formsservice/internal/testproc"
)

// refusalLog is the JSON log line with the reason.
func refusalLog(t *testing.T, logs *testproc.Buffer, reason string) map[string]any {
	t.Helper()
	for l := range strings.SplitSeq(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["reason"] == reason {
			return m
		}
	}
	t.Fatalf("no log line with reason %s:\n%s", reason, logs)
	return nil
}

// refusalCount reads formsservice_auth_refusals_total{reason} from /metrics.
func refusalCount(t *testing.T, p *provider, reason string) string {
	t.Helper()
	res, err := http.Get(p.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	prefix := `formsservice_auth_refusals_total{reason="` + reason + `"} `
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			return v
		}
	}
	return "absent"
}

// badLinks are the three refused links: an unknown client, a redirect URI that is not registered, and
// a post-logout URI that is not registered.
func badLinks(p *provider) map[string]string {
	return map[string]string{
		"unknown_client": p.authorizeURL("state-0123456789", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("client_id", "my-app")),
		"redirect_uri_not_registered": p.authorizeURL("state-0123456789", oauth2.GenerateVerifier(),
			oauth2.SetAuthURLParam("redirect_uri", "http://localhost:3000/callback")),
		"post_logout_redirect_uri_not_registered": p.base + "/oauth2/logout?" + url.Values{"client_id": {clientID},
			"post_logout_redirect_uri": {"http://localhost:3000/"}}.Encode(),
	}
}

// The issue: a redirect-URI mismatch showed a friendly page to the person and told the developer
// nothing, not even in the log. On the dev server the page shows what was sent and what is registered,
// and the log says it at info.
func TestRefusals_Dev_PageAndLogSayWhatWasSentAndWhatIsRegistered(t *testing.T) {
	logs := &testproc.Buffer{}
	p := startProvider(t, setup{logs: logs, dev: true})
	b := newBrowser(t)
	want := map[string][]string{
		"unknown_client":              {"client_id: my-app", "registered clients: app"},
		"redirect_uri_not_registered": {"redirect_uri sent: http://localhost:3000/callback", "registered redirect URIs: " + p.base + "/cb"},
		"post_logout_redirect_uri_not_registered": {"post_logout_redirect_uri sent: http://localhost:3000/",
			"registered post-logout URIs: " + p.base + "/bye"},
	}
	for reason, link := range badLinks(p) {
		res := b.get(link)
		if res.StatusCode != http.StatusBadRequest || res.Header.Get("Location") != "" {
			t.Errorf("%s: %d %q, want the 400 page and no redirect", reason, res.StatusCode, res.Header.Get("Location"))
		}
		page := html.UnescapeString(res.body)
		for _, w := range append(want[reason], "For the developer") {
			if !strings.Contains(page, w) {
				t.Errorf("%s: the dev page lacks %q", reason, w)
			}
		}
		l := refusalLog(t, logs, reason)
		if l["level"] != "INFO" || !strings.HasPrefix(l["msg"].(string), "auth: refused a sign") {
			t.Errorf("%s: log line %v", reason, l)
		}
		if n := refusalCount(t, p, reason); n != "1" {
			t.Errorf("%s counted %s, want 1", reason, n)
		}
	}
	l := refusalLog(t, logs, "redirect_uri_not_registered")
	if l["redirect_uri sent"] != "http://localhost:3000/callback" || l["client_id"] != clientID {
		t.Errorf("the log line does not name what was sent: %v", l)
	}
}

// In production the page says nothing a stranger could use (not the registered URIs), the log says it
// at debug only, and the counter counts by reason.
func TestRefusals_Production_PageUnchanged_ExplainedAtDebug(t *testing.T) {
	logs := &testproc.Buffer{}
	p := startProvider(t, setup{logs: logs})
	b := newBrowser(t)
	for reason, link := range badLinks(p) {
		res := b.get(link)
		if res.StatusCode != http.StatusBadRequest || strings.Contains(res.body, "For the developer") || strings.Contains(res.body, p.base+"/cb") ||
			strings.Contains(res.body, "localhost:3000") {
			t.Errorf("%s: %d, the production page shows what is registered or was sent:\n%s", reason, res.StatusCode, res.body)
		}
		if l := refusalLog(t, logs, reason); l["level"] != "DEBUG" {
			t.Errorf("%s: logged at %v, want DEBUG", reason, l["level"])
		}
		if n := refusalCount(t, p, reason); n != "1" {
			t.Errorf("%s counted %s, want 1", reason, n)
		}
	}
	if n := refusalCount(t, p, "redirect_uri_missing"); n != "0" {
		t.Errorf("a reason not seen yet is %s, want 0", n)
	}
}

// The dev error page with a long URI stays a page we may render: WCAG 2.2 AA at 320 px, light and dark,
// nothing scrolling sideways.
func TestRefusals_DevPage_AccessibleAtPhoneWidth(t *testing.T) {
	p := startProvider(t, setup{dev: true})
	link := p.authorizeURL("state-0123456789", oauth2.GenerateVerifier(),
		oauth2.SetAuthURLParam("redirect_uri", "http://localhost:3000/a/rather/long/callback/path/that/does/not/fit/on/a/phone?with=query&and=more"))
	ctx := testbrowser.New(t)
	for _, scheme := range []string{"light", "dark"} {
		what := "the dev error page at 320 px, " + scheme
		testbrowser.Do(t, ctx, what, testbrowser.Viewport(320, scheme), chromedp.Navigate(link), chromedp.WaitVisible(`#dev-title`))
		testbrowser.Accessible(t, ctx, what)
		if w := testbrowser.Get(t, ctx, what, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 320 {
			t.Errorf("%s: the page is %d px wide", what, w)
		}
	}
}
