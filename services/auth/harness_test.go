package auth_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testmail"
	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth"
	"github.com/formsservice/formsservice/services/auth/keys"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/logging"
	"github.com/formsservice/formsservice/services/platform/server"
)

const (
	testEmail    = "ada@example.com"
	testPassword = "correct horse battery"
	clientID     = "app"
)

// cheapHash is a deliberately weak argon2id setting FOR TESTS ONLY, so that sign-ins under -race stay
// fast; production uses the OWASP default.
var cheapHash = config.PasswordHash{MemoryKiB: 64, Iterations: 1, Parallelism: 1}

// provider is one auth service on a loopback port with a real redis-server behind it.
type provider struct {
	t        testing.TB
	base     string
	redirect string
	svc      *auth.Service
	rdb      redis.UniversalClient
	cfg      *config.Config
	keys     *keys.Set
	live     *liveConfig
	stop     func()
}

// liveConfig is a config.Source whose configuration a test replaces, as a reload would.
type liveConfig struct{ c atomic.Pointer[config.Config] }

func (l *liveConfig) Current() *config.Config { return l.c.Load() }

type setup struct {
	logs   io.Writer             // default: discarded (stderr at warn with -v)
	rdb    redis.UniversalClient // default: a new redis-server
	keys   *keys.Set             // default: a fresh key
	mutate func(*config.Config)
	now    func() time.Time // the service's clock (throttle, device cookies, audit); default time.Now
	mail   *testmail.Server // the relay the service's mail goes to (a real Mailpit); default none
	dev    bool             // as the dev server runs it (refusals_test.go)
	// backchannelTimeout bounds each back-channel logout attempt (default the service's).
	backchannelTimeout time.Duration
}

func startProvider(t testing.TB, s setup) *provider {
	t.Helper()
	if s.rdb == nil {
		srv := testredis.Start(t)
		s.rdb = redis.NewClient(&redis.Options{Addr: srv.Addr()})
		t.Cleanup(func() { s.rdb.Close() })
	}
	var err error
	if s.keys == nil {
		if s.keys, err = keys.Generate(); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	cfg := &config.Config{
		PublicURL: base,
		Auth: config.Auth{
			Clients: []config.OAuthClient{{
				ClientID:               clientID,
				Name:                   "Test App",
				RedirectURIs:           []string{base + "/cb"},
				PostLogoutRedirectURIs: []string{base + "/bye"},
			}},
			PasswordHash: cheapHash,
		},
	}
	if s.mail != nil {
		cfg.Mail = config.Mail{From: "Test App <no-reply@example.com>", SMTP: &config.MailSMTP{Addr: s.mail.SMTPAddr, TLS: config.MailTLSNone}}
	}
	if s.mutate != nil {
		s.mutate(cfg)
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if s.logs != nil {
		log = logging.New(s.logs, "debug")
	} else if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	metrics := server.NewMetrics()
	src := &liveConfig{}
	src.c.Store(cfg)
	svc, err := auth.New(auth.Options{Config: src, Redis: s.rdb, Logger: log, Keys: s.keys, Registerer: metrics.Registry, Now: s.now, Dev: s.dev,
		BackchannelTimeout: s.backchannelTimeout})
	if err != nil {
		t.Fatal(err)
	}
	app := server.New(server.Options{Logger: log, Metrics: metrics}, svc)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = app.Serve(ctx, server.ServeOptions{Listener: ln, ShutdownTimeout: 5 * time.Second})
	}()
	p := &provider{t: t, base: base, redirect: base + "/cb", svc: svc, rdb: s.rdb, cfg: cfg, keys: s.keys, live: src}
	p.stop = func() { cancel(); <-done }
	t.Cleanup(p.stop)
	return p
}

// user creates the test user (or another).
// user creates a verified account (an operator's, as `users create --verified` makes it): most tests
// are about what its owner does with it. unverifiedUser creates one whose address is not verified.
func (p *provider) user(email, password string) string {
	p.t.Helper()
	id := p.unverifiedUser(email, password)
	u, err := p.svc.Users().ByID(context.Background(), id)
	if err == nil {
		err = p.svc.Users().SetVerified(context.Background(), id, u.Email)
	}
	if err != nil {
		p.t.Fatal(err)
	}
	return id
}

func (p *provider) unverifiedUser(email, password string) string {
	p.t.Helper()
	u, err := p.svc.Users().Create(context.Background(), email, "Ada Lovelace", password)
	if err != nil {
		p.t.Fatal(err)
	}
	return u.ID
}

func (p *provider) oauth2Config() *oauth2.Config {
	return &oauth2.Config{
		ClientID:    clientID,
		RedirectURL: p.redirect,
		Scopes:      []string{"openid", "profile", "email", "offline_access"},
		Endpoint: oauth2.Endpoint{
			AuthURL:   p.base + "/oauth2/authorize",
			TokenURL:  p.base + "/oauth2/token",
			AuthStyle: oauth2.AuthStyleInParams,
		},
	}
}

// browser is an HTTP client with a cookie jar that does not follow redirects, so that each step of the
// flow can be inspected.
type browser struct {
	t testing.TB
	c *http.Client
}

func newBrowser(t testing.TB) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, c: &http.Client{
		Jar:           jar,
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

type response struct {
	*http.Response
	body string
}

func (b *browser) do(req *http.Request) response {
	b.t.Helper()
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return response{res, string(body)}
}

func (b *browser) get(u string) response {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	return b.do(req)
}

func (b *browser) postForm(u string, form url.Values, header ...string) response {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return b.do(req)
}

var (
	formRe  = regexp.MustCompile(`(?s)<form method="post" action="([^"]+)">(.*?)</form>`)
	inputRe = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
)

// pageForm is one form of the hosted page: its action and hidden fields (the CSRF token among them).
type pageForm struct {
	action string
	fields url.Values
}

func forms(t testing.TB, base, body string) []pageForm {
	t.Helper()
	var out []pageForm
	for _, m := range formRe.FindAllStringSubmatch(body, -1) {
		f := pageForm{action: base + html.UnescapeString(m[1]), fields: url.Values{}}
		for _, in := range inputRe.FindAllStringSubmatch(m[2], -1) {
			f.fields.Set(in[1], html.UnescapeString(in[2]))
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		t.Fatalf("no form on the page:\n%.600s", body)
	}
	return out
}

// signIn submits the sign-in form of a page.
func (b *browser) signIn(base, page, email, password string) response {
	b.t.Helper()
	f := forms(b.t, base, page)[0]
	f.fields.Set("email", email)
	f.fields.Set("password", password)
	return b.postForm(f.action, f.fields)
}

// codeFrom reads the code and state from a redirect to the client, failing on an OAuth error.
func codeFrom(t testing.TB, res response, redirect string) (code, state string) {
	t.Helper()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("want 303 to the client, got %d:\n%.800s", res.StatusCode, res.body)
	}
	loc, err := url.Parse(res.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(loc.String(), redirect+"?") {
		t.Fatalf("redirect to %q, want %s?...", res.Header.Get("Location"), redirect)
	}
	q := loc.Query()
	if e := q.Get("error"); e != "" {
		t.Fatalf("authorize error %s: %s", e, q.Get("error_description"))
	}
	return q.Get("code"), q.Get("state")
}

// authorizeURL builds an authorization request with PKCE S256.
func (p *provider) authorizeURL(state, verifier string, extra ...oauth2.AuthCodeOption) string {
	opts := append([]oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("nonce", "nonce-"+state)}, extra...)
	return p.oauth2Config().AuthCodeURL(state, opts...)
}

// signInAndGetCode runs authorize → page → sign-in and returns the code.
func (p *provider) signInAndGetCode(b *browser, email, password, verifier string) string {
	p.t.Helper()
	page := b.get(p.authorizeURL("state-0123456789", verifier))
	if page.StatusCode != http.StatusOK {
		p.t.Fatalf("authorize page: %d\n%.500s", page.StatusCode, page.body)
	}
	code, _ := codeFrom(p.t, b.signIn(p.base, page.body, email, password), p.redirect)
	return code
}

// tokens is a token response as the raw JSON fields.
type tokens struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	IDToken      string `json:"id_token"`
	Error        string `json:"error"`
	status       int
}

func (p *provider) tokenRequest(form url.Values) tokens {
	p.t.Helper()
	res, err := http.PostForm(p.base+"/oauth2/token", form)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	var tk tokens
	if err := json.NewDecoder(res.Body).Decode(&tk); err != nil {
		p.t.Fatalf("token response (%d) is not JSON: %v", res.StatusCode, err)
	}
	tk.status = res.StatusCode
	return tk
}

func (p *provider) exchange(code, verifier string) tokens {
	return p.tokenRequest(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {p.redirect},
		"client_id": {clientID}, "code_verifier": {verifier}})
}

func (p *provider) refresh(rt string) tokens {
	return p.tokenRequest(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {clientID}})
}

// userinfoStatus calls userinfo with an access token.
func (p *provider) userinfoStatus(at string) int {
	p.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.base+"/oauth2/userinfo", nil)
	req.Header.Set("Authorization", "Bearer "+at)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// fullSignIn: a user, a browser, a code exchanged for tokens.
func (p *provider) fullSignIn(email, password string) (tokens, *browser) {
	p.t.Helper()
	b := newBrowser(p.t)
	verifier := oauth2.GenerateVerifier()
	code := p.signInAndGetCode(b, email, password, verifier)
	tk := p.exchange(code, verifier)
	if tk.status != http.StatusOK {
		p.t.Fatalf("exchange: %d %s", tk.status, tk.Error)
	}
	return tk, b
}
