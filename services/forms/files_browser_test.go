package forms

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/formsservice/formsservice/internal/testbrowser"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/platform/config"
)

// A person uploads a file through a plain HTML form (JavaScript off) and a script through fetch with
// FormData, in Chromium: both are stored with the file's bytes in the bucket, and the forms' own
// thank-you page passes axe-core at phone width in light and dark.
func TestFiles_UploadedFromChromiumByAFormAndByFetch(t *testing.T) {
	var formsURL string
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		head := `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Apply</title></head><body><main><h1>Apply</h1>`
		form := `<form id="apply" method="post" action="%s/f/apply" enctype="multipart/form-data">
<label for="name">Name</label><input id="name" name="name">
<label for="cv">CV</label><input id="cv" name="cv" type="file" accept="application/pdf,image/*">
<button id="send" type="submit">Apply</button></form>`
		switch r.URL.Path {
		case "/form":
			fmt.Fprintf(w, head+form+`</main></body></html>`, formsURL)
		case "/fetch":
			fmt.Fprintf(w, head+form+`<script>
document.getElementById("apply").addEventListener("submit", async (e) => {
  e.preventDefault();
  const r = await fetch(e.target.action, {method: "POST", body: new FormData(e.target), headers: {"Idempotency-Key": "fetch-1"}});
  document.documentElement.dataset.status = String(r.status);
});
</script></main></body></html>`, formsURL)
		}
	}))
	t.Cleanup(site.Close)
	h := newFileHarness(t, func(c *config.Config) { c.AllowedOrigins = append(c.AllowedOrigins, site.URL) })
	formsURL = h.url
	png := filepath.Join(t.TempDir(), "portrait.png")
	if err := os.WriteFile(png, pngBytes, 0o600); err != nil {
		t.Fatal(err)
	}

	ctx := testbrowser.New(t)
	testbrowser.Do(t, ctx, "JavaScript off", scripts(false))
	testbrowser.Do(t, ctx, "the plain form", chromedp.Navigate(site.URL+"/form"), chromedp.SendKeys("#name", "Ada"),
		chromedp.SetUploadFiles("#cv", []string{png}), chromedp.Click("#send"))
	waitLocation(t, ctx, h.url+"/f/apply")
	if text := testbrowser.Get(t, ctx, "the thank-you page", chromedp.Text("main")); !strings.Contains(text, "Thank you") {
		t.Fatalf("the answer page: %s", text)
	}
	checkPage(t, ctx, "the thank-you page", h.url+"/f/apply")

	testbrowser.Do(t, ctx, "scripts on", scripts(true))
	testbrowser.Do(t, ctx, "the fetch form", chromedp.Navigate(site.URL+"/fetch"), chromedp.SendKeys("#name", "Grace"),
		chromedp.SetUploadFiles("#cv", []string{png}), chromedp.Click("#send"))
	var status string
	testwait.For(t, 10*time.Second, "the fetch's answer", func() bool {
		v, ok := testbrowser.TryGet(ctx, chromedp.AttributeValue("html", "data-status"))
		status = v.Value
		return ok && v.Exists
	})
	if status != "201" {
		t.Fatalf("fetch answered %s", status)
	}
	recs := storedForm(t, h.harness, "apply")
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	for i, want := range []string{"Ada", "Grace"} {
		f := recs[i].Files
		if recs[i].Fields.Get("name") != want || len(f) != 1 || f[0].Name != "portrait.png" || f[0].Type != "image/png" ||
			!bytes.Equal(h.object(f[0].Key), pngBytes) {
			t.Errorf("record %d: %+v", i, recs[i])
		}
	}
}
