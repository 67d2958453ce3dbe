package auth_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/platform/config"
)

// "Sign out of every other browser" on the account page, in one step: every other browser's session and
// the grants started in it end, as "Sign out" ends one, and so does their device cookie (a guess from
// one of them counts against the account's unknown browsers' budget); this browser stays signed in, with
// its grant and its device cookie's ID. Another user's browser is not touched. Like every form of the
// page it needs the CSRF token and the page's origin, and it is audited.
func TestAccountPage_SignOutOfEveryOtherBrowser_ThisOneStays(t *testing.T) {
	p := startProvider(t, setup{mutate: func(c *config.Config) {
		c.Auth.Throttle = config.Throttle{DeviceFailures: 10, AccountFailures: 2, IPFailures: 100, Window: config.Duration(time.Minute)}
	}})
	ada := p.user(testEmail, testPassword)
	p.user("eve@example.com", testPassword)
	mineTokens, mine := p.fullSignIn(testEmail, testPassword)
	otherTokens, other := p.fullSignIn(testEmail, testPassword)
	laptopTokens, laptop := p.fullSignIn(testEmail, testPassword)
	eveTokens, eve := p.fullSignIn("eve@example.com", testPassword)
	mineDevice, otherDevice := deviceCookieID(mine, p.base), deviceCookieID(other, p.base)
	if mineDevice == "" || otherDevice == "" {
		t.Fatalf("device cookies after a sign-in: %q %q", mineDevice, otherDevice)
	}

	acct := mine.follow(p.base, p.base+"/account")
	var endOthers pageForm
	for _, f := range forms(t, p.base, acct.body) {
		if strings.HasSuffix(f.action, "/account/sessions/end-others") {
			endOthers = f
		}
	}
	if endOthers.action == "" || !strings.Contains(acct.body, ">Sign out of every other browser</button>") {
		t.Fatalf("no \"Sign out of every other browser\" on the page with three browsers:\n%.3000s", acct.body)
	}
	if eveAcct := eve.follow(p.base, p.base+"/account"); strings.Contains(eveAcct.body, "/account/sessions/end-others") {
		t.Error("the page offers to sign out other browsers where there is none")
	}

	// Without the CSRF token, or from another origin: 403, nothing ended.
	if res := mine.postForm(endOthers.action, url.Values{}); res.StatusCode != http.StatusForbidden {
		t.Errorf("without the CSRF token: %d", res.StatusCode)
	}
	if res := mine.postForm(endOthers.action, endOthers.fields, "Origin", "https://evil.example"); res.StatusCode != http.StatusForbidden {
		t.Errorf("from another origin: %d", res.StatusCode)
	}
	if res := other.get(p.base + "/account"); res.StatusCode != http.StatusOK { // (no code asked for: it would add a grant)
		t.Fatalf("a refused form signed a browser out: %d", res.StatusCode)
	}

	res := mine.postForm(endOthers.action, endOthers.fields)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/account?done=others" {
		t.Fatalf("sign out of every other browser: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	for name, b := range map[string]*browser{"other": other, "laptop": laptop} {
		if !p.signedOut(b) {
			t.Errorf("the %s browser is still signed in", name)
		}
	}
	for name, tk := range map[string]tokens{"other": otherTokens, "laptop": laptopTokens} {
		if r := p.refresh(tk.RefreshToken); r.status != http.StatusBadRequest || r.Error != "invalid_grant" {
			t.Errorf("the %s browser's grant refreshed: %d %s", name, r.status, r.Error)
		}
	}
	for name, tk := range map[string]tokens{"this browser's": mineTokens, "Eve's": eveTokens} {
		if r := p.refresh(tk.RefreshToken); r.status != http.StatusOK {
			t.Errorf("%s grant ended: %d %s", name, r.status, r.Error)
		}
	}
	if p.signedOut(eve) {
		t.Error("Eve's browser was signed out")
	}
	page := mine.get(p.base + "/account?done=others")
	if page.StatusCode != http.StatusOK || !strings.Contains(page.body, "Every other browser was signed out") ||
		strings.Count(page.body, `name="session"`) != 1 || strings.Contains(page.body, "/account/sessions/end-others") {
		t.Fatalf("this browser's account page after it: %d\n%.3000s", page.StatusCode, page.body)
	}
	if p.signedOut(mine) {
		t.Fatal("this browser was signed out")
	}
	if got := deviceCookieID(mine, p.base); got != mineDevice {
		t.Errorf("this browser's device cookie ID %q, want %q kept", got, mineDevice)
	}

	// The other browser's device cookie is over: its guesses use up the unknown browsers' budget of 2,
	// and the third waits; this browser, still known, signs in meanwhile.
	guess := func(b *browser, password string) response {
		page := b.get(p.authorizeURL("state-others-0123", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("prompt", "login")))
		return b.signIn(p.base, page.body, testEmail, password)
	}
	var last response
	for i := range 3 {
		last = guess(other, "a guess "+string(rune('a'+i)))
	}
	if last.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the third guess from a browser signed out by the others' sign-out: %d, want 429 (its device cookie kept a budget of its own)", last.StatusCode)
	}
	if res := guess(mine, testPassword); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("this browser's sign-in while the unknown browsers' budget is used up: %d", res.StatusCode)
	}

	var evs []audit.Event
	for _, e := range trail(t, p) {
		if e.Kind == audit.OtherSessionsEnded {
			evs = append(evs, e)
		}
	}
	if len(evs) != 1 || evs[0].User != ada || evs[0].Outcome != audit.Success || evs[0].Client != "formsservice-account" ||
		evs[0].Detail["sessions"] != "2" || evs[0].Detail["grants"] != "2" {
		t.Fatalf("audit: %+v, want one %s of 2 sessions and 2 grants", evs, audit.OtherSessionsEnded)
	}
}
