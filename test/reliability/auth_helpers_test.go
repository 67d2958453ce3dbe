package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/services/auth/keys"
)

const (
	authClientID = "app"
	authEmail    = "ada@example.com"
	authPassword = "correct horse battery staple"
)

// authService is a running `formsservice auth` with one public client and one user.
type authService struct {
	*proc
	redirect string
	config   string
}

// startAuth runs the auth service on redisSection with a signing key file, a public client whose
// redirect URI is on the service's own address, a deliberately cheap argon2id setting (TESTS ONLY: the
// suite measures the provider, not the hash) and throttling out of the way, then creates the user with
// `formsservice users create`.
func startAuth(t testing.TB, redisSection string) *authService {
	t.Helper()
	ks, err := keys.Generate()
	if err != nil {
		t.Fatal(err)
	}
	pemKey, err := keys.EncodePEM(ks.Current.Private)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := writeTemp(t, "signing.pem", string(pemKey))
	// The process listens on a port the kernel picks, known only once it runs: the issuer and the client's
	// redirect URIs are names, not that address (the suite follows no redirect, it reads Location).
	const issuer, app = "http://auth.localhost", "http://app.localhost"
	cfg := fmt.Sprintf(`publicURL: %s
logLevel: warn
allowedOrigins: ["%s"]
redis:
%sauth:
  signingKeyFile: %s
  passwordHash: {memoryKiB: 64, iterations: 1, parallelism: 1}
  throttle: {accountFailures: 1000000, ipFailures: 1000000}
  rateLimit: {perIP: 1000000000, perUser: 1000000000} # load from one address and few users
  # One user signs in over a thousand times in a few seconds of load: at the default bound (1000
  # grants per user, tested in services/auth) the oldest grants would end, the ones signed in before
  # a failover among them, and their refresh would be refused for that, not for the failover.
  maxGrantsPerUser: 1000000
  clients:
    - clientID: %s
      redirectURIs: [%s/cb]
      postLogoutRedirectURIs: [%s/bye]
`, issuer, origin, redisSection, keyFile, authClientID, app, app)
	cfgFile := writeTemp(t, "users.yaml", cfg)
	bin := formsservice(t) // built before the command's time starts: a cold build takes longer than the command may
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "users", "create", "-email", authEmail, "-name", "Ada Lovelace", "-config", cfgFile)
	cmd.Env = filteredEnv("REDIS_URL", "FORMSSERVICE_CONFIG", "CONFIG")
	cmd.Stdin = strings.NewReader(authPassword + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("formsservice users create: %v\n%s", err, out)
	}
	p := startProc(t, "auth", cfg, nil)
	return &authService{proc: p, redirect: app + "/cb", config: cfg}
}

// browser is an HTTP client with a cookie jar that stops at redirects, so each step can be inspected.
type browser struct{ c *http.Client }

func newBrowser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{c: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status   int
	body     string
	location string
}

func (b *browser) do(req *http.Request) (page, error) {
	res, err := b.c.Do(req)
	if err != nil {
		return page{}, err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return page{status: res.StatusCode, body: string(body), location: res.Header.Get("Location")}, nil
}

var (
	formRe  = regexp.MustCompile(`(?s)<form method="post" action="([^"]+)">(.*?)</form>`)
	inputRe = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
)

// code runs authorize → hosted page → sign-in and returns the authorization code. Failures are
// returned, not fatal: under faults a step may answer 503.
func (a *authService) code(b *browser, verifier string) (string, error) {
	conf := a.oauth2()
	u := conf.AuthCodeURL("state-reliability", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("nonce", "n-0123456789"))
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	pg, err := b.do(req)
	if err != nil {
		return "", err
	}
	if pg.status == http.StatusSeeOther { // the SSO session skipped the form
		return codeFromLocation(pg, a.redirect)
	}
	if pg.status != http.StatusOK {
		return "", &stepError{"authorize page", pg.status}
	}
	m := formRe.FindStringSubmatch(pg.body)
	if m == nil {
		return "", fmt.Errorf("no form on the page")
	}
	form := url.Values{}
	for _, in := range inputRe.FindAllStringSubmatch(m[2], -1) {
		form.Set(in[1], html.UnescapeString(in[2]))
	}
	form.Set("email", authEmail)
	form.Set("password", authPassword)
	req, _ = http.NewRequest(http.MethodPost, a.Base+html.UnescapeString(m[1]), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	pg, err = b.do(req)
	if err != nil {
		return "", err
	}
	return codeFromLocation(pg, a.redirect)
}

func codeFromLocation(pg page, redirect string) (string, error) {
	if pg.status != http.StatusSeeOther || !strings.HasPrefix(pg.location, redirect+"?") {
		return "", &stepError{"sign-in", pg.status}
	}
	loc, _ := url.Parse(pg.location)
	switch e := loc.Query().Get("error"); e {
	case "":
	case "temporarily_unavailable": // the store failed: told to the client by redirect (RFC 6749 4.1.2.1)
		return "", &stepError{"authorize (redirected with temporarily_unavailable)", http.StatusServiceUnavailable}
	default:
		return "", fmt.Errorf("authorize error %s", e)
	}
	return loc.Query().Get("code"), nil
}

// stepError is a step of the flow that answered something else than the next step.
type stepError struct {
	step   string
	status int
}

func (e *stepError) Error() string { return fmt.Sprintf("%s answered %d", e.step, e.status) }

func (a *authService) oauth2() *oauth2.Config {
	return &oauth2.Config{ClientID: authClientID, RedirectURL: a.redirect,
		Scopes:   []string{"openid", "profile", "email", "offline_access"},
		Endpoint: oauth2.Endpoint{AuthURL: a.Base + "/oauth2/authorize", TokenURL: a.Base + "/oauth2/token", AuthStyle: oauth2.AuthStyleInParams}}
}

// tokenAnswer is a token endpoint response.
type tokenAnswer struct {
	status       int
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	Error        string `json:"error"`
	err          error
}

var tokenClient = &http.Client{Timeout: 10 * time.Second}

func (a *authService) token(form url.Values) tokenAnswer {
	form.Set("client_id", authClientID)
	res, err := tokenClient.PostForm(a.Base+"/oauth2/token", form)
	if err != nil {
		return tokenAnswer{err: err}
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	ta := tokenAnswer{status: res.StatusCode}
	if err := json.Unmarshal(body, &ta); err != nil {
		ta.err = fmt.Errorf("token answer %d is not JSON: %.200s", res.StatusCode, body)
	}
	return ta
}

func (a *authService) exchange(code, verifier string) tokenAnswer {
	return a.token(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {a.redirect}, "code_verifier": {verifier}})
}

func (a *authService) refresh(rt string) tokenAnswer {
	return a.token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}})
}

func (a *authService) revoke(tok string) int {
	res, err := tokenClient.PostForm(a.Base+"/oauth2/revoke", url.Values{"token": {tok}, "client_id": {authClientID}})
	if err != nil {
		return -1
	}
	res.Body.Close()
	return res.StatusCode
}

// userinfo answers the status of /oauth2/userinfo for an access token (200 while the grant lives).
func (a *authService) userinfo(at string) int {
	req, _ := http.NewRequest(http.MethodGet, a.Base+"/oauth2/userinfo", nil)
	req.Header.Set("Authorization", "Bearer "+at)
	res, err := tokenClient.Do(req)
	if err != nil {
		return -1
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// signedIn runs a whole flow and fails the test when it does not give tokens.
func (a *authService) signedIn(t testing.TB) tokenAnswer {
	t.Helper()
	v := oauth2.GenerateVerifier()
	code, err := a.code(newBrowser(), v)
	if err != nil {
		t.Fatal(err)
	}
	tk := a.exchange(code, v)
	if tk.status != 200 || tk.RefreshToken == "" {
		t.Fatalf("exchange: %d %s %v", tk.status, tk.Error, tk.err)
	}
	return tk
}
