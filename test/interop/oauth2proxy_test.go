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
	"github.com/formsservice/formsservice/internal/testwait"
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
	// oauth2-proxy's address must be known before it starts (the provider registers its redirect URI),
	// and it does not report the address it binds. The test binds port 0 itself and hands the listening
	// socket over as systemd would (--http-address=fd:3, LISTEN_FDS/LISTEN_PID): no port is guessed.
	proxyLn := listen(t)
	proxy := "http://" + proxyLn.Addr().String()
	const clientID, secret = "dashboard", "dashboard-secret-0123456789"
	p := startProvider(t, config.OAuthClient{
		ClientID: clientID, Name: "Dashboard", SecretFile: secretFile(t, secret),
		RedirectURIs: []string{proxy + "/oauth2/callback"}, PostLogoutRedirectURIs: []string{proxy + "/signed-out"},
	})
	issuer, _ := url.Parse(p.Issuer)
	// sh sets LISTEN_PID to its own pid and execs oauth2-proxy in place (the pid is kept): the systemd
	// protocol hands a socket only to the process LISTEN_PID names, which is unknown before the start.
	cmd := exec.Command("/bin/sh", "-c", `LISTEN_PID=$$ exec "$0" "$@"`, exe,
		"--provider=oidc", "--oidc-issuer-url="+p.Issuer, "--client-id="+clientID, "--client-secret="+secret,
		"--code-challenge-method=S256", "--scope=openid email profile offline_access",
		"--http-address=fd:3", "--upstream=http://"+upstream.Addr().String()+"/",
		"--cookie-secret=0123456789abcdef0123456789abcdef", "--cookie-secure=false", "--cookie-refresh="+cookieRefresh.String(),
		"--email-domain=*", "--insecure-oidc-allow-unverified-email", // we send email_verified: false
		"--skip-provider-button", "--pass-access-token", "--pass-authorization-header",
		"--whitelist-domain="+issuer.Host, "--request-logging=false")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LISTEN_FDS=1"}
	sock, err := proxyLn.(*net.TCPListener).File() // a duplicate of the listening socket, for the child
	if err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles = []*os.File{sock} // fd 3
	proc := testproc.StartCmd(t, cmd)
	sock.Close()
	proxyLn.Close() // the child holds the socket now; connections wait in its backlog until it accepts
	proc.WaitReady(t, proxy+"/ping", 30*time.Second)

	// Sign in: the dashboard sends the browser to the hosted page and back, then serves the upstream.
	b := newBrowser(t)
	sent := time.Now()
	first := upstreamSaw(t, b, proxy)
	done := time.Now()
	if first.Email != email || first.AccessToken == "" || !strings.HasPrefix(first.Authorization, "Bearer ey") {
		t.Fatalf("the upstream saw %+v", first)
	}

	// Refresh with rotation: once the session is older than --cookie-refresh, oauth2-proxy refreshes it
	// at the next request, and not before. Two refreshes in a row prove it kept the rotated refresh
	// token (reusing the spent one would have revoked the grant).
	second, sent, done := refreshAtDue(t, b, proxy, first, sent, done)
	third, _, _ := refreshAtDue(t, b, proxy, second, sent, done)

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
		testwait.For(t, 5*time.Second, "oauth2-proxy logging the provider's invalid_grant", func() bool {
			return strings.Contains(proc.Output(), `"invalid_grant"`)
		})
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
	revoked := time.Now() // every refresh of the session so far happened before
	form := url.Values{"token": {third.AccessToken}}
	req, _ := http.NewRequest(http.MethodPost, p.Issuer+"/oauth2/revoke", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(clientID, secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("revocation: %v %v", res, err)
	}
	res.Body.Close()
	waitRefreshDue(revoked)
	if pg := b.get(proxy + "/"); pg.Status == http.StatusOK {
		t.Fatalf("the upstream is still served at oauth2-proxy's refresh after the grant was revoked:\n%.400s", pg.Body)
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

// cookieRefresh is oauth2-proxy's --cookie-refresh, in whole seconds.
const cookieRefresh = time.Second

// oauth2-proxy refreshes the session at a request when the session's age exceeds --cookie-refresh,
// the age being oauth2-proxy's wall clock truncated to the second less the session's CreatedAt
// (sessions.SessionState.Age). That clock cannot be injected: oauth2-proxy is another process, and its
// SessionState.Clock is a hook for its own Go tests. So these are the waits on time itself: until the
// wall clock that both processes read reaches a moment computed from that rule. Nothing is polled: a
// request at that moment must see the refresh, or not.

// waitRefreshDue waits until oauth2-proxy is certain to refresh a session created or last refreshed
// before the moment given: the first whole second at which the age exceeds --cookie-refresh.
func waitRefreshDue(before time.Time) {
	sleepUntil(before.Add(cookieRefresh).Truncate(time.Second).Add(time.Second))
}

// sleepUntil waits until the wall clock reads at least when.
func sleepUntil(when time.Time) {
	when = when.Round(0) // the wall clock, not this process's monotonic one: oauth2-proxy reads the wall clock
	for d := time.Until(when); d > 0; d = time.Until(when) {
		time.Sleep(d) // oauth2-proxy's clock: see above
	}
}

// refreshAtDue checks that oauth2-proxy refreshes the session when it is due, and not before. last is
// what the upstream saw at the request that created or last refreshed the session, sent and answered
// at the times given (the session's CreatedAt is between). It returns what the upstream saw after the
// refresh, and when that request was sent and answered.
func refreshAtDue(t *testing.T, b *browser, proxy string, last upstreamView, sent, done time.Time) (upstreamView, time.Time, time.Time) {
	t.Helper()
	// Not yet: --cookie-refresh (whole seconds) after the second the last request was answered in, the
	// age is at most --cookie-refresh if that request was also sent in that second (CreatedAt is after
	// the send) and oauth2-proxy answers within the second. That is the oldest the session can be and not
	// be refreshed; a shorter --cookie-refresh refreshes it there. (When the premises do not hold, on a
	// slow machine, only the refresh at the due time is checked.)
	probe := done.Round(0).Truncate(time.Second).Add(cookieRefresh)
	sleepUntil(probe)
	v := decodeUpstream(t, b.get(proxy+"/"))
	sameSecond := sent.Round(0).Truncate(time.Second).Equal(done.Round(0).Truncate(time.Second))
	if sameSecond && time.Now().Before(probe.Add(time.Second)) && v.AccessToken != last.AccessToken {
		t.Fatalf("oauth2-proxy refreshed a session not older than --cookie-refresh (%s)", cookieRefresh)
	}
	// Due: the next whole second.
	waitRefreshDue(done)
	sent = time.Now()
	v = decodeUpstream(t, b.get(proxy+"/"))
	done = time.Now()
	if v.AccessToken == last.AccessToken {
		t.Fatalf("oauth2-proxy did not refresh a session older than --cookie-refresh (%s)", cookieRefresh)
	}
	if v.Email != email || v.Authorization == last.Authorization {
		t.Fatalf("after a refresh the upstream saw %+v (the ID token must be the refreshed one)", v)
	}
	return v, sent, done
}

// oauth2ProxyPath is the binary hack/install-interop.sh built.
func oauth2ProxyPath(t *testing.T) string {
	t.Helper()
	testproc.SkipShort(t, "oauth2-proxy")
	exe, err := filepath.Abs(filepath.Join("..", "..", "bin", "oauth2-proxy-"+oauth2ProxyVersion))
	if err == nil {
		_, err = os.Stat(exe)
	}
	if err != nil {
		t.Fatalf("oauth2-proxy %s is not built: run `make deps-interop` (%v)", oauth2ProxyVersion, err)
	}
	return exe
}
