package auth_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testbrowser"
	"github.com/formsservice/formsservice/internal/testmail"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/auth/acr"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/mfa"
	"github.com/formsservice/formsservice/services/auth/passkey"
	"github.com/formsservice/formsservice/services/platform/config"
)

// passkeyProvider is a provider whose issuer is http://localhost:<port> (WebAuthn needs a host name as
// RP ID; Chromium treats localhost as a secure context), sending its mail to a real SMTP server.
type passkeyProvider struct {
	*provider
	issuer string
	mail   *testmail.Server
	logs   *syncBuffer
}

// syncBuffer is a log the service writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startPasskeyProvider(t *testing.T, mutate func(*config.Config)) *passkeyProvider {
	t.Helper()
	mp := testmail.Start(t, testmail.Options{})
	pp := &passkeyProvider{mail: mp, logs: &syncBuffer{}}
	pp.provider = startProvider(t, setup{mail: mp, logs: pp.logs, mutate: func(c *config.Config) {
		u, _ := url.Parse(c.PublicURL)
		pp.issuer = "http://localhost:" + u.Port()
		c.Auth.Issuer = pp.issuer
		c.Auth.Passkeys.RPName = "Acme"
		if mutate != nil {
			mutate(c)
		}
	}})
	pp.user(testEmail, testPassword)
	return pp
}

// authorizeAt is an authorization request to the page at origin (the issuer, or another origin that
// leads to the same server).
func (p *passkeyProvider) authorizeAt(origin, state, verifier string) string {
	return strings.Replace(p.authorizeURL(state, verifier), p.base, origin, 1)
}

// virtualAuthenticator adds a platform authenticator that keeps discoverable credentials and verifies
// the user, as a phone's or laptop's does; synced sets the backup flags of a synced passkey.
func virtualAuthenticator(t *testing.T, ctx context.Context, synced bool) webauthn.AuthenticatorID {
	t.Helper()
	res, err := chromedp.Call(ctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
		Protocol: webauthn.AuthenticatorProtocolCtap2, Ctap2version: webauthn.Ctap2versionCtap21, Transport: webauthn.AuthenticatorTransportInternal,
		HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true,
		DefaultBackupEligibility: synced, DefaultBackupState: synced,
	}})
	if err != nil {
		t.Fatalf("WebAuthn.addVirtualAuthenticator: %v", err)
	}
	return res.AuthenticatorID
}

func removeAuthenticator(t *testing.T, ctx context.Context, id webauthn.AuthenticatorID) {
	t.Helper()
	if _, err := chromedp.Call(ctx, webauthn.RemoveVirtualAuthenticator, webauthn.RemoveVirtualAuthenticatorParams{AuthenticatorID: id}); err != nil {
		t.Fatal(err)
	}
}

// addCredential puts a copy of c (as getCredentials returned it) into an authenticator. The parameters
// are written by hand: cdproto always sends generateCmtgKeyOnNextOperation, which Chromium 156 refuses
// for authenticators without that extension.
func addCredential(t *testing.T, ctx context.Context, id webauthn.AuthenticatorID, c *webauthn.Credential) {
	t.Helper()
	cmd := cdp.Command[map[string]any, cdp.Empty]{Method: webauthn.CommandAddCredential}
	_, err := chromedp.Call(ctx, cmd, map[string]any{"authenticatorId": id, "credential": map[string]any{
		"credentialId": base64.StdEncoding.EncodeToString(c.CredentialID), "isResidentCredential": c.IsResidentCredential,
		"rpId": c.RpID, "privateKey": base64.StdEncoding.EncodeToString(c.PrivateKey),
		"userHandle": base64.StdEncoding.EncodeToString(c.UserHandle), "signCount": c.SignCount,
		"backupEligibility": c.BackupEligibility, "backupState": c.BackupState,
	}})
	if err != nil {
		t.Fatalf("WebAuthn.addCredential: %v", err)
	}
}

func credentials(t *testing.T, ctx context.Context, id webauthn.AuthenticatorID) []*webauthn.Credential {
	t.Helper()
	res, err := chromedp.Call(ctx, webauthn.GetCredentials, webauthn.GetCredentialsParams{AuthenticatorID: id})
	if err != nil {
		t.Fatal(err)
	}
	return res.Credentials
}

// each runs check on the current page at 320 px in light and dark mode: axe-core (WCAG 2.2 AA), the
// non-text contrast axe-core leaves out (fields, buttons, focus rings) and no sideways scrolling.
func accessibleAt320(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	for _, scheme := range []string{"light", "dark"} {
		w := fmt.Sprintf("%s (320 px, %s)", what, scheme)
		testbrowser.Do(t, ctx, w, testbrowser.Viewport(320, scheme))
		testbrowser.Accessible(t, ctx, w)
		testbrowser.NonTextContrast(t, ctx, w)
		if width := testbrowser.Get(t, ctx, w, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); width > 320 {
			t.Errorf("%s: the page is %d px wide", w, width)
		}
	}
}

// screenshot saves the page for the docs when FORMSSERVICE_SCREENSHOTS names a folder.
func screenshot(t *testing.T, ctx context.Context, name string) {
	dir := os.Getenv("FORMSSERVICE_SCREENSHOTS")
	if dir == "" {
		return
	}
	testbrowser.Do(t, ctx, "screenshot", testbrowser.Viewport(420, "light"))
	png := testbrowser.Get(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return testbrowser.Get(t, ctx, "text of "+sel, chromedp.Text(chromedp.CSS(sel)))
}

// waitURL waits until the browser has navigated to a URL with prefix and returns it.
func waitURL(t *testing.T, ctx context.Context, prefix string) string {
	t.Helper()
	var loc string
	testwait.For(t, 30*time.Second, "the browser at "+prefix, func() bool {
		got, ok := testbrowser.TryGet(ctx, chromedp.Location())
		loc = got
		return ok && strings.HasPrefix(loc, prefix)
	})
	return loc
}

// signOutBrowser forgets every cookie: the next authorize shows the sign-in page.
func signOutBrowser(t *testing.T, ctx context.Context) {
	t.Helper()
	if _, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
}

// idTokenClaims exchanges the code in a redirect for tokens and returns the ID token's claims.
func (p *passkeyProvider) idTokenClaims(t *testing.T, redirect, verifier string) map[string]any {
	t.Helper()
	u, _ := url.Parse(redirect)
	tk := p.exchange(u.Query().Get("code"), verifier)
	if tk.status != http.StatusOK {
		t.Fatalf("exchange: %d %s", tk.status, tk.Error)
	}
	return jwtClaims(t, tk.IDToken)
}

func amrOf(claims map[string]any) []string {
	var out []string
	list, _ := claims["amr"].([]any)
	for _, v := range list {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

// passwordSignIn signs in on the hosted page in the browser with the password.
func (p *passkeyProvider) passwordSignIn(t *testing.T, ctx context.Context) string {
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	testbrowser.Do(t, ctx, "sign-in page", chromedp.Navigate(p.authorizeAt(p.issuer, "state-password", verifier)),
		chromedp.WaitVisible(chromedp.CSS("#password")),
		chromedp.SendKeys(chromedp.CSS("#email"), testEmail), chromedp.SendKeys(chromedp.CSS("#password"), testPassword),
		chromedp.Click(chromedp.CSS(`form button[type=submit]`)))
	return p.idTokenClaims(t, waitURL(t, ctx, p.redirect+"?"), verifier)["sub"].(string)
}

// addPasskey adds a passkey named name on the passkeys page and waits for the list to show it.
func (p *passkeyProvider) addPasskey(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	testbrowser.Do(t, ctx, "add "+name, chromedp.Navigate(p.issuer+"/account/passkeys"),
		chromedp.WaitVisible(chromedp.CSS("#passkey-add")),
		chromedp.SendKeys(chromedp.CSS("#passkey-name"), name), chromedp.SendKeys(chromedp.CSS("#passkey-password"), testPassword),
		chromedp.Click(chromedp.CSS("#passkey-add button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS(".notice")))
	if !strings.Contains(text(t, ctx, ".passkeys"), name) {
		t.Fatalf("the list does not show %q: %s", name, text(t, ctx, "main"))
	}
}

// passkeySignIn starts an authorization at origin in a signed-out browser and presses "Sign in with a
// passkey".
func (p *passkeyProvider) passkeySignIn(t *testing.T, ctx context.Context, origin, verifier string) {
	t.Helper()
	signOutBrowser(t, ctx)
	testbrowser.Do(t, ctx, "passkey sign-in", chromedp.Navigate(p.authorizeAt(origin, "state-passkey", verifier)),
		chromedp.WaitVisible(chromedp.CSS("#passkey-signin-button")),
		chromedp.Click(chromedp.CSS("#passkey-signin-button")))
}

// refusedOnPage waits for the sign-in page's passkey error after a refused passkey.
func refusedOnPage(t *testing.T, ctx context.Context, what string) string {
	t.Helper()
	testbrowser.Do(t, ctx, what, chromedp.WaitVisible(chromedp.CSS("#passkey-error")))
	if loc := testbrowser.Get(t, ctx, "location", chromedp.Location()); !strings.Contains(loc, "/oauth2/authorize") {
		t.Fatalf("%s: the browser is at %s, want the sign-in page", what, loc)
	}
	return text(t, ctx, "#passkey-error")
}

// withoutAutofill makes the browser one whose autofill offers no passkeys (conditional mediation
// unavailable), so that only the button asks for one. Chromium's virtual authenticator answers a
// conditional request at once, as if the person had picked the passkey from the autofill.
func withoutAutofill(t *testing.T, ctx context.Context) {
	t.Helper()
	_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: `if (window.PublicKeyCredential) { PublicKeyCredential.isConditionalMediationAvailable = () => Promise.resolve(false); }`})
	if err != nil {
		t.Fatal(err)
	}
}

// otherOrigin serves the same provider on another origin of the same RP ID (http://localhost:<another
// port>), as a sibling site or another port of the host could: the browser lets it use the RP ID.
func otherOrigin(t *testing.T, base string) string {
	t.Helper()
	target, _ := url.Parse(base)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host
	}}, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://localhost:" + strings.TrimPrefix(ln.Addr().String(), "127.0.0.1:")
}

// wantEvent finds an audit event of kind, outcome and reason ("": any) of the user in the trail the
// provider stored in Redis, naming the client address, and returns it.
func (p *passkeyProvider) wantEvent(t *testing.T, kind audit.Kind, outcome audit.Outcome, reason, user string) audit.Event {
	t.Helper()
	evs := trail(t, p.provider)
	for _, e := range evs {
		if e.Kind == kind && e.Outcome == outcome && (reason == "" || e.Reason == reason) && e.User == user {
			if e.Addr == "" || e.UserAgent == "" {
				t.Errorf("%s %s: no client address or user agent in %+v", kind, outcome, e)
			}
			return e
		}
	}
	t.Errorf("no %s %s event (reason %q) of user %q in the audit trail: %+v", kind, outcome, reason, user, evs)
	return audit.Event{}
}

// The passkey journey in Chromium with its virtual authenticators (the DevTools WebAuthn domain), a real
// redis-server and a real SMTP server: add two named passkeys (after the password), sign in with a
// passkey alone (through the autofill and through the button), remove one, and the refusals: a removed
// passkey, a cloned authenticator, an assertion made on another origin, an authenticator that did not
// verify the person. Every page and state is checked with axe-core at 320 px, light and dark.
func TestPasskeys_InChromium_RegisterSignInRemoveCloneWrongOrigin(t *testing.T) {
	p := startPasskeyProvider(t, nil)
	ctx := testbrowser.New(t)
	if _, err := chromedp.Call(ctx, webauthn.Enable, webauthn.EnableParams{}); err != nil {
		t.Fatalf("WebAuthn.enable: %v", err)
	}

	// Not signed in: the passkeys page says to sign in first.
	testbrowser.Do(t, ctx, "passkeys page signed out", chromedp.Navigate(p.issuer+"/account/passkeys"), chromedp.WaitVisible(chromedp.CSS("h1")))
	if h := text(t, ctx, "h1"); h != "Sign in first" {
		t.Errorf("signed out, the passkeys page says %q", h)
	}
	accessibleAt320(t, ctx, "passkeys page, signed out")

	userID := p.passwordSignIn(t, ctx)
	laptop := virtualAuthenticator(t, ctx, false)

	testbrowser.Do(t, ctx, "passkeys page", chromedp.Navigate(p.issuer+"/account/passkeys"), chromedp.WaitVisible(chromedp.CSS("#passkey-add")))
	if !strings.Contains(text(t, ctx, "main"), "You have no passkeys yet.") {
		t.Errorf("empty list: %s", text(t, ctx, "main"))
	}
	accessibleAt320(t, ctx, "passkeys page, none yet")

	// A wrong password is refused before any passkey is made.
	testbrowser.Do(t, ctx, "wrong password", chromedp.SendKeys(chromedp.CSS("#passkey-name"), "Work laptop"),
		chromedp.SendKeys(chromedp.CSS("#passkey-password"), "not the password"),
		chromedp.Click(chromedp.CSS("#passkey-add button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("#passkey-error")))
	if msg := text(t, ctx, "#passkey-error"); !strings.Contains(msg, "Wrong password") {
		t.Errorf("wrong password: %q", msg)
	}
	if inv := testbrowser.Get(t, ctx, "aria-invalid", chromedp.Evaluate[string](`document.getElementById("passkey-password").getAttribute("aria-invalid") || ""`)); inv != "true" {
		t.Errorf("the password field is not marked invalid")
	}
	if n := len(credentials(t, ctx, laptop)); n != 0 {
		t.Errorf("the authenticator holds %d credentials after a refused password", n)
	}
	accessibleAt320(t, ctx, "passkeys page, wrong password")

	p.addPasskey(t, ctx, "Work laptop")
	accessibleAt320(t, ctx, "passkeys page, a passkey added")
	m := p.mail.Latest(t, testEmail, 30*time.Second)
	// Our words, with the browser it was added from; the adder's name is not in it (D69).
	if m.Subject != "A passkey was added to your Acme account" || !strings.Contains(m.Text, ", from Chrome (headless) on Linux.") ||
		!slices.Contains(m.Links(), p.issuer+"/account/passkeys") || m.HTML == "" || strings.Contains(m.Text+m.HTML, "Work laptop") {
		t.Errorf("passkey mail: subject %q, links %v, text:\n%s", m.Subject, m.Links(), m.Text)
	}
	if e := p.wantEvent(t, audit.PasskeyAdded, audit.Success, "", userID); e.Detail["passkey"] == "" || e.Detail["synced"] != "false" {
		t.Errorf("passkey.added: detail %v, want the passkey's ID and synced false", e.Detail)
	}
	p.wantEvent(t, audit.PasskeyAdded, audit.Failure, "bad_password", userID)
	saved := credentials(t, ctx, laptop)
	if len(saved) != 1 || !saved[0].IsResidentCredential || string(saved[0].UserHandle) != userID || saved[0].RpID != "localhost" {
		t.Fatalf("the authenticator holds %+v; want one discoverable credential for RP localhost with the user's ID as handle", saved)
	}

	// The same authenticator again: the browser refuses (the page excluded its credential).
	testbrowser.Do(t, ctx, "same authenticator twice", chromedp.SendKeys(chromedp.CSS("#passkey-name"), "Again"),
		chromedp.SendKeys(chromedp.CSS("#passkey-password"), testPassword),
		chromedp.Click(chromedp.CSS("#passkey-add button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("#passkey-error")))
	if msg := text(t, ctx, "#passkey-error"); !strings.Contains(msg, "already holds a passkey") {
		t.Errorf("registering one authenticator twice: %q", msg)
	}
	accessibleAt320(t, ctx, "passkeys page, this device has one already")

	// A second passkey, on a phone (synced), named.
	removeAuthenticator(t, ctx, laptop)
	phone := virtualAuthenticator(t, ctx, true)
	p.addPasskey(t, ctx, "Phone")
	screenshot(t, ctx, "passkeys-account.png")
	if got := text(t, ctx, ".passkeys"); !strings.Contains(got, "Work laptop") || !strings.Contains(got, "Phone") || !strings.Contains(got, "Synced") {
		t.Errorf("list: %s", got)
	}
	p.mail.WaitTo(t, testEmail, 2, 30*time.Second)

	// Renamed in place (a form in a disclosure, no script needed): the list shows the new name. The
	// phone's entry is found by its name, not its place: the list is in order of creation, to the
	// second, and two passkeys added within one second are ordered by their IDs.
	testbrowser.Do(t, ctx, "the phone's passkey", chromedp.Evaluate[chromedp.Void](
		`document.querySelector('.passkeys button[aria-label="Remove Phone"]').closest('li').dataset.pick = 'phone'`))
	testbrowser.Do(t, ctx, "rename", chromedp.Click(chromedp.CSS(".passkeys li[data-pick=phone] summary")),
		chromedp.WaitVisible(chromedp.CSS(".passkeys li[data-pick=phone] details input[name=name]")))
	accessibleAt320(t, ctx, "passkeys page, renaming")
	testbrowser.Do(t, ctx, "rename", chromedp.Evaluate[chromedp.Void](`document.querySelector(".passkeys li[data-pick=phone] details input[name=name]").value = ""`),
		chromedp.SendKeys(chromedp.CSS(".passkeys li[data-pick=phone] details input[name=name]"), "Pixel phone"),
		// The page being left is marked, so that its notice ("added") is not taken for the next one's.
		chromedp.Evaluate[chromedp.Void](`document.body.dataset.left = "1"`),
		chromedp.Click(chromedp.CSS(".passkeys li[data-pick=phone] details button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("body:not([data-left]) .notice")))
	if n := text(t, ctx, ".notice"); n != "The passkey was renamed." {
		t.Errorf("after renaming: notice %q", n)
	}
	if got := text(t, ctx, ".passkeys"); !strings.Contains(got, "Pixel phone") || !strings.Contains(got, "Work laptop") {
		t.Errorf("after renaming Phone to Pixel phone: %s", got)
	}
	p.wantEvent(t, audit.PasskeyRenamed, audit.Success, "", userID)

	// Sign in with the passkey alone, through the browser's autofill (conditional mediation): the
	// virtual authenticator answers the page's conditional request as a person picking the passkey would.
	verifier := oauth2.GenerateVerifier()
	signOutBrowser(t, ctx)
	testbrowser.Do(t, ctx, "autofill sign-in", chromedp.Navigate(p.authorizeAt(p.issuer, "state-autofill", verifier)))
	claims := p.idTokenClaims(t, waitURL(t, ctx, p.redirect+"?"), verifier)
	if claims["sub"] != userID || strings.Join(amrOf(claims), " ") != "pop mfa" {
		t.Errorf("autofill sign-in: sub %v amr %v, want %s and pop mfa", claims["sub"], claims["amr"], userID)
	}

	// And through the button, in a browser whose autofill offers no passkeys.
	withoutAutofill(t, ctx)
	signOutBrowser(t, ctx)
	testbrowser.Do(t, ctx, "sign-in page", chromedp.Navigate(p.authorizeAt(p.issuer, "state-page", oauth2.GenerateVerifier())),
		chromedp.WaitVisible(chromedp.CSS("#passkey-signin-button")))
	if ac := testbrowser.Get(t, ctx, "autocomplete", chromedp.Evaluate[string](`document.getElementById("email").getAttribute("autocomplete")`)); ac != "username webauthn" {
		t.Errorf("the e-mail field's autocomplete is %q, want \"username webauthn\"", ac)
	}
	accessibleAt320(t, ctx, "sign-in page with passkeys")
	screenshot(t, ctx, "passkeys-signin.png")
	snapshot := credentials(t, ctx, phone) // a copy of the phone's authenticator, made now
	verifier = oauth2.GenerateVerifier()
	p.passkeySignIn(t, ctx, p.issuer, verifier)
	claims = p.idTokenClaims(t, waitURL(t, ctx, p.redirect+"?"), verifier)
	if claims["sub"] != userID || strings.Join(amrOf(claims), " ") != "pop mfa" {
		t.Errorf("button sign-in: sub %v amr %v, want %s and pop mfa", claims["sub"], claims["amr"], userID)
	}
	if e := p.wantEvent(t, audit.SignInPasskey, audit.Success, "", userID); e.Client != clientID || e.Detail["passkey"] == "" {
		t.Errorf("signin.passkey: %+v, want the client and the passkey", e)
	}
	if after := credentials(t, ctx, phone); len(snapshot) != 1 || len(after) != 1 || after[0].SignCount <= snapshot[0].SignCount {
		t.Fatalf("the phone's counter went from %v to %v; the clone check needs a counter that goes up", snapshot, after)
	}
	// The passkey earned the browser (its cookies cleared before) a device cookie, as a password does.
	jar, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{p.issuer + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	cookies := jar.Cookies
	if !slices.ContainsFunc(cookies, func(c *network.Cookie) bool { return c.Name == "fs_device" && c.Value != "" }) {
		t.Error("a passkey sign-in set no device cookie")
	}

	// A cloned authenticator: the copy made before the last sign-in signs with a counter that does not
	// go up. Refused, recorded, and shown on the passkeys page.
	removeAuthenticator(t, ctx, phone)
	clone := virtualAuthenticator(t, ctx, true)
	addCredential(t, ctx, clone, snapshot[0])
	p.passkeySignIn(t, ctx, p.issuer, oauth2.GenerateVerifier())
	if msg := refusedOnPage(t, ctx, "cloned authenticator"); !strings.Contains(msg, "cannot be used") {
		t.Errorf("a cloned authenticator: %q", msg)
	}
	accessibleAt320(t, ctx, "sign-in page, passkey refused")
	if e := p.wantEvent(t, audit.SignInPasskey, audit.Failure, passkey.ReasonCloned, userID); e.Detail["passkey"] == "" {
		t.Errorf("a cloned passkey's refusal does not name the passkey: %+v", e)
	}
	removeAuthenticator(t, ctx, clone)

	// An assertion made on another origin that may use the RP ID (another port of localhost) is refused,
	// though the passkey, the ceremony and the signature are genuine.
	laptop = virtualAuthenticator(t, ctx, false)
	addCredential(t, ctx, laptop, saved[0])
	p.passkeySignIn(t, ctx, otherOrigin(t, p.base), oauth2.GenerateVerifier())
	refusedOnPage(t, ctx, "another origin")
	// It names no account (the assertion's user handle is the client's to send): counted, not stored (D52).
	if n := auditCounted(t, p.provider, audit.SignInPasskey, audit.Failure); n < 2 {
		t.Errorf("%d signin.passkey failures counted after the cloned and the wrong-origin ones", n)
	}

	// An authenticator that did not verify the person (no UV flag): refused.
	bad := true
	if _, err := chromedp.Call(ctx, webauthn.SetResponseOverrideBits, webauthn.SetResponseOverrideBitsParams{AuthenticatorID: laptop, IsBadUV: &bad}); err != nil {
		t.Fatal(err)
	}
	p.passkeySignIn(t, ctx, p.issuer, oauth2.GenerateVerifier())
	refusedOnPage(t, ctx, "no user verification")
	// Nothing proves the account's authenticator made that answer: counted, and stored against no
	// account (D51's low findings, D52).
	if n := auditCounted(t, p.provider, audit.SignInPasskey, audit.Failure); n < 3 {
		t.Errorf("%d signin.passkey failures counted after the user-verification one", n)
	}
	for _, e := range trail(t, p.provider) {
		if e.Kind == audit.SignInPasskey && e.Reason == passkey.ReasonUserVerification {
			t.Errorf("a refusal whose answer proved nothing is stored against an account: %+v", e)
		}
	}
	bad = false
	if _, err := chromedp.Call(ctx, webauthn.SetResponseOverrideBits, webauthn.SetResponseOverrideBitsParams{AuthenticatorID: laptop, IsBadUV: &bad}); err != nil {
		t.Fatal(err)
	}

	// The passkeys page shows the refused copy; removing the laptop's passkey ends its sign-ins.
	p.passwordSignIn(t, ctx)
	testbrowser.Do(t, ctx, "passkeys page", chromedp.Navigate(p.issuer+"/account/passkeys"), chromedp.WaitVisible(chromedp.CSS(".passkeys")))
	if got := text(t, ctx, ".passkeys"); !strings.Contains(got, "a copy of this passkey was refused") {
		t.Errorf("the phone's passkey after its clone was refused: %s", got)
	}
	accessibleAt320(t, ctx, "passkeys page, a copy refused")
	testbrowser.Do(t, ctx, "remove", chromedp.Click(chromedp.CSS(`button[aria-label="Remove Work laptop"]`)), chromedp.WaitVisible(chromedp.CSS(".notice")))
	if got := text(t, ctx, ".passkeys"); strings.Contains(got, "Work laptop") || !strings.Contains(got, "Pixel phone") {
		t.Errorf("after removing the laptop's passkey: %s", got)
	}
	accessibleAt320(t, ctx, "passkeys page, one removed")
	p.wantEvent(t, audit.PasskeyRemoved, audit.Success, "", userID)
	p.passkeySignIn(t, ctx, p.issuer, oauth2.GenerateVerifier())
	refusedOnPage(t, ctx, "removed passkey")
	if n := auditCounted(t, p.provider, audit.SignInPasskey, audit.Failure); n < 4 {
		t.Errorf("%d signin.passkey failures counted after the removed passkey's", n)
	}
}

// A passkey that verified the person is two factors (docs/architecture.md D21): for an account with an
// authenticator app, a sign-in asking for two factors (acr_values; requireMFA takes the same path)
// ends with the passkey, without the app's code step, and its ID token says so in amr and acr; the
// session it starts satisfies the next such request too.
func TestPasskeys_InChromium_TwoFactorsInOne_NoCodeStep(t *testing.T) {
	p := startPasskeyProvider(t, nil)
	ctx := testbrowser.New(t)
	if _, err := chromedp.Call(ctx, webauthn.Enable, webauthn.EnableParams{}); err != nil {
		t.Fatalf("WebAuthn.enable: %v", err)
	}
	userID := p.passwordSignIn(t, ctx)
	virtualAuthenticator(t, ctx, false)
	p.addPasskey(t, ctx, "Security key")

	// The account gets an authenticator app: from now on a password sign-in has a code step.
	st := mfa.NewStore(p.rdb, mfa.Sealer{}, nil)
	key, err := st.Pending(context.Background(), userID, "Acme", testEmail, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	code, err := mfa.Code(key.Secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, res, err := st.Confirm(context.Background(), userID, code); err != nil || res != mfa.Accepted {
		t.Fatalf("enrolling the app: %v %v", res, err)
	}

	twoFactors := oauth2.SetAuthURLParam("acr_values", acr.TwoFactor)
	withoutAutofill(t, ctx)
	signOutBrowser(t, ctx)
	verifier := oauth2.GenerateVerifier()
	testbrowser.Do(t, ctx, "passkey sign-in asking for two factors",
		chromedp.Navigate(strings.Replace(p.authorizeURL("state-2fa", verifier, twoFactors), p.base, p.issuer, 1)),
		chromedp.WaitVisible(chromedp.CSS("#passkey-signin-button")),
		chromedp.Click(chromedp.CSS("#passkey-signin-button")))
	claims := p.idTokenClaims(t, waitURL(t, ctx, p.redirect+"?"), verifier)
	if claims["sub"] != userID || strings.Join(amrOf(claims), " ") != "pop mfa" || claims["acr"] != acr.TwoFactor {
		t.Errorf("passkey sign-in: sub %v amr %v acr %v, want %s, pop mfa, %s", claims["sub"], claims["amr"], claims["acr"], userID, acr.TwoFactor)
	}

	// The passkey's session is enough for the next request asking for two factors: no page at all.
	verifier = oauth2.GenerateVerifier()
	testbrowser.Do(t, ctx, "second authorization", chromedp.Navigate(strings.Replace(p.authorizeURL("state-again", verifier, twoFactors), p.base, p.issuer, 1)))
	claims = p.idTokenClaims(t, waitURL(t, ctx, p.redirect+"?"), verifier)
	if strings.Join(amrOf(claims), " ") != "pop mfa" || claims["acr"] != acr.TwoFactor {
		t.Errorf("on the passkey's session: amr %v acr %v, want pop mfa and %s", claims["amr"], claims["acr"], acr.TwoFactor)
	}
}
