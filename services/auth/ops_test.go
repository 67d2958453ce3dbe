package auth_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/config"

	"github.com/formsservice/formsservice/internal/testproc"
)

func TestMetrics_SignInsTokensAndLatency(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	tk, _ := p.fullSignIn(testEmail, testPassword)
	p.refresh(tk.RefreshToken)
	p.refresh(tk.RefreshToken) // reuse
	b := newBrowser(t)
	page := b.get(p.authorizeURL("state-metrics", oauth2.GenerateVerifier()))
	b.signIn(p.base, page.body, testEmail, "wrong password")

	res := b.get(p.base + "/metrics")
	for _, want := range []string{
		`formsservice_auth_signins_total{result="success"} 1`,
		`formsservice_auth_signins_total{result="bad_credentials"} 1`,
		`formsservice_auth_tokens_issued_total{grant_type="authorization_code"} 1`,
		`formsservice_auth_tokens_issued_total{grant_type="refresh_token"} 1`,
		`formsservice_auth_token_duration_seconds_count{grant_type="refresh_token",outcome="ok"} 1`,
		`formsservice_auth_token_duration_seconds_count{grant_type="refresh_token",outcome="invalid_grant"} 1`,
		`formsservice_auth_family_revocations_total{reason="refresh_reuse"} 1`,
		`route="/oauth2/token",service="auth"} 2`, // the platform's request metrics see the route
	} {
		if !strings.Contains(res.body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestLogs_NeverCarrySecrets runs every path at debug level, errors included, and looks for any token,
// code, password or cookie value in the log.
func TestLogs_NeverCarrySecrets(t *testing.T) {
	logs := &testproc.Buffer{}
	p := startProvider(t, setup{logs: logs, mutate: func(c *config.Config) { c.Auth.SelfSignup = true }})
	p.user(testEmail, testPassword)
	b := newBrowser(t)
	verifier := oauth2.GenerateVerifier()
	page := b.get(p.authorizeURL("state-logs-1", verifier))
	b.signIn(p.base, page.body, testEmail, "a wrong password 42")
	res := b.signIn(p.base, page.body, testEmail, testPassword)
	code, _ := codeFrom(t, res, p.redirect)
	tk := p.exchange(code, verifier)
	replay := p.exchange(code, verifier)
	second := p.refresh(tk.RefreshToken)
	p.refresh(tk.RefreshToken) // reuse
	p.userinfoStatus(second.AccessToken)
	u, _ := url.Parse(p.base)
	var secrets []string
	for _, c := range b.c.Jar.Cookies(u) {
		secrets = append(secrets, c.Value)
	}
	secrets = append(secrets, testPassword, "a wrong password 42", code, verifier, tk.AccessToken, tk.RefreshToken, tk.IDToken,
		second.AccessToken, second.RefreshToken)
	_ = replay
	log := logs.String()
	if log == "" {
		t.Fatal("no log lines at all: the test would prove nothing")
	}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		// The secret part of opaque tokens follows the family ID; JWTs are checked whole and by signature.
		parts := []string{s}
		if _, rest, ok := strings.Cut(s, "~"); ok {
			parts = append(parts, rest)
		}
		if i := strings.LastIndexByte(s, '.'); i > 0 && strings.Count(s, ".") == 2 {
			parts = append(parts, s[i+1:])
		}
		for _, part := range parts {
			if len(part) >= 8 && strings.Contains(log, part) {
				t.Fatalf("the log carries a secret (%.12s…):\n%s", part, log)
			}
		}
	}
}

func TestRequest_BodyOver64KiB_413(t *testing.T) {
	p := startProvider(t, setup{})
	// Raw requests: the server answers 413 and closes the connection, possibly before it has read all
	// that was sent, which resets the connection. An HTTP client still writing the body then reports
	// "connection reset" instead of the answer; here a failed write is ignored and the answer, already
	// received, is read.
	body := strings.Repeat("a", 70<<10)
	declared := "POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	if code := rawStatus(t, p.base, declared); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized token request: %d", code)
	}
	// Chunked, without a length: read up to the bound, then refused.
	chunked := "POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n" +
		"Transfer-Encoding: chunked\r\n\r\n" + strconv.FormatInt(int64(len(body)), 16) + "\r\n" + body + "\r\n0\r\n\r\n"
	if code := rawStatus(t, p.base, chunked); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized chunked token request: %d", code)
	}
}

// rawStatus writes req on a new connection to base and returns the status code of the answer.
func rawStatus(t *testing.T, base, req string) int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(conn, req) // may fail once the server has answered and closed
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestRedisDown_Answers503NotA500: with the store gone, every endpoint answers promptly with 503 (or the
// page saying to try again), never a 500 and never a hang.
func TestRedisDown_Answers503NotA500(t *testing.T) {
	srv := testredis.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), DialTimeout: 200 * time.Millisecond, ReadTimeout: 300 * time.Millisecond,
		WriteTimeout: 300 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	p := startProvider(t, setup{rdb: rdb})
	p.user(testEmail, testPassword)
	tk, signedIn := p.fullSignIn(testEmail, testPassword)
	b := newBrowser(t)
	page := b.get(p.authorizeURL("state-down", oauth2.GenerateVerifier()))
	srv.Kill()

	start := time.Now()
	if r := b.signIn(p.base, page.body, testEmail, testPassword); r.StatusCode != http.StatusServiceUnavailable || !strings.Contains(r.body, "try again") {
		t.Fatalf("sign-in with the store down: %d", r.StatusCode)
	}
	if r := p.refresh(tk.RefreshToken); r.status != http.StatusServiceUnavailable || r.Error != "temporarily_unavailable" {
		t.Fatalf("refresh with the store down: %d %s", r.status, r.Error)
	}
	if st := p.userinfoStatus(tk.AccessToken); st != http.StatusServiceUnavailable {
		t.Fatalf("userinfo with the store down: %d", st)
	}
	// A new browser's authorize (no session to look up) still shows the page; with a session cookie the
	// lookup fails and the answer is the temporarily_unavailable redirect.
	if r := newBrowser(t).get(p.authorizeURL("state-down-2", oauth2.GenerateVerifier())); r.StatusCode != http.StatusOK {
		t.Fatalf("authorize page with the store down: %d", r.StatusCode)
	}
	r := signedIn.get(p.authorizeURL("state-down-3", oauth2.GenerateVerifier()))
	if r.StatusCode != http.StatusSeeOther || !strings.Contains(r.Header.Get("Location"), "error=temporarily_unavailable") {
		t.Fatalf("authorize with a session and the store down: %d %q", r.StatusCode, r.Header.Get("Location"))
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("answers with the store down took %s", time.Since(start))
	}
	res, err := http.Get(p.base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz with the store down: %d", res.StatusCode)
	}
}
