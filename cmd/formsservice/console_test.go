package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/formsservice/formsservice/internal/testbrowser"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/platform/config"
)

// `make run` serves the admin console (D65) and says where; the dev user signs in to it through the
// hosted page and is its admin (a member of the admin group), so the audit trail shows.
func TestDevServer_ServesTheConsoleWithTheDevUserAsItsAdmin(t *testing.T) {
	url, logs, _ := startCommandStop(t, "dev", devEnv(t, nil))
	var ready map[string]any
	for l := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(l, `"msg":"dev server ready"`) {
			json.Unmarshal([]byte(l), &ready) //nolint:errcheck // checked below
		}
	}
	if ready["console"] != url+"/console/" {
		t.Errorf("the ready line names the console as %v, want %s/console/", ready["console"], url)
	}
	if code, page := httpGet(t, url+"/console/"); code != 200 || !strings.Contains(page, `"clientId":"formsservice-console"`) {
		t.Fatalf("GET /console/: %d\n%.400s", code, page)
	}

	// Opened on 127.0.0.1, it moves to the issuer's host (localhost, D74), where its tokens and redirect URI are.
	ctx := testbrowser.New(t)
	testbrowser.Do(t, ctx, "the console on 127.0.0.1", chromedp.Navigate(strings.Replace(url, "localhost", "127.0.0.1", 1)+"/console/#/audit"))
	testwait.Until(t, 30*time.Second, "the move to the issuer's host", func() error {
		if loc, ok := testbrowser.TryGet(ctx, chromedp.Location()); !ok || loc != url+"/console/#/audit" {
			return &viewErr{"at " + loc}
		}
		return nil
	})
	testbrowser.Do(t, ctx, "the console", chromedp.WaitVisible("#sign-in"), chromedp.Click("#sign-in"))
	testbrowser.Do(t, ctx, "the sign-in page", chromedp.WaitVisible("#password"),
		chromedp.SendKeys("#email", config.DevEmail), chromedp.SendKeys("#password", config.DevPassword),
		chromedp.Click(`button[type="submit"]`))
	// Back on the page asked for (the audit trail), which only an admin's token reads.
	testwait.Until(t, 30*time.Second, "the console's audit trail", func() error {
		n, ok := testbrowser.TryGet(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#events tbody tr").length`))
		if !ok || n == 0 {
			view, _ := testbrowser.TryGet(ctx, chromedp.Evaluate[string](`document.querySelector("main").dataset.view`))
			return &viewErr{view}
		}
		return nil
	})
}

type viewErr struct{ view string }

func (e *viewErr) Error() string { return "the console shows " + e.view }
