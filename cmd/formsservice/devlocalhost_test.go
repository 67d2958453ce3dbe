package main

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"

	"github.com/formsservice/formsservice/internal/testbrowser"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/platform/config"
)

// haveIPv6 reports whether this machine has an IPv6 loopback to listen on.
func haveIPv6(t *testing.T) bool {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// accepts reports whether a connection to addr reaches ln (it accepts it).
func accepts(t *testing.T, ln net.Listener, addr string) bool {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	got := make(chan error, 1)
	go func() {
		s, err := ln.Accept()
		if err == nil {
			s.Close()
		}
		got <- err
	}()
	select {
	case err := <-got:
		return err == nil
	case <-time.After(5 * time.Second):
		t.Fatalf("the listener did not accept the connection to %s", addr)
		return false
	}
}

// On a loopback address the dev server's URL is http://localhost:<port> (D74), and it listens on 127.0.0.1
// and ::1 of that port, nowhere else; any other address keeps its own URL.
func TestDevListen_LoopbackIsLocalhostOnBothLoopbacks_OthersUnchanged(t *testing.T) {
	v6 := haveIPv6(t)
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0"} {
		ln, u, err := devListen(addr)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		if u != "http://localhost:"+port || !strings.HasPrefix(ln.Addr().String(), "127.0.0.1:") {
			t.Errorf("%s: URL %s, listening on %s; want http://localhost:<port> on 127.0.0.1", addr, u, ln.Addr())
		}
		if !accepts(t, ln, "127.0.0.1:"+port) {
			t.Errorf("%s: nothing on 127.0.0.1:%s", addr, port)
		}
		if v6 && !accepts(t, ln, "[::1]:"+port) {
			t.Errorf("%s: nothing on [::1]:%s", addr, port)
		}
		ln.Close()
		if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("%s: Accept after Close: %v", addr, err)
		}
	}

	// Another loopback address than the three, and every address: served as before, their URL naming them.
	for addr, host := range map[string]string{"127.0.0.2:0": "127.0.0.2", "0.0.0.0:0": "127.0.0.1"} {
		ln, u, err := devListen(addr)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		if u != "http://"+host+":"+port {
			t.Errorf("%s: URL %s, want http://%s:%s", addr, u, host, port)
		}
		ln.Close()
	}

	// A program on [::1]:<port> would get what the browser sends to localhost:<port>: the port is refused,
	// and the error says why.
	if !v6 {
		t.Skip("no IPv6 loopback here")
	}
	other, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, port, _ := net.SplitHostPort(other.Addr().String())
	ln, _, err := devListen("127.0.0.1:" + port)
	if err == nil {
		ln.Close()
		t.Fatalf("listened on 127.0.0.1:%s although [::1]:%s is another program's", port, port)
	}
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), "another program listens on [::1]:"+port) {
		t.Errorf("the error: %v", err)
	}
	if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil { // the 127.0.0.1 half was let go
		c.Close()
		t.Errorf("127.0.0.1:%s still listens after the refusal", port)
	}
}

// `make run` on a loopback address: the issuer is localhost, the hosted sign-in page offers passkeys,
// and a browser that opens a page on 127.0.0.1 (or [::1]) is sent to the same page on localhost, while
// API calls, form posts and tools are answered where they are sent.
func TestDevServer_IssuerIsLocalhost_PasskeysOffered_BrowsersOn127MoveThere(t *testing.T) {
	base, logs, _ := startCommandStop(t, "dev", devEnv(t, nil))
	u, _ := url.Parse(base)
	if u.Hostname() != "localhost" {
		t.Fatalf("the dev server's URL is %s, want localhost", base)
	}
	if !strings.Contains(logs.String(), `"url":"`+base+`"`) || !strings.Contains(logs.String(), `"passkeys":"`+base+`/account/passkeys"`) {
		t.Errorf("the ready line does not name %s and its passkeys page:\n%s", base, logs.String())
	}
	_, disc := httpGet(t, base+"/.well-known/openid-configuration")
	var d struct{ Issuer string }
	if err := json.Unmarshal([]byte(disc), &d); err != nil || d.Issuer != base {
		t.Fatalf("the discovery document's issuer: %q (%v), want %s", d.Issuer, err, base)
	}
	q := url.Values{"client_id": {config.DevClientID}, "redirect_uri": {base + "/demo/callback"}, "response_type": {"code"}, "scope": {"openid"},
		"state": {"state-0123456789"}, "code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}}
	code, signIn := httpGet(t, base+"/oauth2/authorize?"+q.Encode())
	if code != 200 || !strings.Contains(signIn, `id="passkey-signin-button"`) || !strings.Contains(signIn, `autocomplete="username webauthn"`) {
		t.Errorf("the dev server's sign-in page offers no passkeys: %d\n%.3000s", code, signIn)
	}

	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, target string, navigate bool) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, target, nil)
		if navigate {
			req.Header.Set("Sec-Fetch-Mode", "navigate")
		}
		res, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode, res.Header.Get("Location")
	}
	on127 := "http://127.0.0.1:" + u.Port()
	hosts := []string{on127}
	if haveIPv6(t) {
		hosts = append(hosts, "http://[::1]:"+u.Port())
	}
	for _, h := range hosts {
		for _, path := range []string{"/", "/account/passkeys?x=1", "/demo/"} {
			if code, loc := send(http.MethodGet, h+path, true); code != http.StatusFound || loc != base+path {
				t.Errorf("a browser opening %s%s: %d %q, want 302 to %s%s", h, path, code, loc, base, path)
			}
		}
		if code, _ := send(http.MethodGet, h+"/readyz", false); code != 200 { // a tool, an API call: answered there
			t.Errorf("GET %s/readyz without navigation: %d", h, code)
		}
	}
	if code, loc := send(http.MethodGet, on127+"/", false); code != http.StatusFound || loc != "/demo/" {
		t.Errorf("curl %s/: %d %q, want the demo as before", on127, code, loc)
	}
	if code, loc := send(http.MethodPost, on127+"/waitlist", true); code == http.StatusFound || loc != "" {
		t.Errorf("a form post on 127.0.0.1 was moved: %d %q", code, loc)
	}
	if code, loc := send(http.MethodGet, base+"/demo/", true); code != 200 || loc != "" {
		t.Errorf("a browser on localhost: %d %q", code, loc)
	}
}

// The banner and the ready line name the passkeys page only where passkeys work.
func TestPasskeysURL_OnlyUnderAHostName(t *testing.T) {
	off := false
	for _, c := range []struct {
		auth config.Auth
		want string
	}{
		{config.Auth{Issuer: "http://localhost:8080"}, "http://localhost:8080/account/passkeys"},
		{config.Auth{Issuer: "http://127.0.0.1:8080"}, ""},
		{config.Auth{Issuer: "http://[::1]:8080"}, ""},
		{config.Auth{Issuer: "http://localhost:8080", Passkeys: config.AuthPasskeys{Enabled: &off}}, ""},
	} {
		if got := passkeysURL(c.auth); got != c.want {
			t.Errorf("%s (on %v): %q, want %q", c.auth.Issuer, c.auth.Passkeys.On(), got, c.want)
		}
	}
}

// The developer's public URL wins over the listen address, and then nothing moves to localhost.
func TestDevServer_PublicURLSet_IsTheIssuer_NothingMoves(t *testing.T) {
	base := startCommand(t, "dev", devEnv(t, map[string]string{"FORMSSERVICE_PUBLIC_URL": "https://dev.example.test"}))
	_, disc := httpGet(t, base+"/.well-known/openid-configuration")
	if !strings.Contains(disc, `"issuer":"https://dev.example.test"`) {
		t.Errorf("discovery: %.300s", disc)
	}
	req, _ := http.NewRequest(http.MethodGet, strings.Replace(base, "localhost", "127.0.0.1", 1)+"/demo/", nil)
	req.Header.Set("Sec-Fetch-Mode", "navigate")
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("a browser on 127.0.0.1 with publicURL set: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
}

// The whole journey of a newcomer in Chromium against `make run`'s fixtures: 127.0.0.1:<port> leads to
// the demo on localhost; the dev user signs in with the password, adds a passkey at /account/passkeys
// (a virtual platform authenticator, the DevTools WebAuthn domain), signs out, and signs in again with
// the passkey alone.
func TestDevServer_Passkey_RegisterAndSignIn_InChromium(t *testing.T) {
	base := startCommand(t, "dev", devEnv(t, nil))
	u, _ := url.Parse(base)
	ctx := testbrowser.New(t)
	if _, err := chromedp.Call(ctx, webauthn.Enable, webauthn.EnableParams{}); err != nil {
		t.Fatalf("WebAuthn.enable: %v", err)
	}
	if _, err := chromedp.Call(ctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
		Protocol: webauthn.AuthenticatorProtocolCtap2, Ctap2version: webauthn.Ctap2versionCtap21, Transport: webauthn.AuthenticatorTransportInternal,
		HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true,
	}}); err != nil {
		t.Fatalf("WebAuthn.addVirtualAuthenticator: %v", err)
	}
	// Only the button asks for a passkey: Chromium's virtual authenticator would answer the page's
	// autofill (conditional) request at once.
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: `if (window.PublicKeyCredential) { PublicKeyCredential.isConditionalMediationAvailable = () => Promise.resolve(false); }`}); err != nil {
		t.Fatal(err)
	}
	at := func(what, want string) {
		t.Helper()
		testwait.Until(t, 30*time.Second, what, func() error {
			if loc, ok := testbrowser.TryGet(ctx, chromedp.Location()); !ok || loc != want {
				return errors.New("at " + loc + ", want " + want)
			}
			return nil
		})
	}
	signedIn := func(what string) {
		t.Helper()
		testbrowser.Do(t, ctx, what, chromedp.WaitVisible(`#auth-status[data-state="signed-in"]`))
		if got := testbrowser.Get(t, ctx, what, chromedp.Text("#user-email")); got != config.DevEmail {
			t.Errorf("%s: the demo shows %q signed in", what, got)
		}
	}

	testbrowser.Do(t, ctx, "127.0.0.1", chromedp.Navigate("http://127.0.0.1:"+u.Port()+"/"))
	at("the demo on localhost", base+"/demo/")
	testbrowser.Do(t, ctx, "password sign-in", chromedp.WaitVisible("#sign-in"), chromedp.Click("#sign-in"),
		chromedp.WaitVisible("#password"), chromedp.SendKeys("#email", config.DevEmail), chromedp.SendKeys("#password", config.DevPassword),
		chromedp.Click(`form button[type=submit]`))
	signedIn("after the password")

	testbrowser.Do(t, ctx, "add a passkey", chromedp.Navigate(base+"/account/passkeys"), chromedp.WaitVisible("#passkey-add"),
		chromedp.SendKeys("#passkey-name", "Dev laptop"), chromedp.SendKeys("#passkey-password", config.DevPassword),
		chromedp.Click("#passkey-add button[type=submit]"))
	testwait.Until(t, 30*time.Second, "the passkey added", func() error {
		if n, ok := testbrowser.TryGet(ctx, chromedp.Evaluate[int](`document.querySelectorAll(".notice").length`)); ok && n > 0 {
			return nil
		}
		main, _ := testbrowser.TryGet(ctx, chromedp.Evaluate[string](`(document.querySelector("main") || document.body).innerText`))
		return errors.New("the page says: " + main)
	})
	if got := testbrowser.Get(t, ctx, "the passkeys", chromedp.Text(".passkeys")); !strings.Contains(got, "Dev laptop") {
		t.Fatalf("the passkeys page lists %q", got)
	}

	// Signed out everywhere: the demo's tokens and the provider's session.
	testbrowser.Do(t, ctx, "sign out", chromedp.Navigate(base+"/demo/"), chromedp.WaitVisible("#sign-out"), chromedp.Click("#sign-out"),
		chromedp.WaitVisible(`#auth-status[data-state="signed-out"]`))
	if _, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	testbrowser.Do(t, ctx, "passkey sign-in", chromedp.Navigate(base+"/demo/"), chromedp.WaitVisible("#sign-in"), chromedp.Click("#sign-in"),
		chromedp.WaitVisible("#passkey-signin-button"), chromedp.Click("#passkey-signin-button"))
	signedIn("after the passkey")
}
