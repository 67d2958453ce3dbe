package interop_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/services/platform/config"
)

// oauth2ProxyVersion is the oauth2-proxy that hack/install-interop.sh builds into bin/.
const oauth2ProxyVersion = "v7.15.4"

// TestOAuth2Proxy is oauth2-proxy protecting an upstream app, the way platform teams put a dashboard
// behind a provider: a confidential client with PKCE S256 that verifies the ID token with go-oidc and
// renews the session with the refresh grant (--cookie-refresh). oauth2-proxy takes the e-mail from the
// ID token (no userinfo call) and revokes nothing itself: the test revokes the grant at the revocation
// endpoint and sees oauth2-proxy's next refresh fail and the session end.
func TestOAuth2Proxy(t *testing.T) {
	exe := oauth2ProxyPath(t)
	upstream := listen(t)
	serveUpstream(t, upstream)
	// oauth2-proxy binds its own port and must be told its address before it starts, as must the
	// provider its redirect URI: a free loopback port (the platform's tests do the same for processes).
	proxyAddr := testproc.Addr(t)
	proxy := "http://" + proxyAddr
	const clientID, secret = "dashboard", "dashboard-secret-0123456789"
	p := startProvider(t, config.OAuthClient{
		ClientID: clientID, Name: "Dashboard", SecretFile: secretFile(t, secret),
		RedirectURIs: []string{proxy + "/oauth2/callback"}, PostLogoutRedirectURIs: []string{proxy + "/signed-out"},
	})
	issuer, _ := url.Parse(p.Issuer)
	cmd := exec.Command(exe,
		"--provider=oidc", "--oidc-issuer-url="+p.Issuer, "--client-id="+clientID, "--client-secret="+secret,
		"--code-challenge-method=S256", "--scope=openid email profile offline_access",
		"--http-address="+proxyAddr, "--upstream=http://"+upstream.Addr().String()+"/",
		"--cookie-secret=0123456789abcdef0123456789abcdef", "--cookie-secure=false", "--cookie-refresh=1s",
		"--email-domain=*", "--insecure-oidc-allow-unverified-email", // we send email_verified: false
		"--skip-provider-button", "--pass-access-token", "--pass-authorization-header",
		"--whitelist-domain="+issuer.Host, "--request-logging=false")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	proc := testproc.StartCmd(t, cmd)
	proc.WaitReady(t, proxy+"/ping", 30*time.Second)

	// Sign in: the dashboard sends the browser to the hosted page and back, then serves the upstream.
	b := newBrowser(t)
	first := upstreamSaw(t, b, proxy)
	if first.Email != email || first.AccessToken == "" || !strings.HasPrefix(first.Authorization, "Bearer ey") {
		t.Fatalf("the upstream saw %+v", first)
	}

	// Refresh with rotation: once the session is older than --cookie-refresh, oauth2-proxy refreshes it
	// at the next request. Two refreshes in a row prove it kept the rotated refresh token (reusing the
	// spent one would have revoked the grant).
	second := waitForNewToken(t, b, proxy, first)
	third := waitForNewToken(t, b, proxy, second)

	t.Run("wrong verifier", func(t *testing.T) {
		// A code minted for one login attempt, delivered to another (code injection): oauth2-proxy
		// redeems it with the other attempt's verifier and the provider refuses.
		victim, attacker := newBrowser(t), newBrowser(t)
		victim.c.Jar = b.c.Jar // the victim is signed in at the provider
		code, _ := victim.visit(proxy+"/oauth2/start?rd=%2F", proxy+"/oauth2/callback")
		own, _ := attacker.visit(proxy+"/oauth2/start?rd=%2F", proxy+"/oauth2/callback")
		q := own.Query()
		q.Set("code", code.Query().Get("code"))
		own.RawQuery = q.Encode()
		if pg := attacker.get(own.String()); pg.Status < 400 {
			t.Fatalf("a code redeemed with another verifier: %d %s", pg.Status, pg.Header.Get("Location"))
		}
		// Its log (copied from the process asynchronously) names the provider's refusal.
		for deadline := time.Now().Add(5 * time.Second); !strings.Contains(proc.Output(), `"invalid_grant"`); {
			if time.Now().After(deadline) {
				t.Fatal("oauth2-proxy did not log the provider's invalid_grant")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	t.Run("foreign redirect URI", func(t *testing.T) {
		// Reached under another name, oauth2-proxy derives another redirect URI from the Host header
		// (no --redirect-url): the provider shows its error page instead of sending a code there. The
		// name is only a Host header: the connection stays on loopback.
		foreign := newBrowser(t)
		req, _ := http.NewRequest(http.MethodGet, proxy+"/", nil)
		req.Host = "dashboard.example"
		start := foreign.do(req)
		loc := start.Header.Get("Location")
		if !strings.HasPrefix(loc, p.Issuer+"/oauth2/authorize?") || !strings.Contains(loc, url.QueryEscape("http://dashboard.example/oauth2/callback")) {
			t.Fatalf("oauth2-proxy under another name answered %d Location %q", start.Status, loc)
		}
		if _, pg := foreign.visit(loc, ""); pg.Status != http.StatusBadRequest || !strings.HasPrefix(pg.URL.String(), p.Issuer+"/oauth2/authorize") {
			t.Fatalf("a foreign redirect URI ended at %s with %d, want the provider's 400 page", pg.URL, pg.Status)
		}
	})

	// Revocation: the grant is revoked at the provider; oauth2-proxy's next refresh fails and the
	// session ends (the browser is sent to sign in again).
	form := url.Values{"token": {third.AccessToken}}
	req, _ := http.NewRequest(http.MethodPost, p.Issuer+"/oauth2/revoke", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(clientID, secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("revocation: %v %v", res, err)
	}
	res.Body.Close()
	deadline := time.Now().Add(15 * time.Second)
	for b.get(proxy+"/").Status == http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the upstream is still served after the grant was revoked")
		}
		time.Sleep(100 * time.Millisecond) // the session must age past --cookie-refresh
	}

	// RP-initiated logout through oauth2-proxy's sign_out with the provider's end_session endpoint as
	// the return address; the person confirms on the provider's page and lands on the post-logout URI.
	upstreamSaw(t, b, proxy) // signed in again (the provider's session answers at once)
	end := p.Issuer + "/oauth2/logout?" + url.Values{"client_id": {clientID}, "post_logout_redirect_uri": {proxy + "/signed-out"}, "state": {"bye-0123456789"}}.Encode()
	back, _ := b.visit(proxy+"/oauth2/sign_out?rd="+url.QueryEscape(end), proxy+"/signed-out")
	if back.Query().Get("state") != "bye-0123456789" {
		t.Fatalf("sign-out ended at %s", back)
	}
	b.signedOut = true
	if _, pg := b.visit(proxy+"/", ""); formWith(pg, "signin") == nil {
		t.Fatalf("after signing out, the dashboard at %s answered %d, want the hosted sign-in page", pg.URL, pg.Status)
	}
}

// upstreamView is what the upstream app learnt about the request from oauth2-proxy.
type upstreamView struct {
	Email, AccessToken, Authorization string
}

// serveUpstream is the protected app: it answers with the identity oauth2-proxy passed.
func serveUpstream(t *testing.T, l net.Listener) {
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(upstreamView{Email: r.Header.Get("X-Forwarded-Email"),
			AccessToken: r.Header.Get("X-Forwarded-Access-Token"), Authorization: r.Header.Get("Authorization")})
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
}

// upstreamSaw opens the dashboard, signing in when asked, and returns what the upstream saw.
func upstreamSaw(t *testing.T, b *browser, proxy string) upstreamView {
	t.Helper()
	_, pg := b.visit(proxy+"/", "")
	return decodeUpstream(t, pg)
}

func decodeUpstream(t *testing.T, pg page) upstreamView {
	t.Helper()
	var v upstreamView
	if pg.Status != http.StatusOK || json.Unmarshal([]byte(pg.Body), &v) != nil {
		t.Fatalf("%s answered %d, not the upstream app:\n%.400s", pg.URL, pg.Status, pg.Body)
	}
	return v
}

// waitForNewToken asks the dashboard again until oauth2-proxy has refreshed the session (the
// upstream sees a new access token), without a trip through the sign-in: each answer is the
// upstream's own.
func waitForNewToken(t *testing.T, b *browser, proxy string, last upstreamView) upstreamView {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		v := decodeUpstream(t, b.get(proxy+"/"))
		if v.AccessToken != last.AccessToken {
			if v.Email != email || v.Authorization == last.Authorization {
				t.Fatalf("after a refresh the upstream saw %+v (the ID token must be the refreshed one)", v)
			}
			return v
		}
		if time.Now().After(deadline) {
			t.Fatal("oauth2-proxy never refreshed the session")
		}
		time.Sleep(100 * time.Millisecond) // the session must age past --cookie-refresh (1 s)
	}
}

// oauth2ProxyPath is the binary hack/install-interop.sh built.
func oauth2ProxyPath(t *testing.T) string {
	t.Helper()
	exe, err := filepath.Abs(filepath.Join("..", "..", "bin", "oauth2-proxy-"+oauth2ProxyVersion))
	if err == nil {
		_, err = os.Stat(exe)
	}
	if err != nil {
		t.Fatalf("oauth2-proxy %s is not built: run hack/install-interop.sh (%v)", oauth2ProxyVersion, err)
	}
	return exe
}
