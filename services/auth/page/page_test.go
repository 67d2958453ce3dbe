package page_test

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/services/auth/page"
)

var styleElement = regexp.MustCompile(`(?s)<style>(.*?)</style>`)

// The page is styled under a CSP without 'unsafe-inline' only if the hash in style-src is the hash of the
// exact text of its <style> element as rendered (a browser hashes that text, whitespace included).
func TestRender_StyleHashInCSPMatchesTheRenderedStyleElement(t *testing.T) {
	r := page.New()
	pages := map[string]func(w http.ResponseWriter){
		"signin": func(w http.ResponseWriter) { r.RenderSignIn(w, http.StatusOK, page.SignIn{SelfSignup: true}, nil) },
		"error": func(w http.ResponseWriter) {
			r.RenderError(w, http.StatusBadRequest, page.Error{Title: "t", Message: "m"})
		},
		"logout":    func(w http.ResponseWriter) { r.RenderLogout(w, page.Logout{Action: "/oauth2/logout"}, nil) },
		"signedout": func(w http.ResponseWriter) { r.RenderSignedOut(w) },
	}
	for name, render := range pages {
		rec := httptest.NewRecorder()
		render(rec)
		m := styleElement.FindAllStringSubmatch(rec.Body.String(), -1)
		if len(m) != 1 || strings.TrimSpace(m[0][1]) == "" {
			t.Fatalf("%s: want one non-empty <style> element, got %d", name, len(m))
		}
		h := sha256.Sum256([]byte(m[0][1]))
		want := "style-src 'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "';"
		csp := rec.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, want) {
			t.Errorf("%s: CSP %q does not allow the page's own style (want %q)", name, csp, want)
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(rec.Body.String(), " style=") {
			t.Errorf("%s: inline styles outside the hashed element, or unsafe-inline", name)
		}
	}
}

// form-action lists origins taken from registered redirect URIs; an entry that could end the directive
// or add a source expression must never reach the header.
func TestRender_FormActionsCannotWidenTheCSP(t *testing.T) {
	rec := httptest.NewRecorder()
	page.New().RenderSignIn(rec, http.StatusOK, page.SignIn{}, []string{
		"https://app.example",
		"https://a.example; script-src *",
		"https://b.example 'unsafe-inline'",
		"https://c.example,https://d.example",
		`https://e.example"`,
		"",
	})
	csp := rec.Header().Get("Content-Security-Policy")
	if !strings.Contains(csp, "form-action 'self' https://app.example;") {
		t.Fatalf("CSP %q: want form-action 'self' https://app.example", csp)
	}
	for _, bad := range []string{"script-src", "unsafe-inline", "a.example", "b.example", "c.example", "e.example"} {
		if strings.Contains(csp, bad) {
			t.Errorf("CSP %q carries %q from a hostile form action", csp, bad)
		}
	}
}

// The request's own values (the e-mail typed, the client's name, the authorization request in the form's
// action) are escaped for their context: no markup of theirs reaches the page.
func TestRenderSignIn_EscapesRequestValues(t *testing.T) {
	rec := httptest.NewRecorder()
	page.New().RenderSignIn(rec, http.StatusUnauthorized, page.SignIn{
		Action:     `/oauth2/authorize?state="><script>alert(1)</script>`,
		ClientName: `<img src=x onerror=alert(2)>`,
		Email:      `"><svg onload=alert(3)>`,
		Error:      "Wrong e-mail address or password.",
	}, nil)
	body := rec.Body.String()
	for _, raw := range []string{"<script", "<img", "<svg", `"><`} {
		if strings.Contains(body, raw) {
			t.Errorf("rendered page carries %q unescaped", raw)
		}
	}
	if rec.Code != http.StatusUnauthorized || !strings.Contains(body, `aria-describedby="signin-error"`) {
		t.Fatalf("status %d; the error must be tied to the fields", rec.Code)
	}
}
