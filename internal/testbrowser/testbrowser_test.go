package testbrowser

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/formsservice/formsservice/internal/testproc"
)

// errorRecorder is a testing.TB whose Errorf is kept instead of failing the test.
type errorRecorder struct {
	testing.TB
	errs []string
}

func (r *errorRecorder) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}
func (r *errorRecorder) Helper() {}

func TestAccessible_ReportsWhatAPageBreaks(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path == "/good" {
			fmt.Fprint(w, `<!DOCTYPE html><html lang="en"><head><title>Good</title></head><body><main><h1>Fine</h1><p>Readable.</p></main></body></html>`)
			return
		}
		fmt.Fprint(w, `<!DOCTYPE html><html><head><title>Bad</title></head><body><main>`+
			`<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw="><p style="color:#bbb;background:#fff">faint text</p></main></body></html>`)
	}))
	defer srv.Close()
	ctx := New(t)

	Do(t, ctx, "the good page", chromedp.Navigate(srv.URL+"/good"))
	Accessible(t, ctx, "the good page")

	Do(t, ctx, "the bad page", Viewport(320, "dark"), chromedp.Navigate(srv.URL+"/bad"))
	rec := &errorRecorder{TB: t}
	Accessible(rec, ctx, "the bad page")
	all := strings.Join(rec.errs, "\n")
	for _, rule := range []string{"html-has-lang", "image-alt", "color-contrast"} {
		if !strings.Contains(all, "axe-core "+rule+":") {
			t.Errorf("axe-core did not report %s:\n%s", rule, all)
		}
	}
	if got := Get(t, ctx, "the colour scheme", chromedp.Evaluate[bool](`matchMedia("(prefers-color-scheme: dark)").matches`)); !got {
		t.Error("Viewport did not switch to dark mode")
	}
}

// NonTextContrast reports a faint field border, a faint focus ring, a field without any, and a button
// that cannot be told from the card; a page with sound ones passes.
func TestNonTextContrast_ReportsFaintBordersAndFocusRings(t *testing.T) {
	const head = `<!DOCTYPE html><html lang="en"><head><title>t</title><style>body{background:#fff}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path == "/good" {
			fmt.Fprint(w, head+`input{border:1px solid #767b84}:focus-visible{outline:3px solid #b45309}button{background:#1f5fd6;color:#fff;border:0}</style></head>`+
				`<body><main><label for="a">A</label><input id="a"><button>Go</button><a href="#x">link</a></main></body></html>`)
			return
		}
		fmt.Fprint(w, head+`input{border:1px solid #c9ced6}#b{outline:none!important}:focus-visible{outline:3px solid #ffb000}button{background:#f4f5f7;border:0;color:#000}</style></head>`+
			`<body><main><label for="a">A</label><input id="a"><label for="b">B</label><input id="b"><button>Go</button></main></body></html>`)
	}))
	defer srv.Close()
	ctx := New(t)

	Do(t, ctx, "the good page", chromedp.Navigate(srv.URL+"/good"))
	NonTextContrast(t, ctx, "the good page")

	Do(t, ctx, "the bad page", chromedp.Navigate(srv.URL+"/bad"))
	rec := &errorRecorder{TB: t}
	NonTextContrast(rec, ctx, "the bad page")
	all := strings.Join(rec.errs, "\n")
	for _, want := range []string{"field border of input#a «»: 1.58", "focus ring of input#a «»: 1.83", "no focus ring on input#b", "button edge of button «Go»: 1.09"} {
		if !strings.Contains(all, want) {
			t.Errorf("not reported: %s\n%s", want, all)
		}
	}
}

// `make deps-browser` must install the axe-core the checks look for in bin/.
func TestAxeVersion_IsTheOneTheInstallScriptInstalls(t *testing.T) {
	v, err := testproc.ScriptVersion("hack/install-axe.sh", "AXE_VERSION")
	if err != nil {
		t.Fatal(err)
	}
	if v != AxeVersion {
		t.Errorf("hack/install-axe.sh installs axe-core %s, the checks load %s", v, AxeVersion)
	}
}
