package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/test/signin"
)

// TestOIDCClientTS is oidc-client-ts (the version in package-lock.json, its browser bundle) in headless
// Chromium, served from the app's own origin: a public client with PKCE, calling the token, userinfo
// and revocation endpoints cross-origin (CORS) as a single-page app does. The person signs in on the
// hosted page with the browser's keyboard. oidc-client-ts checks the ID token's claims (nonce, sub
// against userinfo) but, by its design, not its signature.
func TestOIDCClientTS(t *testing.T) {
	nodeWith(t, "oidc-client-ts") // the bundle comes from node_modules
	app := listen(t)
	origin := "http://" + app.Addr().String()
	p := startProvider(t, config.OAuthClient{
		ClientID: "spa", Name: "Single-page app",
		RedirectURIs: []string{origin + "/callback", origin + "/silent"}, PostLogoutRedirectURIs: []string{origin + "/signed-out"},
	})
	serveSPA(t, app, map[string]any{
		"authority":                p.Issuer,
		"client_id":                "spa",
		"redirect_uri":             origin + "/callback",
		"silent_redirect_uri":      origin + "/silent",
		"post_logout_redirect_uri": origin + "/signed-out",
		"scope":                    "openid profile email offline_access",
		"loadUserInfo":             true,
	})
	b := newChromium(t)

	// In the app: start the sign-in; the browser goes to the hosted page.
	b.open(origin + "/")
	b.eval(`um.signinRedirect({state: "x"}).then(() => "navigating")`)
	b.signIn()
	b.waitFor(origin + "/callback")
	user := b.evalJSON(`um.signinRedirectCallback().then(u => ({sub: u.profile.sub, email: u.profile.email,
		name: u.profile.name, access: u.access_token, refresh: u.refresh_token,
		id: u.id_token, scope: u.scope, state: u.state, userinfo: fetched.filter(f => f.endsWith("/oauth2/userinfo")).length}))`)
	if user["email"] != email || user["name"] != userName || user["refresh"] == "" || user["id"] == "" || user["state"] != "x" ||
		user["userinfo"] != 1.0 {
		t.Fatalf("signed-in user: %v", user)
	}

	// Refresh with rotation (signinSilent uses the refresh token when there is one).
	// The library checks the new ID token against the old (sub, auth_time) and calls userinfo again.
	rotated := b.evalJSON(`um.signinSilent().then(u => ({sub: u.profile.sub, access: u.access_token, refresh: u.refresh_token,
		userinfo: fetched.filter(f => f.endsWith("/oauth2/userinfo")).length, token: fetched.filter(f => f.endsWith("/oauth2/token")).length}))`)
	if rotated["sub"] != user["sub"] || rotated["refresh"] == user["refresh"] || rotated["access"] == user["access"] ||
		rotated["userinfo"] != 2.0 || rotated["token"] != 2.0 {
		t.Fatalf("after signinSilent: %v, before: %v", rotated, user)
	}

	// Silent sign-in in a hidden iframe (prompt=none), the way an app without a refresh token renews:
	// the provider answers at once with a code for the signed-in browser.
	silent := b.evalJSON(`um.signinSilent({forceIframeAuth: true}).then(u => ({sub: u.profile.sub, access: u.access_token}))`)
	if silent["sub"] != user["sub"] || silent["access"] == rotated["access"] || silent["access"] == "" {
		t.Fatalf("after a silent sign-in in an iframe: %v", silent)
	}

	// Revocation of both tokens (RFC 7009); then the revoked refresh token, put back in the store as an
	// app that kept it would, no longer renews.
	b.eval(`um.getUser().then(u => { sessionStorage.setItem("kept", u.toStorageString()); return um.revokeTokens(); }).then(() => "revoked")`)
	if e := b.evalError(`um.storeUser(oidc.User.fromStorageString(sessionStorage.getItem("kept"))).then(() => um.signinSilent())`); e != "invalid_grant" {
		t.Fatalf("signinSilent with a revoked refresh token: %q, want invalid_grant", e)
	}

	// Error path: a wrong PKCE verifier. The browser is still signed in, so authorize answers at once;
	// the app's stored verifier is swapped before the library redeems the code.
	b.eval(`um.signinRedirect({state: "y"}).then(() => "navigating")`)
	b.waitFor(origin + "/callback")
	if e := b.evalError(`(() => {
		for (const k of Object.keys(localStorage)) {
			const v = JSON.parse(localStorage.getItem(k));
			if (v && v.code_verifier) { v.code_verifier = "A".repeat(43); localStorage.setItem(k, JSON.stringify(v)); }
		}
		return um.signinRedirectCallback();
	})()`); e != "invalid_grant" {
		t.Fatalf("redeeming with a wrong verifier: %q, want invalid_grant", e)
	}

	// Error path: a foreign redirect URI gets the provider's error page, never a redirect.
	for _, foreign := range []string{"http://127.0.0.1:1/callback", origin + "/callback/"} {
		b.eval(fmt.Sprintf(`um.signinRedirect({redirect_uri: %q}).then(() => "navigating")`, foreign))
		b.waitFor(p.Issuer + "/oauth2/authorize")
		if text := b.text(); !strings.Contains(text, "return address of this request is not registered") {
			t.Errorf("redirect_uri %s: the page says %q", foreign, text)
		}
		b.open(origin + "/")
	}

	// RP-initiated logout (id_token_hint from the stored user) back to the post-logout URI, whose
	// state the library checks; then the browser is signed out (prompt=none needs a sign-in).
	b.eval(`um.storeUser(oidc.User.fromStorageString(sessionStorage.getItem("kept"))).then(() => um.signoutRedirect({state: "bye"})).then(() => "navigating")`)
	b.waitFor(origin + "/signed-out")
	if out := b.evalJSON(`um.signoutRedirectCallback().then(r => ({state: r.userState, error: r.error || ""}))`); out["state"] != "bye" || out["error"] != "" {
		t.Fatalf("signoutRedirectCallback: %v", out)
	}
	b.eval(`um.signinRedirect({prompt: "none"}).then(() => "navigating")`)
	b.waitFor(origin + "/callback")
	if e := b.evalError(`um.signinRedirectCallback()`); e != "login_required" {
		t.Fatalf("prompt=none after logout: %q, want login_required", e)
	}
}

// serveSPA serves the single-page app on its own origin: one page (at /, /callback, /silent for the
// iframe and /signed-out) that loads the oidc-client-ts bundle and makes a UserManager with settings.
func serveSPA(t *testing.T, l net.Listener, settings map[string]any) {
	t.Helper()
	bundle, err := os.ReadFile(filepath.Join("node_modules", "oidc-client-ts", "dist", "browser", "oidc-client-ts.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(settings)
	// window.fetched lists the URLs the library fetched on this page, to show which endpoints it called.
	pageHTML := `<!doctype html><meta charset=utf-8><title>app</title>
<script>window.fetched = []; const f = window.fetch; window.fetch = (u, o) => { fetched.push(String(u)); return f(u, o); };</script>
<script src="/oidc-client-ts.min.js"></script>
<script>window.um = new oidc.UserManager(` + string(js) + `);
if (location.pathname === "/silent") um.signinSilentCallback();</script>
<p id=app>app</p>`
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/oidc-client-ts.min.js":
			w.Header().Set("Content-Type", "text/javascript")
			w.Write(bundle)
		case "/", "/callback", "/silent", "/signed-out":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte(pageHTML))
		default:
			http.NotFound(w, r)
		}
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
}

// chromium is one headless Chromium tab.
type chromium struct {
	t   *testing.T
	ctx context.Context
}

func newChromium(t *testing.T) *chromium {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(signin.ChromiumPath(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox, // root in CI containers; the pages are our own
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(cancel)
	// The first action starts the browser, which lives as long as that action's context.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return &chromium{t: t, ctx: ctx}
}

// step runs actions with a bound, failing the test with what the browser shows.
func (c *chromium) step(what string, actions ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		c.t.Fatalf("%s: %v\nthe browser is at %s", what, err, c.describe())
	}
}

func (c *chromium) describe() string {
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	return loc + "\n" + c.textIn(ctx)
}

func (c *chromium) textIn(ctx context.Context) string {
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	return text
}

func (c *chromium) text() string {
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	return c.textIn(ctx)
}

// open navigates to an app page and waits until the UserManager exists. The wait is waitFor's, which
// polls again when the page's JavaScript context changes under it: a poll started right after Navigate
// can still name the previous document's context and fail with "Cannot find context with specified id"
// (seen in CI, and chromedp/chromedp#890: Poll does not survive a navigation).
func (c *chromium) open(u string) {
	c.t.Helper()
	c.step("opening "+u, chromedp.Navigate(u))
	c.waitFor(u)
}

// waitFor waits until the browser has landed on a page whose URL starts with prefix and is loaded
// (on the app's pages: until the UserManager exists).
func (c *chromium) waitFor(prefix string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 20*time.Second)
	defer cancel()
	// A navigation ends a running poll; poll again on the new page until it holds. The app's pages
	// have the UserManager; the provider's pages have none.
	js := fmt.Sprintf(`location.href.startsWith(%q) && document.readyState === "complete" && (!!window.um || !document.getElementById("app"))`, prefix)
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js))
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			c.t.Fatalf("waiting for %s: %v\nthe browser is at %s", prefix, err, c.describe())
		}
	}
}

// signIn fills in the hosted sign-in page and submits it, as a person does.
func (c *chromium) signIn() {
	c.t.Helper()
	c.step("signing in on the hosted page", chromedp.WaitVisible("#email"),
		chromedp.SendKeys("#email", email), chromedp.SendKeys("#password", password), chromedp.Submit("#password"))
}

// eval runs an expression that yields a promise, and waits for it; a rejection fails the test.
func (c *chromium) eval(js string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 20*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](js, chromedp.EvalAwaitPromise)); err != nil &&
		!strings.Contains(err.Error(), "Inspected target navigated or closed") && !strings.Contains(err.Error(), "context canceled") {
		c.t.Fatalf("%s: %v\nthe browser is at %s", js, err, c.describe())
	}
}

// evalJSON runs an expression that yields a promise of an object.
func (c *chromium) evalJSON(js string) map[string]any {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](js, chromedp.EvalAwaitPromise))
	if err != nil {
		c.t.Fatalf("%s: %v\nthe browser is at %s", js, err, c.describe())
	}
	return v
}

// evalError runs an expression whose promise must reject with the library's ErrorResponse, and
// returns its OAuth error code (or the message of another error).
func (c *chromium) evalError(js string) string {
	c.t.Helper()
	return fmt.Sprint(c.evalJSON(`(` + js + `).then(() => ({code: "resolved"}), e => ({code: e.error || String(e)}))`)["code"])
}
