package auth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/formsservice/formsservice/internal/testbrowser"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/auth/console"
	"github.com/formsservice/formsservice/services/platform/config"
)

// The admin console (D65) in headless Chromium against a real redis-server: served at /console/ when
// auth.console.enabled, signed in through the hosted page with the SDK as the provider's own client.

// consoleProvider is a provider serving the console, with an admin (in the admin group) and a person
// who is not one.
func consoleProvider(t *testing.T) (*provider, string) {
	t.Helper()
	on := true
	p := startProvider(t, setup{mutate: func(c *config.Config) { c.Auth.Console.Enabled = &on }})
	p.user("admin@example.com", testPassword)
	if _, _, err := p.svc.Users().AddGroups(context.Background(), "admin@example.com", []string{config.DefaultAdminGroup}); err != nil {
		t.Fatal(err)
	}
	return p, p.base + "/console/"
}

// waitShown waits until the page shows sel (the console's views render after their API calls).
func (x *person) waitShown(what, sel string) {
	x.t.Helper()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.getClientRects().length > 0 })()`, sel)
	if err := testwait.Poll(30*time.Second, func() error {
		ok, done := testbrowser.TryGet(x.ctx, chromedp.Evaluate[bool](js))
		if !done || !ok {
			return errors.New("not shown yet")
		}
		return nil
	}); err != nil {
		body, _ := chromedp.Run(x.ctx, chromedp.Text("body"))
		x.t.Fatalf("%s: %s: %v; at %s the page says:\n%.1500s", what, sel, err, x.location(), body)
	}
}

// checkConsole is person.check for the console's views: axe-core (WCAG 2.2 A and AA), the non-text
// contrast check and no sideways scrolling at 320 px in light and dark mode, then a screenshot for
// docs/console.md when SCREENSHOTS names a folder (`SCREENSHOTS=$PWD/docs/img go test -run
// TestConsole_InChromium ./services/auth/`).
func (x *person) checkConsole(what, shot string) {
	x.t.Helper()
	for _, scheme := range []string{"light", "dark"} {
		w := what + " at 320 px, " + scheme
		x.do(w, testbrowser.Viewport(320, scheme))
		testbrowser.Accessible(x.t, x.ctx, w)
		testbrowser.NonTextContrast(x.t, x.ctx, w)
		if width := testbrowser.Get(x.t, x.ctx, w, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); width > 320 {
			x.t.Errorf("%s: %d px wide (scrolls sideways)", w, width)
		}
	}
	x.do(what+" at 1024 px", testbrowser.Viewport(1024, "light"))
	testbrowser.Accessible(x.t, x.ctx, what+" at 1024 px")
	if dir := os.Getenv("SCREENSHOTS"); dir != "" && shot != "" {
		png := testbrowser.Get(x.t, x.ctx, "screenshot", chromedp.FullScreenshot(100))
		if err := os.WriteFile(filepath.Join(dir, "console-"+shot+".png"), png, 0o644); err != nil {
			x.t.Fatal(err)
		}
	}
}

// An admin signs in through the hosted page, sees the overview, finds a user, reads the account's
// sessions, grants and history, disables it — and the refresh token the user's app holds is refused at
// once —, then reads the audit trail filtered to that user and the clients. Every view passes axe-core
// at 320 px in light and dark mode.
func TestConsole_InChromium_AdminDisablesAUserWhoseRefreshTokenIsRefused(t *testing.T) {
	p, home := consoleProvider(t)
	victimID := p.user("victim@example.com", testPassword)
	tk, _ := p.fullSignIn("victim@example.com", testPassword) // the user's app holds a refresh token
	if again := p.refresh(tk.RefreshToken); again.status != http.StatusOK {
		t.Fatalf("the user's refresh token before the console: %d %s", again.status, again.Error)
	} else {
		tk = again
	}

	x := &person{t: t, p: p, ctx: testbrowser.New(t)}
	x.do("opening the console", chromedp.Navigate(home))
	x.waitShown("the console signed out", "#sign-in")
	x.checkConsole("the console, signed out", "signed-out")

	x.do("sign in", chromedp.Click(chromedp.CSS("#sign-in")))
	x.signIn("admin@example.com", testPassword)
	x.waitShown("the overview", "#count-users")
	if got := x.text("the count of accounts", "#count-users"); got != "2" {
		t.Errorf("the overview counts %q accounts, want 2", got)
	}
	if got := x.text("who is signed in", "#who-email"); got != "admin@example.com" {
		t.Errorf("signed in as %q", got)
	}
	if loc := x.location(); loc != home+"#/" {
		t.Errorf("after the sign-in the console is at %s, want %s#/ (the code is gone from the URL)", loc, home)
	}
	x.checkConsole("the overview", "overview")

	x.do("the users", chromedp.Click(chromedp.CSS(`a[data-nav="users"]`)))
	x.waitShown("the users", `main[data-view="users"] table`)
	x.checkConsole("the users", "users")
	x.do("searching", chromedp.SendKeys(chromedp.CSS("#q"), "victim"), chromedp.Click(chromedp.CSS(`form[role="search"] button`)))
	x.waitShown("the search's answer", `#users[data-q="victim"] a[href="#/users/`+victimID+`"]`)
	if rows := testbrowser.Get(t, x.ctx, "rows", chromedp.Evaluate[int](`document.querySelectorAll("#users tbody tr").length`)); rows != 1 {
		t.Errorf("the search for victim shows %d accounts, want 1", rows)
	}

	x.do("the user", chromedp.Click(chromedp.CSS(`a[href="#/users/`+victimID+`"]`)))
	x.waitShown("the user's page", "#disable")
	body := x.text("the user's page", "main")
	for _, want := range []string{"victim@example.com", "Ada Lovelace", clientID, "offline_access"} {
		if !strings.Contains(body, want) {
			t.Errorf("the user's page does not show %q:\n%s", want, body)
		}
	}
	x.checkConsole("a user", "user")

	x.do("disable", chromedp.Click(chromedp.CSS("#disable")))
	x.waitShown("the user disabled", "#enable")
	if done := x.text("the outcome", ".done"); !strings.Contains(done, "Disabled.") || !strings.Contains(done, "1 grants revoked") {
		t.Errorf("after disabling, the page says %q", done)
	}
	x.checkConsole("a disabled user", "user-disabled")
	if refused := p.refresh(tk.RefreshToken); refused.status != http.StatusBadRequest || refused.Error != "invalid_grant" {
		t.Errorf("the disabled user's refresh token: %d %q, want 400 invalid_grant", refused.status, refused.Error)
	}

	// An action the API refuses is explained where it was asked for: no relay, no verification mail.
	newID := p.unverifiedUser("new@example.com", testPassword)
	x.do("an unverified user", chromedp.Evaluate[chromedp.Void](`location.hash = "#/users/`+newID+`"`))
	x.waitShown("the unverified user's page", "#send-verification")
	x.do("send the verification link", chromedp.Click(chromedp.CSS("#send-verification")))
	x.waitShown("the refusal", "#action-result .alert")
	if msg := x.text("the refusal", "#action-result"); !strings.HasPrefix(msg, "Not done: ") {
		t.Errorf("a refused action says %q", msg)
	}
	x.checkConsole("a refused action", "")
	x.do("back to the disabled user", chromedp.Evaluate[chromedp.Void](`location.hash = "#/users/`+victimID+`"`))
	x.waitShown("the disabled user's page", `a[href="#/audit?user=`+victimID+`"]`)

	x.do("the user's history", chromedp.Click(chromedp.CSS(`a[href="#/audit?user=`+victimID+`"]`)))
	x.waitShown("the audit trail of the user", "#events table")
	if trail := x.text("the trail", "#events"); !strings.Contains(trail, "user.disabled") || strings.Contains(trail, "admin@example.com") {
		t.Errorf("the trail filtered to the user:\n%s", trail)
	}
	x.checkConsole("the audit trail, filtered", "audit")

	x.do("the clients", chromedp.Click(chromedp.CSS(`a[data-nav="clients"]`)))
	x.waitShown("the clients", `main[data-view="clients"] table`)
	if list := x.text("the clients", "main"); !strings.Contains(list, clientID) {
		t.Errorf("the clients page does not list %s:\n%s", clientID, list)
	}
	x.checkConsole("the clients", "clients")

	x.do("the forms", chromedp.Click(chromedp.CSS(`a[data-nav="forms"]`)))
	x.waitShown("the forms", `main[data-view="forms"] #forms table`) // the contact form and the waitlist, empty
	x.checkConsole("the forms, empty", "")

	// An account made from the users page: verified, no password anyone knows, no mail.
	x.do("the users again", chromedp.Click(chromedp.CSS(`a[data-nav="users"]`)))
	x.waitShown("the users", `main[data-view="users"] #create summary`)
	x.do("create an account", chromedp.Click(chromedp.CSS("#create summary")), chromedp.SendKeys(chromedp.CSS("#new-email"), "grace@example.com"),
		chromedp.SendKeys(chromedp.CSS("#new-name"), "Grace Hopper"))
	x.checkConsole("the form of a new account", "")
	x.do("create", chromedp.Click(chromedp.CSS(`#create button[type="submit"]`)))
	x.waitShown("the new account", `main[data-view="users-user"] .done`)
	if h := x.text("the new account", "h1"); h != "grace@example.com" {
		t.Errorf("after creating, the page is about %q", h)
	}
	if u, err := p.svc.Users().ByEmail(context.Background(), "grace@example.com"); err != nil || !u.EmailVerified || u.Name != "Grace Hopper" {
		t.Errorf("the created account: %+v %v", u, err)
	}
	x.checkConsole("a created account", "")

	// Deleted again, behind a second click.
	x.do("delete it", chromedp.Click(chromedp.CSS(`main details summary`)))
	x.checkConsole("the deletion asked for", "")
	x.do("delete for good", chromedp.Click(chromedp.CSS("#delete")))
	x.waitShown("the users after the deletion", `main[data-view="users"] #users table`)
	if list := x.text("the users", "#users"); strings.Contains(list, "grace@example.com") {
		t.Errorf("the deleted account is still listed:\n%s", list)
	}
	if _, err := p.svc.Users().ByEmail(context.Background(), "grace@example.com"); err == nil {
		t.Error("the deleted account is still there")
	}

	// Sign out: the provider's session ends and the console is back, signed out.
	x.do("sign out", chromedp.Click(chromedp.CSS("#sign-out")))
	x.waitShown("the console signed out again", "#sign-in")
	if loc := x.location(); !strings.HasPrefix(loc, home) {
		t.Errorf("after signing out the browser is at %s", loc)
	}
}

// A person outside the admin group signs in and is told, in their language, why the console shows
// nothing, with the group to ask for; the admin API refused every call behind it.
func TestConsole_InChromium_RefusesAPersonOutsideTheAdminGroup(t *testing.T) {
	p, home := consoleProvider(t)
	p.user("someone@example.com", testPassword)
	x := &person{t: t, p: p, ctx: testbrowser.New(t)}
	x.do("opening the console in German", acceptLanguage("de-DE,de;q=0.9"), chromedp.Navigate(home))
	x.waitShown("the console signed out", "#sign-in")
	if got := x.text("the button", "#sign-in"); got != "Anmelden" {
		t.Errorf("the German console's button says %q", got)
	}
	x.checkConsole("the console in German, signed out", "")
	x.do("sign in", chromedp.Click(chromedp.CSS("#sign-in")))
	x.signIn("someone@example.com", testPassword)
	x.waitShown("the refusal", `main[data-view="refused"]`)
	msg := x.text("the refusal", "main")
	for _, want := range []string{"Kein Zugang zur Konsole", "someone@example.com", config.DefaultAdminGroup} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, msg)
		}
	}
	if nav := testbrowser.Get(t, x.ctx, "the navigation", chromedp.Evaluate[bool](`document.getElementById("nav").hidden`)); !nav {
		t.Error("the refused person sees the console's navigation")
	}
	x.checkConsole("the refusal", "refused")
}

// Off unless configured: no page, no files, no client.
func TestConsole_OffByDefault(t *testing.T) {
	p := startProvider(t, setup{})
	for _, path := range []string{"/console/", "/console/callback", "/console/assets/console.js"} {
		res, err := http.Get(p.base + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s with the console off: %d, want 404", path, res.StatusCode)
		}
	}
	b := newBrowser(t)
	res := b.get(p.base + "/oauth2/authorize?response_type=code&client_id=formsservice-console&redirect_uri=" + p.base + "/console/callback&code_challenge=" + strings.Repeat("a", 43) + "&code_challenge_method=S256&scope=openid")
	if res.StatusCode == http.StatusOK || res.StatusCode == http.StatusFound || res.StatusCode == http.StatusSeeOther {
		t.Errorf("the console's client signs in with the console off: %d", res.StatusCode)
	}
}

// On: the page, its files and the SDK under the CSP, in the browser's language.
func TestConsole_ServesItsFilesUnderItsCSP(t *testing.T) {
	_, home := consoleProvider(t)
	for path, ctype := range map[string]string{
		"":                                  "text/html; charset=utf-8",
		"callback?code=x&state=y":           "text/html; charset=utf-8",
		"assets/console.js":                 "text/javascript; charset=utf-8",
		"assets/console.css":                "text/css; charset=utf-8",
		"assets/service-auth-client.min.js": "text/javascript; charset=utf-8",
	} {
		res, err := http.Get(home + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != ctype || res.Header.Get("Content-Security-Policy") != console.CSP ||
			res.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: %d %q CSP %q", path, res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Content-Security-Policy"))
		}
	}
	for _, path := range []string{"assets/nothing.js", "assets/../../oauth2/token"} {
		if code := newBrowser(t).get(home + path).StatusCode; code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, code)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, home, nil)
	req.Header.Set("Accept-Language", "de-AT")
	page := newBrowser(t).do(req).body
	if !strings.Contains(page, `<html lang="de">`) || !strings.Contains(page, "<title>Konsole</title>") || !strings.Contains(page, `"lang":"de"`) {
		t.Errorf("the console for de-AT is not German:\n%.600s", page)
	}
}
