package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/config"
)

// The whole platform: the operator renders the configuration from a FormsService; the real forms, auth
// and health processes start with exactly that configuration (two mechanical substitutions, below) and a
// real redis-server, and serve the spec's contract. Then an edit of the resource reaches the running
// processes through the kubelet's way of updating a mounted ConfigMap, without a restart.
func TestPlatform_TheRenderedConfigurationServesTheContract(t *testing.T) {
	ctx := context.Background()
	bin := testproc.Build(t, "./cmd/formsservice")

	// A real Redis with a password, as an external Redis of the FormsService.
	rs := testredis.Start(t, testredis.Options{AppendFsync: "no"}) // appendonly yes, which the forms' default durability needs
	const redisPassword = "platform-test-password"
	if err := rs.Client().ConfigSet(ctx, "requirepass", redisPassword).Err(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr(), Password: redisPassword})
	defer rdb.Close()

	// The configuration names the services' addresses (the issuer, the peers health checks) before the
	// processes start on ports the kernel picks: relays this test listens on lead to them.
	relays := map[string]*testproc.Relay{}
	for _, c := range render.Components {
		relays[c] = testproc.NewRelay(t)
	}
	base := func(c string) string { return "http://" + relays[c].Addr() }

	ns := newNamespace(t)
	if err := k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "redis-auth", Namespace: ns},
		StringData: map[string]string{"password": redisPassword}}); err != nil {
		t.Fatal(err)
	}
	// The team's chat webhook, on loopback; its URL reaches forms only through a Secret.
	hooked := make(chan string, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hooked <- r.URL.Path + " " + string(b)
	}))
	defer hook.Close()
	hookURL := hook.URL + "/services/T000/B000/PLATFORMTEST"
	if err := k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "chat-hook", Namespace: ns},
		StringData: map[string]string{"url": hookURL + "\n"}}); err != nil {
		t.Fatal(err)
	}
	const origin, redirect = "https://www.acme.example", "http://localhost:3000/callback"
	fs := &v1alpha1.FormsService{
		ObjectMeta: metav1.ObjectMeta{Name: "acme", Namespace: ns},
		Spec: v1alpha1.FormsServiceSpec{
			// The issuer is where this test reaches auth.
			PublicURL:      base(render.Auth),
			AllowedOrigins: []v1alpha1.Origin{origin},
			OAuthClients: []v1alpha1.OAuthClient{{ClientID: "web", Name: "Acme", RedirectURIs: []v1alpha1.RedirectURI{redirect},
				Scopes: []v1alpha1.Scope{"openid", "email", "profile", "offline_access"}}},
			Redis: v1alpha1.RedisSpec{
				Addresses:         []v1alpha1.HostPort{v1alpha1.HostPort(rs.Addr())},
				PasswordSecretRef: &v1alpha1.SecretKeySelector{Name: "redis-auth", Key: "password"},
			},
			Forms: v1alpha1.FormsSpec{RateLimitPerMinute: ptr.To[int32](1000), Delivery: &v1alpha1.DeliverySpec{
				Webhook: &v1alpha1.WebhookDelivery{URLSecretRef: &v1alpha1.SecretKeySelector{Name: "chat-hook", Key: "url"}},
			}},
		},
	}
	if err := k8s.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	rendered := waitConfigMap(t, ns, func(cm *corev1.ConfigMap) bool { return len(cm.Data) == 3 })

	// The two substitutions, and nothing else: the in-cluster paths of the mounted Secrets become
	// a folder of the test, and the in-cluster Service URLs that health checks become loopback ports.
	secretsDir := t.TempDir()
	localize := func(s string) string {
		s = strings.ReplaceAll(s, render.SecretsDir+"/", secretsDir+"/")
		s = strings.ReplaceAll(s, render.ServiceURL(fs, render.Forms), base(render.Forms))
		return strings.ReplaceAll(s, render.ServiceURL(fs, render.Auth), base(render.Auth))
	}
	// The Secrets as the kubelet would mount them: the operator's signing key and the user's password.
	var signingKey corev1.Secret
	if err := k8s.Get(ctx, key(ns, "acme-signing-key"), &signingKey); err != nil {
		t.Fatal(err)
	}
	writeSecret(t, secretsDir, "acme-signing-key", signingKey.Data)
	writeSecret(t, secretsDir, "redis-auth", map[string][]byte{"password": []byte(redisPassword)})
	writeSecret(t, secretsDir, "chat-hook", map[string][]byte{"url": []byte(hookURL + "\n")})
	if strings.Contains(rendered.Data["forms.yaml"], hook.URL) {
		t.Errorf("the webhook URL is in the ConfigMap:\n%s", rendered.Data["forms.yaml"])
	}

	dirs := map[string]string{}
	procs := map[string]*testproc.Process{}
	for _, c := range render.Components {
		dirs[c] = t.TempDir()
		kubeletWrite(t, dirs[c], localize(rendered.Data[c+".yaml"]))
		cmd := exec.Command(bin, c, "-config", filepath.Join(dirs[c], "config.yaml"), "-addr", "127.0.0.1:0")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")} // nothing from the environment: the file is the configuration
		procs[c] = testproc.StartCmd(t, cmd)
		relays[c].To(procs[c].WaitListening(t, 30*time.Second))
	}
	for _, c := range render.Components {
		procs[c].WaitReady(t, base(c)+"/readyz", 30*time.Second)
	}

	// forms: the spec's responses.
	forms := base(render.Forms)
	contact := `{"name":"Ada","email":"ada@example.com","topic":"sales","message":"Hello from the platform test."}`
	expectJSON(t, post(t, forms+"/contact", origin, contact), 201, `"status":"created"`)
	expectJSON(t, post(t, forms+"/waitlist", origin, `{"email":"Grace@Example.com","consent":true}`), 201, `"status":"created"`)
	expectJSON(t, post(t, forms+"/waitlist", origin, `{"email":"grace@example.com","consent":true}`), 200, `"status":"duplicate"`)
	expectJSON(t, post(t, forms+"/waitlist", "https://evil.example", `{"email":"x@example.com","consent":true}`), 403, `"status":"error"`)
	expectJSON(t, post(t, forms+"/contact", origin, `{"name":"Ada","email":"not-an-address","message":"short"}`), 400, `"status":"invalid"`)
	expectJSON(t, post(t, forms+"/contact", origin, `{"name":"Ada","email":"ada@example.com","message":"`+strings.Repeat("a", 17*1024)+`"}`), 413, `"status":"error"`)
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n == 0 {
		t.Errorf("nothing stored in the FormsService's Redis: %d keys, %v", n, err)
	}
	// The stored contact message goes to the webhook whose URL forms read from the mounted Secret.
	select {
	case got := <-hooked:
		if !strings.HasPrefix(got, "/services/T000/B000/PLATFORMTEST ") || !strings.Contains(got, "Hello from the platform test.") {
			t.Errorf("webhook call: %.300s", got)
		}
	case <-time.After(15 * time.Second):
		t.Error("the contact message never reached the webhook named by spec.forms.delivery.webhook.urlSecretRef")
	}

	// health: the whole platform, through the URLs the operator rendered.
	res := get(t, base(render.Health)+"/health")
	if res.status != 200 || !strings.HasPrefix(res.header.Get("Content-Type"), "application/health+json") {
		t.Errorf("GET /health: %d %s\n%s", res.status, res.header.Get("Content-Type"), res.body)
	}
	var h struct {
		Status string                       `json:"status"`
		Checks map[string][]json.RawMessage `json:"checks"`
	}
	_ = json.Unmarshal([]byte(res.body), &h)
	if h.Status != "pass" {
		t.Errorf("health status %q: %s", h.Status, res.body)
	}
	for _, check := range []string{"forms:readiness", "auth:readiness", "redis:responseTime"} {
		if len(h.Checks[check]) == 0 {
			t.Errorf("health has no %s check: %s", check, res.body)
		}
	}

	// auth: the issuer, the key from the operator's Secret, a full sign-in with PKCE.
	auth := base(render.Auth)
	var disco struct {
		Issuer string `json:"issuer"`
	}
	_ = json.Unmarshal([]byte(get(t, auth+"/.well-known/openid-configuration").body), &disco)
	if disco.Issuer != fs.Spec.PublicURL {
		t.Errorf("issuer %q, want spec.publicURL %q", disco.Issuer, fs.Spec.PublicURL)
	}
	kid := signingKey.Annotations[render.KeyIDAnnotation]
	if jwks := get(t, auth+"/.well-known/jwks.json").body; !strings.Contains(jwks, `"kid":"`+kid+`"`) {
		t.Errorf("JWKS does not publish the operator's key %s: %s", kid, jwks)
	}
	createUser(t, bin, dirs[render.Auth], "ada@example.com", "correct horse battery staple")
	tokens := signIn(t, auth, "web", redirect, "ada@example.com", "correct horse battery staple")
	if got := jwtHeader(t, tokens.AccessToken)["kid"]; got != kid {
		t.Errorf("access token signed with kid %v, want the Secret's key %s", got, kid)
	}
	if tokens.IDToken == "" || tokens.RefreshToken == "" {
		t.Errorf("token response lacks id_token or refresh_token: %+v", tokens)
	}

	// An edit of the resource reaches the running processes, without a restart.
	pids := map[string]int{}
	for c, p := range procs {
		pids[c] = p.Pid()
	}
	const shopOrigin, shopRedirect = "https://shop.example.org", "https://shop.example.org/cb"
	if res := post(t, forms+"/waitlist", shopOrigin, `{"email":"x@example.com","consent":true}`); res.status != 403 {
		t.Fatalf("the new origin is allowed before the edit: %d", res.status)
	}
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Spec.AllowedOrigins = append(fs.Spec.AllowedOrigins, shopOrigin)
		fs.Spec.OAuthClients = append(fs.Spec.OAuthClients, v1alpha1.OAuthClient{ClientID: "shop", RedirectURIs: []v1alpha1.RedirectURI{shopRedirect}})
	})
	rendered = waitConfigMap(t, ns, func(cm *corev1.ConfigMap) bool { return strings.Contains(cm.Data["forms.yaml"], shopOrigin) })
	for _, c := range render.Components {
		kubeletWrite(t, dirs[c], localize(rendered.Data[c+".yaml"]))
	}
	eventually(t, func() error {
		if res := post(t, forms+"/waitlist", shopOrigin, `{"email":"shop@example.com","consent":true}`); res.status != 201 {
			return fmt.Errorf("new origin: %d %s", res.status, res.body)
		}
		return nil
	})
	eventually(t, func() error {
		if res := get(t, authorizeURL(auth, "shop", shopRedirect, "state-shop-0123456789", "v")); res.status != 200 {
			return fmt.Errorf("authorize for the new client: %d", res.status)
		}
		return nil
	})
	for c, p := range procs {
		if exited, _ := p.Exited(); exited || p.Pid() != pids[c] {
			t.Errorf("%s restarted or exited", c)
		}
	}
}

func waitConfigMap(t *testing.T, ns string, ok func(*corev1.ConfigMap) bool) *corev1.ConfigMap {
	t.Helper()
	var cm corev1.ConfigMap
	eventually(t, func() error {
		if err := k8s.Get(context.Background(), key(ns, "acme-config"), &cm); err != nil {
			return err
		}
		if !ok(&cm) {
			return fmt.Errorf("ConfigMap not there yet: %v", cm.Data)
		}
		for _, c := range render.Components {
			if _, err := config.Parse([]byte(cm.Data[c+".yaml"])); err != nil {
				return err
			}
		}
		return nil
	})
	return &cm
}

func writeSecret(t *testing.T, dir, name string, data map[string][]byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, name), 0o700); err != nil {
		t.Fatal(err)
	}
	for k, v := range data {
		if err := os.WriteFile(filepath.Join(dir, name, k), v, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

type httpResult struct {
	status int
	header http.Header
	body   string
}

var plainClient = &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func do(t *testing.T, c *http.Client, req *http.Request) httpResult {
	t.Helper()
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return httpResult{res.StatusCode, res.Header, string(b)}
}

func post(t *testing.T, u, origin, body string) httpResult {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", origin)
	return do(t, plainClient, req)
}

func get(t *testing.T, u string) httpResult {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	return do(t, plainClient, req)
}

func expectJSON(t *testing.T, r httpResult, status int, fragment string) {
	t.Helper()
	if r.status != status || !strings.Contains(r.body, fragment) {
		t.Errorf("got %d %s, want %d with %s", r.status, tail(r.body, 300), status, fragment)
	}
}

func createUser(t *testing.T, bin, authDir, email, password string) {
	t.Helper()
	cmd := exec.Command(bin, "users", "create", "-config", filepath.Join(authDir, "config.yaml"), "-email", email)
	cmd.Stdin = strings.NewReader(password + "\n")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("formsservice users create: %v\n%s", err, out)
	}
}

func authorizeURL(base, clientID, redirect, state, verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{
		"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect}, "scope": {"openid email offline_access"},
		"state": {state}, "nonce": {"nonce-" + state}, "code_challenge_method": {"S256"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])},
	}
	return base + "/oauth2/authorize?" + q.Encode()
}

var (
	formRe  = regexp.MustCompile(`(?s)<form method="post" action="([^"]+)">(.*?)</form>`)
	inputRe = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
)

type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	IDToken      string `json:"id_token"`
	Error        string `json:"error"`
}

// signIn runs the browser's part of the authorization code flow with PKCE against the hosted page, then
// the app's token exchange.
func signIn(t *testing.T, base, clientID, redirect, email, password string) tokenResponse {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: plainClient.CheckRedirect}
	verifier := "verifier-" + strings.Repeat("x", 40)
	req, _ := http.NewRequest(http.MethodGet, authorizeURL(base, clientID, redirect, "state-0123456789", verifier), nil)
	page := do(t, browser, req)
	m := formRe.FindStringSubmatch(page.body)
	if page.status != 200 || m == nil {
		t.Fatalf("sign-in page: %d\n%s", page.status, tail(page.body, 600))
	}
	form := url.Values{}
	for _, in := range inputRe.FindAllStringSubmatch(m[2], -1) {
		form.Set(in[1], html.UnescapeString(in[2]))
	}
	form.Set("email", email)
	form.Set("password", password)
	req, _ = http.NewRequest(http.MethodPost, base+html.UnescapeString(m[1]), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res := do(t, browser, req)
	loc, _ := url.Parse(res.header.Get("Location"))
	if res.status != http.StatusSeeOther || loc == nil || loc.Query().Get("code") == "" {
		t.Fatalf("sign-in: %d to %q\n%s", res.status, res.header.Get("Location"), tail(res.body, 600))
	}
	tr, err := http.PostForm(base+"/oauth2/token", url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"redirect_uri": {redirect}, "client_id": {clientID}, "code_verifier": {verifier}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Body.Close()
	var tk tokenResponse
	if err := json.NewDecoder(tr.Body).Decode(&tk); err != nil || tr.StatusCode != 200 {
		t.Fatalf("token exchange: %d %v %+v", tr.StatusCode, err, tk)
	}
	return tk
}

func jwtHeader(t *testing.T, token string) map[string]any {
	t.Helper()
	head, _, _ := strings.Cut(token, ".")
	b, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		t.Fatalf("not a JWT: %q", token)
	}
	var h map[string]any
	_ = json.Unmarshal(b, &h)
	return h
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
