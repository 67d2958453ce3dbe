package auth_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"
)

// cancelForm is the hosted page's decline form: its own form (nothing typed into the sign-in form is
// sent with it), after the sign-in form, with the same CSRF token.
func cancelForm(t *testing.T, base, body string) pageForm {
	t.Helper()
	fs := forms(t, base, body)
	if fs[0].fields.Get("action") != "signin" {
		t.Fatalf("the first form is %q, want the sign-in form", fs[0].fields.Get("action"))
	}
	for _, f := range fs {
		if f.fields.Get("action") == "cancel" {
			if f.fields.Get("csrf_token") == "" || f.fields.Get("csrf_token") != fs[0].fields.Get("csrf_token") {
				t.Fatalf("the cancel form's CSRF token %q differs from the sign-in form's", f.fields.Get("csrf_token"))
			}
			return f
		}
	}
	t.Fatalf("no cancel form on the sign-in page:\n%.1500s", body)
	return pageForm{}
}

func TestAuthorize_Cancel_RedirectsAccessDeniedWithState(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	b := newBrowser(t)
	state := `cancel a b+c/d?e=f&g%h;ü"<>` + "ẞ"
	page := b.get(p.authorizeURL(state, oauth2.GenerateVerifier()))
	if page.StatusCode != http.StatusOK {
		t.Fatalf("authorize page: %d", page.StatusCode)
	}
	if !strings.Contains(page.body, `<button type="submit" class="secondary">Cancel</button>`) {
		t.Fatal("the page lacks the Cancel button")
	}
	f := cancelForm(t, p.base, page.body)

	// The same CSRF protection as signing in: no token, a wrong one, another site's Origin, or the token
	// without its cookie get the page again with 403, never a redirect.
	submit := func(c *browser, token string, header ...string) response {
		form := url.Values{"action": {"cancel"}}
		if token != "" {
			form.Set("csrf_token", token)
		}
		return c.postForm(f.action, form, header...)
	}
	token := f.fields.Get("csrf_token")
	for name, res := range map[string]response{
		"missing":        submit(b, ""),
		"wrong":          submit(b, strings.Repeat("A", 43)),
		"cross-origin":   submit(b, token, "Origin", "https://evil.example"),
		"opaque origin":  submit(b, token, "Origin", "null"),
		"without cookie": submit(newBrowser(t), token),
	} {
		if res.StatusCode != http.StatusForbidden || res.Header.Get("Location") != "" || !strings.Contains(res.body, "expired") {
			t.Fatalf("%s CSRF token: want 403 page without redirect, got %d %q", name, res.StatusCode, res.Header.Get("Location"))
		}
	}

	// The real form, as a browser sends it: back to the client with access_denied and the state.
	res := b.postForm(f.action, f.fields, "Origin", p.base)
	authorizeError(t, res, p.redirect, "access_denied", state)
	loc, _ := url.Parse(res.Header.Get("Location"))
	if d := loc.Query().Get("error_description"); !strings.Contains(d, "cancelled") {
		t.Errorf("error_description %q does not say the user cancelled", d)
	}
	if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", cc)
	}
	for _, c := range res.Cookies() {
		if strings.HasSuffix(c.Name, "fs_session") {
			t.Fatalf("declining started a session: %+v", c)
		}
	}
	// Nobody was signed in: the browser still has no provider session.
	again := b.get(p.authorizeURL("state-after-cancel", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("prompt", "none")))
	authorizeError(t, again, p.redirect, "login_required", "state-after-cancel")

	// The page's other answers still lead to a working sign-in.
	verifier := oauth2.GenerateVerifier()
	page = b.get(p.authorizeURL("state-then-signin", verifier))
	code, _ := codeFrom(t, b.signIn(p.base, page.body, testEmail, testPassword), p.redirect)
	if tk := p.exchange(code, verifier); tk.status != http.StatusOK {
		t.Fatalf("sign-in after a cancel: %d %s", tk.status, tk.Error)
	}

	metrics := b.get(p.base + "/metrics")
	if want := `formsservice_auth_signins_total{result="cancelled"} 1`; !strings.Contains(metrics.body, want) {
		t.Errorf("metrics lack %s", want)
	}
}

func TestAuthorize_Cancel_SignedInBrowserKeepsItsSession(t *testing.T) {
	// prompt=login shows the form to a signed-in browser; declining there must not end the session the
	// browser already has (that is what sign-out is for).
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	_, b := p.fullSignIn(testEmail, testPassword)
	page := b.get(p.authorizeURL("state-relogin", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("prompt", "login")))
	f := cancelForm(t, p.base, page.body)
	authorizeError(t, b.postForm(f.action, f.fields), p.redirect, "access_denied", "state-relogin")
	codeFrom(t, b.get(p.authorizeURL("state-still", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("prompt", "none"))), p.redirect)
}
