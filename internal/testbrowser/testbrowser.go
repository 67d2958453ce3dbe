// Package testbrowser runs headless Chromium for tests (chromedp) and checks a page with axe-core, the
// accessibility engine, against WCAG 2.2 A and AA, at a phone width and in light and dark mode.
//
// Chromium is Debian's, or CHROME_BIN; axe-core comes from the npm registry (cached under bin/): `make
// deps-browser` installs both, and a test fails with that command when one is missing. Under `go test
// -short` (make test-fast) New skips the test: a browser test is not a unit test.
package testbrowser

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/formsservice/formsservice/internal/reporoot"
	"github.com/formsservice/formsservice/internal/testproc"
)

// New starts a headless Chromium for the test and returns its context (closed when the test ends).
func New(t testing.TB) context.Context {
	t.Helper()
	testproc.SkipShort(t, "Chromium")
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox, // root in CI containers; the pages are our own
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(cancel)
	// The first action starts the browser, which lives as long as that action's context: no timeout.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// Do runs actions within a bound, failing the test with what went wrong.
func Do(t testing.TB, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(c, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Get runs one action that returns a value, within a bound.
func Get[T any](t testing.TB, ctx context.Context, what string, action chromedp.Action[T]) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, action)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// TryGet runs action like Get, for a test that waits for a condition: an error (the page is between two
// documents: "Inspected target navigated or closed") is "not yet", not a failure.
func TryGet[T any](ctx context.Context, action chromedp.Action[T]) (T, bool) {
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, action)
	return v, err == nil
}

func chromiumPath(t testing.TB) string {
	if p := os.Getenv("CHROME_BIN"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("Chromium is not installed: run `make deps-browser` (or `make test`, which installs every tool), or set CHROME_BIN")
	return ""
}

// Viewport sets the page's width in CSS pixels (320: the narrowest phone WCAG's reflow criterion names)
// and its colour scheme ("light" or "dark", as prefers-color-scheme reports it).
func Viewport(width int, scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		metrics := emulation.SetDeviceMetricsOverrideParams{Width: int64(width), Height: 800, DeviceScaleFactor: 1, Mobile: width < 600}
		if _, err := cdp.Call(ctx, t, emulation.SetDeviceMetricsOverride, metrics); err != nil {
			return err
		}
		media := emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, media)
		return err
	})
}

// Violation is one axe-core rule a page breaks.
type Violation struct {
	ID    string `json:"id"`
	Help  string `json:"help"`
	Nodes []struct {
		Target         []any  `json:"target"`
		FailureSummary string `json:"failureSummary"`
	} `json:"nodes"`
}

// Accessible runs axe-core on the current page (and the frames it can reach) against WCAG 2.2 A and AA
// and fails the test with every violation. what names the page and state in the message.
func Accessible(t testing.TB, ctx context.Context, what string) {
	t.Helper()
	src := axeSource(t)
	Get(t, ctx, what+": loading axe-core", chromedp.Evaluate[bool](src+";true"))
	run := `axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]}, resultTypes: ["violations"]})
		.then(r => JSON.stringify(r.violations))`
	raw := Get(t, ctx, what+": running axe-core", chromedp.Evaluate[string](run, chromedp.EvalAwaitPromise))
	var vs []Violation
	if err := json.Unmarshal([]byte(raw), &vs); err != nil {
		t.Fatalf("%s: axe-core's answer: %v\n%s", what, err, raw)
	}
	for _, v := range vs {
		var b strings.Builder
		for _, n := range v.Nodes {
			fmt.Fprintf(&b, "\n    %v: %s", n.Target, strings.ReplaceAll(n.FailureSummary, "\n", " "))
		}
		t.Errorf("%s: axe-core %s: %s%s", what, v.ID, v.Help, b.String())
	}
}

// AxeVersion is the axe-core release the checks run (`make deps-browser`: hack/install-axe.sh).
const AxeVersion = "4.14.1"

var (
	axeOnce sync.Once
	axeJS   string
	axeErr  error
)

// axeSource is axe.min.js, from bin/axe-core-<AxeVersion>/ (or $AXE_CORE_JS).
func axeSource(t testing.TB) string {
	t.Helper()
	axeOnce.Do(func() {
		path := os.Getenv("AXE_CORE_JS")
		if path == "" {
			root, _ := reporoot.Dir()
			path = filepath.Join(root, "bin", "axe-core-"+AxeVersion, "node_modules", "axe-core", "axe.min.js")
		}
		b, err := os.ReadFile(path)
		if err != nil {
			axeErr = fmt.Errorf("axe-core %s is not installed (%v): run `make deps-browser` (or `make test`, which installs every tool), or set AXE_CORE_JS", AxeVersion, err)
			return
		}
		axeJS = string(b)
	})
	if axeErr != nil {
		t.Fatal(axeErr)
	}
	return axeJS
}

// nonTextContrast is WCAG 2.2 1.4.11 as the page renders it, which axe-core does not check: the border
// of every visible field, the fill or border of every button, and the focus ring of every focusable
// element, each at least 3:1 against the background around it. It answers the problems found. The file
// is shared with the React example's tests (sdk/examples/react-vite/test/browser.ts).
//
//go:embed nontextcontrast.js
var nonTextContrast string

// NonTextContrast checks the page's fields, buttons and focus rings against WCAG 2.2 1.4.11 (3:1),
// which axe-core leaves to people: see nonTextContrast. A key press first puts the browser in keyboard
// mode, so that focusing an element shows its :focus-visible ring as a keyboard user sees it.
func NonTextContrast(t testing.TB, ctx context.Context, what string) {
	t.Helper()
	Do(t, ctx, what+": keyboard mode", chromedp.KeyEvent(kb.Shift))
	for _, p := range Get(t, ctx, what+": non-text contrast", chromedp.Evaluate[[]string](nonTextContrast)) {
		t.Errorf("%s: %s, want 3:1 (WCAG 1.4.11)", what, p)
	}
}
