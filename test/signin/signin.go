// Package signin signs a person in through the platform's hosted page with a real headless Chromium:
// the browser follows the OAuth 2.0 authorization-code flow with PKCE (S256) from /oauth2/authorize,
// fills in and submits the hosted sign-in form (CSRF token, cookies and redirects as a person's browser
// handles them), and lands on a redirect URI served by the test. The test then redeems the code at
// /oauth2/token as the web app's SDK would, verifies the ID token against the discovery document and
// JWKS, and calls /oauth2/userinfo. test/local and test/e2e (kind) run the same flow.
package signin

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testproc"
)

// Flow is one sign-in.
type Flow struct {
	// Issuer is the platform's public base URL as the browser reaches it (the auth service).
	Issuer string
	// ClientID is a public client whose redirect URIs include RedirectURL.
	ClientID string
	// Callback listens on RedirectURL's host and port; see NewCallback.
	Callback *Callback
	// Email and Password of an existing account.
	Email, Password string
	// HTTPClient makes the web app's own requests (discovery, JWKS, token, userinfo); nil:
	// http.DefaultClient. A test that reaches the issuer through an ingress gives one that trusts the
	// ingress certificate and dials the ingress for the issuer's host name.
	HTTPClient *http.Client
	// BrowserFlags are extra Chromium command-line flags (name without the dashes: value), e.g.
	// host-resolver-rules for a host name only the test resolves.
	BrowserFlags map[string]any
}

// Callback is the web app's redirect URI: a loopback server that receives the browser after sign-in.
type Callback struct {
	RedirectURL string
	listener    net.Listener
}

// NewCallback reserves a loopback port for the redirect URI (it must be registered with the client
// before the flow runs, which is why it exists before the flow).
func NewCallback(t *testing.T) *Callback {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return &Callback{RedirectURL: "http://" + l.Addr().String() + "/callback", listener: l}
}

// Result is what the web app has after signing in.
type Result struct {
	IDToken  *oidc.IDToken
	Claims   map[string]any
	Token    *oauth2.Token
	UserInfo map[string]any
	// Browser is the Chromium that signed in, open until the test ends: it holds the provider's
	// session cookie, so a test can go on as the signed-in person (another client signs in at once).
	Browser context.Context
}

// ChromiumPath finds the browser: $CHROME_BIN, else chromium on PATH. The test fails (never skips)
// when there is none.
func ChromiumPath(t *testing.T) string {
	t.Helper()
	testproc.SkipShort(t, "Chromium")
	if p := os.Getenv("CHROME_BIN"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("Chromium is not installed: run `make deps-browser` (or `make test`, which installs every tool), or set CHROME_BIN")
	return ""
}

// Run signs in and returns the verified result.
func (f Flow) Run(t *testing.T) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	hc := f.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	ctx = oidc.ClientContext(ctx, hc) // discovery, JWKS and the token exchange (oauth2 reads the same key)

	provider, err := oidc.NewProvider(ctx, f.Issuer)
	if err != nil {
		t.Fatalf("discovery at %s: %v", f.Issuer, err)
	}
	conf := oauth2.Config{ClientID: f.ClientID, Endpoint: provider.Endpoint(), RedirectURL: f.Callback.RedirectURL,
		Scopes: []string{oidc.ScopeOpenID, "profile", "email"}}
	verifier := oauth2.GenerateVerifier()
	state, nonce := randomString(t), randomString(t)
	authURL := conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce))

	codes := make(chan url.Values, 1)
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		select {
		case codes <- r.URL.Query():
		default:
		}
		fmt.Fprint(w, "<!doctype html><title>signed in</title><p id=done>signed in</p>")
	})}
	go func() { _ = srv.Serve(f.Callback.listener) }()
	defer srv.Close()

	bctx, browser := f.signInWithBrowser(t, ctx, authURL)

	var q url.Values
	select {
	case q = <-codes:
	case <-ctx.Done():
		t.Fatalf("the browser never reached the redirect URI; it shows:\n%s", browser())
	}
	if e := q.Get("error"); e != "" {
		t.Fatalf("authorize answered error=%s (%s)", e, q.Get("error_description"))
	}
	if q.Get("state") != state {
		t.Fatalf("state = %q, want %q", q.Get("state"), state)
	}
	if q.Get("code") == "" {
		t.Fatalf("no code on the redirect: %v", q)
	}

	tok, err := conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("token exchange: %v", err)
	}
	rawID, _ := tok.Extra("id_token").(string)
	if rawID == "" {
		t.Fatal("the token response has no id_token for scope openid")
	}
	idt, err := provider.Verifier(&oidc.Config{ClientID: f.ClientID}).Verify(ctx, rawID)
	if err != nil {
		t.Fatalf("id_token does not verify against the JWKS: %v", err)
	}
	if idt.Nonce != nonce {
		t.Fatalf("id_token nonce = %q, want %q", idt.Nonce, nonce)
	}
	res := Result{IDToken: idt, Token: tok, Browser: bctx}
	if err := idt.Claims(&res.Claims); err != nil {
		t.Fatal(err)
	}
	if !strings.EqualFold(fmt.Sprint(res.Claims["email"]), f.Email) {
		t.Errorf("id_token email = %v, want %s", res.Claims["email"], f.Email)
	}

	// The access token opens /oauth2/userinfo; a wrong verifier would have got no token at all.
	res.UserInfo = userinfo(t, ctx, hc, provider, tok.AccessToken)
	if !strings.EqualFold(fmt.Sprint(res.UserInfo["email"]), f.Email) || res.UserInfo["sub"] != idt.Subject {
		t.Errorf("userinfo = %v, want the signed-in account (sub %s)", res.UserInfo, idt.Subject)
	}
	return res
}

// signInWithBrowser opens authURL in a fresh headless Chromium, fills in the hosted form and submits
// it. It returns the browser's context (alive until the test ends, not only while ctx is) and a function
// that describes the page the browser is on, for failure messages.
func (f Flow) signInWithBrowser(t *testing.T, ctx context.Context, authURL string) (context.Context, func() string) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ChromiumPath(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox, // root in CI containers; the pages are our own
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	for name, value := range f.BrowserFlags {
		opts = append(opts, chromedp.Flag(name, value))
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.WithoutCancel(ctx), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(cancel)
	describe := func() string {
		dctx, dcancel := context.WithTimeout(bctx, 5*time.Second)
		defer dcancel()
		loc, _ := chromedp.Run(dctx, chromedp.Location())
		text, _ := chromedp.Run(dctx, chromedp.Text("body"))
		return loc + "\n" + text
	}
	// The first action starts the browser, which lives as long as that action's context: no timeout on
	// it. Each step gets its own bound below.
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	step := func(what string, timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, scancel := context.WithTimeout(bctx, timeout)
		defer scancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			t.Fatalf("%s: %v\nthe browser shows: %s", what, err, describe())
		}
	}
	step("opening the hosted sign-in page", 30*time.Second, chromedp.Navigate(authURL), chromedp.WaitVisible("#email"))
	step("submitting the sign-in form", 30*time.Second,
		chromedp.SendKeys("#email", f.Email), chromedp.SendKeys("#password", f.Password), chromedp.Submit("#password"))
	step("landing on the redirect URI", 30*time.Second, chromedp.WaitVisible("#done"))
	return bctx, describe
}

func userinfo(t *testing.T, ctx context.Context, hc *http.Client, provider *oidc.Provider, accessToken string) map[string]any {
	t.Helper()
	var meta struct {
		UserinfoEndpoint string `json:"userinfo_endpoint"`
	}
	if err := provider.Claims(&meta); err != nil || meta.UserinfoEndpoint == "" {
		t.Fatalf("discovery has no userinfo_endpoint: %v", err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, meta.UserinfoEndpoint, nil)
	req.Header.Set("Authorization", "Bearer "+accessToken)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("userinfo: %v", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("userinfo: HTTP %d %s", resp.StatusCode, raw)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("userinfo body: %v", err)
	}
	return out
}

func randomString(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
