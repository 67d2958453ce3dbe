package auth_test

import (
	"context"
	"errors"
	"html"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testldap"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Signing in through a real LDAP directory (internal/testldap: OpenLDAP's slapd, no mock), over HTTP as a
// browser does it: the hosted page's button for the ldap connector, its username and password page, and
// the code back to the client (D75).

type directoryProvider struct {
	*provider
	dir *testldap.Server
}

// startDirectory is a provider with one ldap connector, "corp", on a seeded slapd, offered to the test
// client; trust is its trustEmailVerified.
func startDirectory(t *testing.T, trust bool) *directoryProvider {
	t.Helper()
	p := startProvider(t, setup{})
	d := testldap.Start(t, nil)
	f := &directoryProvider{provider: p, dir: d}
	f.configure(trust)
	return f
}

func (f *directoryProvider) configure(trust bool) {
	f.t.Helper()
	secret := filepath.Join(f.t.TempDir(), "bind-password")
	if err := os.WriteFile(secret, []byte(testldap.ServicePass+"\n"), 0o600); err != nil {
		f.t.Fatal(err)
	}
	c := config.Connector{ID: "corp", Type: config.TypeLDAP, Name: "Corp directory", TrustEmailVerified: &trust,
		LDAP: &config.LDAPConnector{Host: f.dir.Addr(), TLS: config.LDAPInsecureNoTLS, BindDN: testldap.ServiceDN, BindPasswordFile: secret,
			UserSearch:  config.LDAPUserSearch{BaseDN: testldap.PeopleDN, Filter: "(objectClass=inetOrgPerson)"},
			GroupSearch: &config.LDAPGroupSearch{BaseDN: testldap.GroupsDN}}}
	next := *f.cfg
	next.Auth.Connectors = []config.Connector{c}
	next.Auth.Clients = slices.Clone(f.cfg.Auth.Clients)
	next.Auth.Clients[0].Connectors = []string{"corp"}
	next.ApplyDefaults()
	if err := next.Validate(); err != nil {
		f.t.Fatal(err)
	}
	f.live.c.Store(&next)
	f.cfg = &next
}

var firstFormAction = regexp.MustCompile(`<form method="post" action="([^"]+)">`)

// viaDirectory chooses the connector on the sign-in page of authorize, then posts username and password
// on its page; it returns the answer to the post.
func (f *directoryProvider) viaDirectory(b *browser, authorize, username, password string) response {
	f.t.Helper()
	start := b.get(authorize)
	if start.StatusCode != http.StatusOK {
		f.t.Fatalf("authorize page: %d\n%.500s", start.StatusCode, start.body)
	}
	page := b.get(f.base + connectorLink(f.t, start.body, "corp"))
	if page.StatusCode != http.StatusOK || !strings.Contains(page.body, `name="username"`) || !strings.Contains(page.body, "Corp directory") {
		f.t.Fatalf("the directory's page: %d\n%.800s", page.StatusCode, page.body)
	}
	m := firstFormAction.FindStringSubmatch(page.body)
	if m == nil {
		f.t.Fatalf("no form on the directory's page:\n%.800s", page.body)
	}
	return b.postForm(f.base+html.UnescapeString(m[1]), url.Values{"csrf_token": {csrfOf(f.t, page.body)}, "action": {"ldap"},
		"username": {username}, "password": {password}})
}

func TestFederation_LDAPDirectory(t *testing.T) {
	f := startDirectory(t, false)
	ctx := context.Background()
	us := f.svc.Users()

	t.Run("a person of the directory gets an account, their groups under the prefix", func(t *testing.T) {
		verifier := oauth2.GenerateVerifier()
		res := f.viaDirectory(newBrowser(t), f.authorizeURL("state-0123456789", verifier), "alice", "alice-pass")
		code, _ := codeFrom(t, res, f.redirect)
		tk := f.exchange(code, verifier)
		if tk.status != http.StatusOK {
			t.Fatalf("exchange: %d %s", tk.status, tk.Error)
		}
		c := idClaims(t, tk.IDToken)
		u, err := us.ByEmail(ctx, "alice@example.com")
		if err != nil {
			t.Fatal(err)
		}
		// Not trusted: the account is made, its address not verified by the directory's word.
		if c["sub"] != u.ID || u.Name != "Alice Liddell" || u.Hash != "" || u.EmailVerified {
			t.Fatalf("claims %v, account %+v", c, u)
		}
		if !slices.Equal(u.Groups, []string{"corp:admins", "corp:staff"}) {
			t.Fatalf("groups %v", u.Groups)
		}
		if amr, _ := c["amr"].([]any); len(amr) != 2 || amr[0] != "fed" || amr[1] != "pwd" {
			t.Fatalf("amr %v, want [fed pwd]", c["amr"])
		}
		ids, err := us.Identities(ctx, u.ID)
		if err != nil || len(ids) != 1 || ids[0].Connector != "corp" || len(ids[0].Subject) != 36 { // entryUUID
			t.Fatalf("identities %+v, %v", ids, err)
		}
		if err := f.svc.Audit().Flush(ctx); err != nil {
			t.Fatal(err)
		}
		events, err := audit.NewStore(f.rdb, nil).Query(ctx, audit.Filter{User: u.ID, Kinds: []audit.Kind{audit.SignInConnector}})
		if err != nil || len(events) != 1 || events[0].Outcome != audit.Success || events[0].Detail["connector"] != "corp" || events[0].Detail["account"] != "created" {
			t.Fatalf("audit events %+v, %v", events, err)
		}
	})

	t.Run("wrong password, unknown user, empty password, a filter in the username: one refusal", func(t *testing.T) {
		for _, tc := range [][2]string{{"alice", "wrong"}, {"nobody", "alice-pass"}, {"alice", ""}, {"carol", ""}, {"alic*", "alice-pass"}, {"*)(uid=*", "alice-pass"}} {
			res := f.viaDirectory(newBrowser(t), f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()), tc[0], tc[1])
			if res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.body, "Wrong username or password.") || strings.Contains(res.Header.Get("Location"), "code=") {
				t.Errorf("%q/%q: want 401 and one message, got %d\n%.600s", tc[0], tc[1], res.StatusCode, res.body)
			}
		}
	})

	t.Run("the form needs its CSRF token", func(t *testing.T) {
		b := newBrowser(t)
		u := f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()) + "&connector_id=corp"
		res := b.postForm(u, url.Values{"csrf_token": {"forged"}, "action": {"ldap"}, "username": {"alice"}, "password": {"alice-pass"}})
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("want 403, got %d", res.StatusCode)
		}
	})

	t.Run("an existing account is linked only with trustEmailVerified", func(t *testing.T) {
		bob := f.user("bob@example.com", testPassword)
		res := f.viaDirectory(newBrowser(t), f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()), "bob", "bob-pass")
		if res.StatusCode != http.StatusConflict || !strings.Contains(html.UnescapeString(res.body), "link Corp directory on your account page") {
			t.Fatalf("untrusted: want 409, got %d\n%.600s", res.StatusCode, res.body)
		}
		if ids, _ := us.Identities(ctx, bob); len(ids) != 0 {
			t.Fatalf("linked without trust: %+v", ids)
		}
		f.configure(true)
		defer f.configure(false)
		res = f.viaDirectory(newBrowser(t), f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()), "bob", "bob-pass")
		code, _ := codeFrom(t, res, f.redirect)
		if code == "" {
			t.Fatal("no code")
		}
		if ids, _ := us.Identities(ctx, bob); len(ids) != 1 || ids[0].Connector != "corp" {
			t.Fatalf("trusted: identities %+v", ids)
		}
	})

	t.Run("a disabled account is refused", func(t *testing.T) {
		if _, err := us.SetDisabled(ctx, "alice@example.com", true); err != nil {
			t.Fatal(err)
		}
		defer func() { _, _ = us.SetDisabled(ctx, "alice@example.com", false) }()
		res := f.viaDirectory(newBrowser(t), f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()), "alice", "alice-pass")
		if res.StatusCode != http.StatusForbidden || strings.Contains(res.Header.Get("Location"), "code=") {
			t.Fatalf("want 403, got %d %s", res.StatusCode, res.Header.Get("Location"))
		}
	})

	t.Run("requireMFA still applies on top of the directory", func(t *testing.T) {
		next := *f.cfg
		next.Auth.Clients = slices.Clone(f.cfg.Auth.Clients)
		next.Auth.Clients[0].RequireMFA = true
		f.live.c.Store(&next)
		defer f.live.c.Store(f.cfg)
		res := f.viaDirectory(newBrowser(t), f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()), "alice", "alice-pass")
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/account/totp?") {
			t.Fatalf("want the set-up of a second factor, got %d %s", res.StatusCode, loc)
		}
	})

	t.Run("the directory's page in German", func(t *testing.T) {
		b := newBrowser(t)
		req, _ := http.NewRequest(http.MethodGet, f.authorizeURL("state-0123456789", oauth2.GenerateVerifier())+"&connector_id=corp", nil)
		req.Header.Set("Accept-Language", "de")
		res := b.do(req)
		for _, want := range []string{"Mit Corp directory anmelden", "Benutzername", "Passwort", "Anders anmelden"} {
			if !strings.Contains(res.body, want) {
				t.Errorf("no %q on the German page:\n%.600s", want, res.body)
			}
		}
	})

	t.Run("the directory down: a clear page, never a 500", func(t *testing.T) {
		f.dir.Stop()
		defer f.dir.Restart()
		res := f.viaDirectory(newBrowser(t), f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()), "alice", "alice-pass")
		if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(res.body, "Corp directory did not answer") || res.Header.Get("Retry-After") == "" {
			t.Fatalf("want 503 saying the directory did not answer, got %d\n%.600s", res.StatusCode, res.body)
		}
	})

	t.Run("failures count against the sign-in throttle", func(t *testing.T) {
		var last response
		for range 12 {
			last = f.viaDirectory(newBrowser(t), f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()), "bob", "guess")
			if last.StatusCode == http.StatusTooManyRequests {
				break
			}
		}
		if last.StatusCode != http.StatusTooManyRequests || last.Header.Get("Retry-After") == "" {
			t.Fatalf("after repeated failures: %d, want 429 with Retry-After", last.StatusCode)
		}
		if _, err := us.ByIdentity(ctx, "corp", "x"); !errors.Is(err, users.ErrNotFound) {
			t.Fatal(err)
		}
	})
}
