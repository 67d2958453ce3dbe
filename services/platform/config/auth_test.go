package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Redirect URIs follow the OAuth 2.0 Security BCP (RFC 9700 4.1) and RFC 8252 7.3: https anywhere,
// plain http only for loopback and localhost, never a fragment, user info, a relative URL or another
// scheme. A refused one is named in the error.
func TestValidateRedirectURI_HTTPOnlyForLoopback(t *testing.T) {
	for _, ok := range []string{
		"https://app.example/callback",
		"https://app.example:8443/cb?x=1",
		"http://localhost:3000/callback",
		"http://127.0.0.1:8080/demo/callback",
		"http://[::1]:8080/cb",
		"http://dev.localhost/cb",
	} {
		if err := validateRedirectURI(ok); err != nil {
			t.Errorf("%s: refused: %v", ok, err)
		}
	}
	for _, bad := range []string{
		"http://app.example/callback",      // plain http off loopback
		"http://localhost.evil.example/cb", // looks like localhost, is not
		"http://127.0.0.1.nip.io/cb",
		"http://10.0.0.1/cb",
		"https://app.example/cb#frag",
		"https://user:pw@app.example/cb",
		"/relative/callback",
		"javascript:alert(1)",
		"custom.scheme:/cb",
		"ftp://app.example/cb",
	} {
		err := validateRedirectURI(bad)
		if err == nil {
			t.Errorf("%s: accepted", bad)
			continue
		}
		if !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: the error does not name it: %v", bad, err)
		}
	}
}

// The issuer must be https (cookies otherwise lose Secure and __Host-, tokens travel in clear text),
// except on loopback and localhost, for development.
func TestValidate_IssuerHTTPSExceptLoopback(t *testing.T) {
	for _, ok := range []string{"https://id.example.com", "http://127.0.0.1:8080", "http://localhost:3000", "http://[::1]:8080", "http://id.localhost"} {
		if errs := (Auth{Issuer: ok}).validate(); len(errs) != 0 {
			t.Errorf("%s: refused: %v", ok, errs)
		}
	}
	for _, bad := range []string{"http://id.example.com", "http://10.0.0.1:8080", "http://localhost.evil.example"} {
		errs := (Auth{Issuer: bad}).validate()
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "must be https") {
			t.Errorf("%s: %v, want one 'must be https' error", bad, errs)
		}
	}
}

// A client's audiences name APIs as RFC 8707 resource indicators: absolute URIs without a fragment.
func TestValidate_ClientAudiencesAreAbsoluteURIs(t *testing.T) {
	client := func(aud ...string) Auth {
		return Auth{Clients: []OAuthClient{{ClientID: "app", RedirectURIs: []string{"https://app.example/cb"}, Audiences: aud}}}
	}
	if errs := client("https://api.example/orders", "urn:x:y").validate(); len(errs) != 1 {
		t.Errorf("urn without host: %v, want one error", errs)
	}
	if errs := client("https://api.example/orders").validate(); len(errs) != 0 {
		t.Errorf("an https API: %v", errs)
	}
	for _, bad := range []string{"orders", "/orders", "https://api.example/orders#x", ""} {
		if errs := client(bad).validate(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "audiences") {
			t.Errorf("%q: %v", bad, errs)
		}
	}
}

// A back-channel logout URI is checked as a redirect URI is (https, http only on loopback, no
// fragment); sessionRequired needs a URI, and accessTokenGroups needs the groups scope.
func TestValidate_BackchannelLogoutURIAndAccessTokenGroups(t *testing.T) {
	client := func(f func(*OAuthClient)) []error {
		c := OAuthClient{ClientID: "app", RedirectURIs: []string{"https://app.example/cb"}, Scopes: []string{"openid"}}
		f(&c)
		return Auth{Clients: []OAuthClient{c}}.validate()
	}
	for _, good := range []string{"https://app.example/backchannel", "https://app.example/bcl?tenant=1", "http://127.0.0.1:9000/bcl", "http://localhost/bcl"} {
		if errs := client(func(c *OAuthClient) { c.BackchannelLogoutURI = good; c.BackchannelLogoutSessionRequired = true }); len(errs) != 0 {
			t.Errorf("%q: %v", good, errs)
		}
	}
	for _, bad := range []string{"http://app.example/bcl", "https://app.example/bcl#x", "/bcl", "ftp://app.example/bcl", "https://u:p@app.example/bcl"} {
		if errs := client(func(c *OAuthClient) { c.BackchannelLogoutURI = bad }); len(errs) != 1 || !strings.Contains(errs[0].Error(), "backchannelLogoutURI") {
			t.Errorf("%q: %v, want one backchannelLogoutURI error", bad, errs)
		}
	}
	if errs := client(func(c *OAuthClient) { c.BackchannelLogoutSessionRequired = true }); len(errs) != 1 || !strings.Contains(errs[0].Error(), "needs a backchannelLogoutURI") {
		t.Errorf("sessionRequired without a URI: %v", errs)
	}
	if errs := client(func(c *OAuthClient) { c.AccessTokenGroups = true }); len(errs) != 1 || !strings.Contains(errs[0].Error(), "accessTokenGroups") {
		t.Errorf("accessTokenGroups without the groups scope: %v", errs)
	}
	if errs := client(func(c *OAuthClient) { c.AccessTokenGroups = true; c.Scopes = append(c.Scopes, "groups") }); len(errs) != 0 {
		t.Errorf("accessTokenGroups with the groups scope: %v", errs)
	}
}

// The sign-in budgets and the audit trail's bounds have defaults (docs/auth.md states them), and
// negative values are refused by name.
func TestAuth_ThrottleAndAuditDefaults(t *testing.T) {
	c := &Config{PublicURL: "http://127.0.0.1:8080"}
	c.ApplyDefaults()
	th, au := c.Auth.Throttle, c.Auth.Audit
	if th.DeviceFailures != 10 || th.AccountFailures != 10 || th.IPFailures != 50 || th.Window.D() != 15*time.Minute ||
		th.DelayAfter != 3 || th.MaxDelay.D() != time.Minute || th.DeviceLifetime.D() != 180*24*time.Hour ||
		th.SignupsPerIP != 10 || th.SignupsPerAddress != 3 || th.SignupWindow.D() != time.Hour {
		t.Errorf("throttle defaults: %+v", th)
	}
	if au.Retention.D() != 30*24*time.Hour || au.MaxEntries != 100000 {
		t.Errorf("audit defaults: %+v", au)
	}
	bad := Auth{Throttle: Throttle{MaxDelay: Duration(-time.Second), DeviceLifetime: Duration(-time.Second), DelayAfter: -1}, Audit: Audit{Retention: Duration(-time.Second), MaxEntries: -1}}
	msg := errors.Join(bad.validate()...).Error()
	for _, want := range []string{"throttle.maxDelay", "throttle.deviceLifetime", "audit.retention", "audit.maxEntries", "throttle limits"} {
		if !strings.Contains(msg, want) {
			t.Errorf("validation does not name %s: %s", want, msg)
		}
	}
}

// forwardingHeaders names only the two headers the client address is read from.
func TestValidate_ForwardingHeaders(t *testing.T) {
	ok := &Config{ForwardingHeaders: []string{"x-forwarded-for", "Forwarded"}}
	ok.ApplyDefaults()
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := &Config{ForwardingHeaders: []string{"X-Real-IP"}}
	bad.ApplyDefaults()
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), `forwardingHeaders: "X-Real-IP"`) {
		t.Fatalf("X-Real-IP: %v", err)
	}
}

// The audit sink (D67) takes defaults, needs a signing secret and https off loopback, and refuses
// out-of-range batches and timeouts by name, without repeating the URL.
func TestAuth_AuditWebhook(t *testing.T) {
	c := &Config{PublicURL: "http://127.0.0.1:8080"}
	c.Auth.Audit.Webhook = &AuditWebhook{URL: "https://siem.example/in", SecretFile: "/run/secrets/whsec"}
	c.ApplyDefaults()
	if w := c.Auth.Audit.Webhook; w.BatchSize != DefaultAuditBatchSize || w.Timeout.D() != 10*time.Second {
		t.Errorf("defaults: %+v", w)
	}
	if errs := c.Auth.validate(); len(errs) != 0 {
		t.Errorf("a good sink: %v", errs)
	}
	valid := func(mod func(w *AuditWebhook)) []error {
		w := AuditWebhook{URL: "https://siem.example/in?token=s3cret", SecretFile: "/s", BatchSize: 10, Timeout: Duration(time.Second)}
		mod(&w)
		return Auth{Audit: Audit{Webhook: &w}}.validate()
	}
	if errs := valid(func(w *AuditWebhook) { w.URL = "http://127.0.0.1:9/in" }); len(errs) != 0 {
		t.Errorf("http to loopback: %v", errs)
	}
	for name, c := range map[string]struct {
		mod  func(w *AuditWebhook)
		want string
	}{
		"http off loopback":  {func(w *AuditWebhook) { w.URL = "http://siem.example/in?token=s3cret" }, "url: must be https"},
		"not a URL":          {func(w *AuditWebhook) { w.URL = "siem.example/in?token=s3cret" }, "url: must be an http(s) URL"},
		"user information":   {func(w *AuditWebhook) { w.URL = "https://me:s3cret@siem.example/in" }, "url: no user information"},
		"no secret":          {func(w *AuditWebhook) { w.SecretFile = "" }, "secretFile: required"},
		"spaced secret file": {func(w *AuditWebhook) { w.PreviousSecretFile = " /p" }, "previousSecretFile: \" /p\" is not a usable file name"},
		"batch too large":    {func(w *AuditWebhook) { w.BatchSize = MaxAuditBatchSize + 1 }, "batchSize: 1001: want 1 to 1000"},
		"batch zero":         {func(w *AuditWebhook) { w.BatchSize = 0 }, "batchSize: 0"},
		"negative timeout":   {func(w *AuditWebhook) { w.Timeout = Duration(-time.Second) }, "timeout: must be positive"},
	} {
		errs := valid(c.mod)
		msg := errors.Join(errs...).Error()
		if len(errs) != 1 || !strings.Contains(msg, "auth.audit.webhook."+c.want) {
			t.Errorf("%s: %v", name, errs)
		}
		if strings.Contains(msg, "s3cret") {
			t.Errorf("%s: the message repeats the URL's secret: %s", name, msg)
		}
	}
}
