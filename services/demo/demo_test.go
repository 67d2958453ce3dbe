package demo

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/formsservice/formsservice/services/platform/config"
)

func newApp(t *testing.T, cfg *config.Config) *fiber.App {
	t.Helper()
	s, err := New(config.Static{C: cfg})
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New()
	for _, r := range s.Routes() {
		app.Add(r.Method, r.Path, r.Handlers...)
	}
	return app
}

func get(t *testing.T, app *fiber.App, target string) (*http.Response, string) {
	t.Helper()
	res, err := app.Test(httptest.NewRequest(http.MethodGet, target, nil))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func TestDemo_PageAndCallback_ServeThePageWithTheIssuer(t *testing.T) {
	app := newApp(t, &config.Config{PublicURL: "http://127.0.0.1:8080", Auth: config.Auth{Issuer: "http://127.0.0.1:8080"}})
	for _, p := range []string{"/demo/", "/demo/callback", "/demo/callback?code=abc&state=xyz"} {
		res, body := get(t, app, p)
		if res.StatusCode != 200 {
			t.Fatalf("%s: status %d", p, res.StatusCode)
		}
		if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			t.Errorf("%s: content type %q", p, res.Header.Get("Content-Type"))
		}
		for _, want := range []string{`data-auth-base="http://127.0.0.1:8080"`, `<script src="service-auth-client.min.js"`, `id="contact-form"`, `id="waitlist-form"`} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: page lacks %s", p, want)
			}
		}
		csp := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"script-src 'self'", "connect-src 'self' http://127.0.0.1:8080", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", p, csp, want)
			}
		}
		if res.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: the callback URL carries a code: Referrer-Policy must be no-referrer", p)
		}
	}
}

func TestDemo_IssuerFromPublicURL_IsEscaped(t *testing.T) {
	app := newApp(t, &config.Config{PublicURL: `http://x"><script>alert(1)</script>`})
	_, body := get(t, app, "/demo/")
	if strings.Contains(body, "<script>alert(1)") {
		t.Fatal("the issuer was written into the page unescaped")
	}
}

func TestDemo_Assets_ServedWithTypes(t *testing.T) {
	app := newApp(t, &config.Config{PublicURL: "http://127.0.0.1:8080"})
	for file, want := range map[string]string{
		"service-auth-client.min.js": "ServiceAuthClient",
		"service-auth-client.js":     "export",
		"app.js":                     "handleRedirectCallback",
		"app.css":                    ".field-error",
	} {
		res, body := get(t, app, "/demo/"+file)
		if res.StatusCode != 200 || !strings.Contains(body, want) {
			t.Errorf("%s: status %d, body has %q: %v", file, res.StatusCode, want, strings.Contains(body, want))
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", file)
		}
	}
	if res, _ := get(t, app, "/demo/app.css"); !strings.HasPrefix(res.Header.Get("Content-Type"), "text/css") {
		t.Errorf("app.css content type %q", res.Header.Get("Content-Type"))
	}
}

func TestDemo_UnknownFilesAndTraversal_404(t *testing.T) {
	app := newApp(t, &config.Config{PublicURL: "http://127.0.0.1:8080"})
	for _, p := range []string{"/demo/nope.js", "/demo/..%2Fembed.go", "/demo/index.html", "/demo/%2e%2e%2fgo.mod"} {
		if res, _ := get(t, app, p); res.StatusCode != 404 {
			t.Errorf("%s: status %d, want 404", p, res.StatusCode)
		}
	}
}

func TestDemo_BarePath_RedirectsToSlash(t *testing.T) {
	app := newApp(t, &config.Config{PublicURL: "http://127.0.0.1:8080"})
	res, _ := get(t, app, "/demo")
	if res.StatusCode != 302 || res.Header.Get("Location") != "/demo/" {
		t.Fatalf("status %d location %q", res.StatusCode, res.Header.Get("Location"))
	}
}

func TestDemo_Root_LeadsToTheDemoPage(t *testing.T) {
	app := newApp(t, &config.Config{PublicURL: "http://127.0.0.1:8080"})
	res, _ := get(t, app, "/")
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != "/demo/" {
		t.Fatalf("GET /: %d Location %q, want 302 to /demo/", res.StatusCode, res.Header.Get("Location"))
	}
}
