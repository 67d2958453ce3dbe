package testbrowser

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
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
