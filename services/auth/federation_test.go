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

	"github.com/formsservice/formsservice/internal/testupstream"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Signing in through a real upstream OpenID provider (internal/testupstream: oidc-provider under
// Node.js, no mock), over HTTP as a browser does it: the hosted page's connector action, the upstream's
// login page, its answer at /oauth2/callback, and the code back to the client (D58).

const upstreamSecret = "upstream-client-secret-0123456789"

// federated is a provider with one connector, "upstream", offered to the test client.
type federated struct {
	*provider
	issuer string
}

// startFederated starts the provider, then the upstream that knows its callback, then gives the
// provider the connector (a reload): each needs the other's address.
func startFederated(t *testing.T, accounts map[string]testupstream.Account, mutate func(*config.Connector)) *federated {
	t.Helper()
	f, _ := startFederatedWith(t, setup{}, accounts, mutate)
	return f
}

// startFederatedWith is startFederated with the provider's setup, and the running upstream.
func startFederatedWith(t *testing.T, s setup, accounts map[string]testupstream.Account, mutate func(*config.Connector)) (*federated, *testupstream.Upstream) {
	t.Helper()
	p := startProvider(t, s)
	up := testupstream.Run(t, []testupstream.Client{{ID: "formsservice", Secret: upstreamSecret,
		RedirectURIs: []string{p.base + "/oauth2/callback"}}}, accounts)
	issuer := up.Issuer
	secret := filepath.Join(t.TempDir(), "upstream-secret")
	if err := os.WriteFile(secret, []byte(upstreamSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yes := true
	c := config.Connector{ID: "upstream", Name: "Upstream", Issuer: issuer, ClientID: "formsservice", ClientSecretFile: secret,
		TrustEmailVerified: &yes, Claims: config.ConnectorClaims{Groups: "groups"}, Scopes: []string{"openid", "email", "profile", "groups"}}
	if mutate != nil {
		mutate(&c)
	}
	next := *p.cfg
	next.Auth.Connectors = []config.Connector{c}
	next.Auth.Clients = slices.Clone(p.cfg.Auth.Clients)
	next.Auth.Clients[0].Connectors = []string{"upstream"}
	next.ApplyDefaults()
	if err := next.Validate(); err != nil {
		t.Fatal(err)
	}
	p.live.c.Store(&next)
	p.cfg = &next
	return &federated{provider: p, issuer: issuer}, up
}

var upstreamFormRe = regexp.MustCompile(`(?s)<form[^>]*action="([^"]+)"[^>]*method="post"|<form[^>]*method="post"[^>]*action="([^"]+)"`)

// viaUpstream starts a sign-in at the hosted page, chooses the connector, signs in at the upstream as
// login, and returns our provider's answer to the upstream's callback (and the callback's URL).
func (f *federated) viaUpstream(b *browser, login string, authorize string) (response, string) {
	f.t.Helper()
	page := b.get(authorize)
	if page.StatusCode != http.StatusOK {
		f.t.Fatalf("authorize page: %d\n%.500s", page.StatusCode, page.body)
	}
	return f.atUpstream(b, b.get(f.base+connectorLink(f.t, page.body, "upstream")), login)
}

// connectorLink is the href of the page's button for the connector id.
func connectorLink(t testing.TB, body, id string) string {
	t.Helper()
	m := regexp.MustCompile(`<a class="button[^"]*" href="([^"]+)" data-connector="` + id + `">`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no button for %s on the page:\n%.1500s", id, body)
	}
	return html.UnescapeString(m[1])
}

// atUpstream follows res (a redirect to the upstream) through its login page as login, until the
// upstream answers our callback; it returns that answer.
func (f *federated) atUpstream(b *browser, res response, login string) (response, string) {
	f.t.Helper()
	callback := f.upToCallback(b, res, login)
	return b.get(callback), callback
}

// upToCallback follows res through the upstream's pages as login, and returns the URL of its answer to
// our callback without following it.
func (f *federated) upToCallback(b *browser, res response, login string) string {
	f.t.Helper()
	for range 10 {
		switch {
		case res.StatusCode == http.StatusSeeOther || res.StatusCode == http.StatusFound:
			loc, err := url.Parse(res.Header.Get("Location"))
			if err != nil {
				f.t.Fatal(err)
			}
			next := res.Request.URL.ResolveReference(loc)
			if strings.HasPrefix(next.String(), f.base+"/oauth2/callback") {
				return next.String()
			}
			res = b.get(next.String())
		case res.StatusCode == http.StatusOK && strings.Contains(res.body, `name="login"`):
			m := upstreamFormRe.FindStringSubmatch(res.body)
			if m == nil {
				f.t.Fatalf("no form on the upstream's login page:\n%.800s", res.body)
			}
			action := html.UnescapeString(m[1] + m[2])
			u, _ := res.Request.URL.Parse(action)
			res = b.postForm(u.String(), url.Values{"prompt": {"login"}, "login": {login}, "password": {"any"}})
		case res.StatusCode == http.StatusOK && strings.Contains(res.body, `name="prompt" value="consent"`):
			// The upstream's consent page: offline_access (a refresh token) is asked with prompt=consent.
			m := upstreamFormRe.FindStringSubmatch(res.body)
			if m == nil {
				f.t.Fatalf("no form on the upstream's consent page:\n%.800s", res.body)
			}
			u, _ := res.Request.URL.Parse(html.UnescapeString(m[1] + m[2]))
			res = b.postForm(u.String(), url.Values{"prompt": {"consent"}})
		default:
			f.t.Fatalf("on the way to the upstream: %d %s\n%.800s", res.StatusCode, res.Request.URL, res.body)
		}
	}
	f.t.Fatal("the upstream did not answer the callback within 10 steps")
	return ""
}

// signInVia signs in through the upstream as login and returns the client's tokens.
func (f *federated) signInVia(login string) tokens {
	f.t.Helper()
	b := newBrowser(f.t)
	verifier := oauth2.GenerateVerifier()
	res, _ := f.viaUpstream(b, login, f.authorizeURL("state-0123456789", verifier))
	code, _ := codeFrom(f.t, res, f.redirect)
	tk := f.exchange(code, verifier)
	if tk.status != http.StatusOK {
		f.t.Fatalf("exchange: %d %s", tk.status, tk.Error)
	}
	return tk
}

func idClaims(t *testing.T, idToken string) map[string]any { return claimsOf(t, idToken) }

func TestFederation_RealUpstream(t *testing.T) {
	f := startFederated(t, map[string]testupstream.Account{
		"newcomer": {"email": "newcomer@example.com", "email_verified": true, "name": "New Comer", "groups": []string{"staff"}},
		"ada":      {"email": testEmail, "email_verified": true, "name": "Ada at upstream"},
		"mallory":  {"email": "owner@example.com", "email_verified": false, "name": "Not the owner"},
		"noemail":  {"name": "No Address"},
		"early":    {"email": "early@example.com", "email_verified": true, "name": "The Owner"},
	}, nil)
	ctx := context.Background()
	us := f.svc.Users()

	t.Run("a new person gets an account just in time, linked", func(t *testing.T) {
		tk := f.signInVia("newcomer")
		c := idClaims(t, tk.IDToken)
		u, err := us.ByEmail(ctx, "newcomer@example.com")
		if err != nil {
			t.Fatal(err)
		}
		if c["sub"] != u.ID || !u.EmailVerified || u.Name != "New Comer" || u.Hash != "" {
			t.Fatalf("claims %v, account %+v", c, u)
		}
		// The upstream's groups, under the connector's prefix, beside the operator's.
		if !slices.Equal(u.Groups, []string{"upstream:staff"}) {
			t.Fatalf("groups %v, want [upstream:staff]", u.Groups)
		}
		if amr, _ := c["amr"].([]any); len(amr) != 1 || amr[0] != "fed" {
			t.Fatalf("amr %v, want [fed]", c["amr"])
		}
		ids, err := us.Identities(ctx, u.ID)
		if err != nil || len(ids) != 1 || ids[0].Connector != "upstream" || ids[0].Subject != "newcomer" {
			t.Fatalf("identities %+v, %v", ids, err)
		}
		if _, _, err := us.AddGroups(ctx, u.Email, []string{"ops", "upstream:gone"}); err != nil {
			t.Fatal(err)
		}
		// The next sign-in finds the link: the same account, no second one; the upstream's groups are
		// what it says now, the operator's stay.
		if again := idClaims(t, f.signInVia("newcomer").IDToken); again["sub"] != u.ID {
			t.Fatalf("second sign-in is %v, want %s", again["sub"], u.ID)
		}
		if u, _ = us.ByID(ctx, u.ID); !slices.Equal(u.Groups, []string{"ops", "upstream:staff"}) {
			t.Fatalf("groups after the second sign-in %v, want [ops upstream:staff]", u.Groups)
		}
	})

	t.Run("a verified address of a trusted connector links the existing account", func(t *testing.T) {
		id := f.user(testEmail, testPassword)
		if c := idClaims(t, f.signInVia("ada").IDToken); c["sub"] != id {
			t.Fatalf("signed in as %v, want the existing account %s", c["sub"], id)
		}
		if u, err := us.ByIdentity(ctx, "upstream", "ada"); err != nil || u.ID != id {
			t.Fatalf("identity links to %+v, %v", u, err)
		}
	})

	t.Run("an unverified address does not link to the account that has it", func(t *testing.T) {
		owner := f.user("owner@example.com", testPassword)
		b := newBrowser(t)
		res, _ := f.viaUpstream(b, "mallory", f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()))
		if res.StatusCode != http.StatusConflict || !strings.Contains(html.UnescapeString(res.body), "link Upstream on your account page") {
			t.Fatalf("want 409 and the way to link, got %d\n%.800s", res.StatusCode, res.body)
		}
		if _, err := us.ByIdentity(ctx, "upstream", "mallory"); !errors.Is(err, users.ErrNotFound) {
			t.Fatalf("mallory was linked: %v", err)
		}
		if ids, _ := us.Identities(ctx, owner); len(ids) != 0 {
			t.Fatalf("the owner's account has identities %+v", ids)
		}
	})

	t.Run("an account whose own address is unverified is not linked automatically (pre-hijacking)", func(t *testing.T) {
		// Someone made an account with the owner's address and a password of theirs, never verified.
		squatter := f.unverifiedUser("early@example.com", testPassword)
		res, _ := f.viaUpstream(newBrowser(t), "early", f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()))
		if res.StatusCode != http.StatusConflict {
			t.Fatalf("want 409, got %d %s", res.StatusCode, res.Header.Get("Location"))
		}
		if ids, _ := us.Identities(ctx, squatter); len(ids) != 0 {
			t.Fatalf("the unverified account got the identity: %+v", ids)
		}
	})

	t.Run("the account page's own sign-in offers every connector", func(t *testing.T) {
		b := newBrowser(t)
		res := b.get(f.base + "/account")
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("/account: %d", res.StatusCode)
		}
		next, _ := res.Request.URL.Parse(res.Header.Get("Location"))
		page := b.get(next.String())
		connectorLink(t, page.body, "upstream")
	})

	t.Run("a disabled account cannot sign in through the connector", func(t *testing.T) {
		if _, err := us.SetDisabled(ctx, "newcomer@example.com", true); err != nil {
			t.Fatal(err)
		}
		defer func() { _, _ = us.SetDisabled(ctx, "newcomer@example.com", false) }()
		res, _ := f.viaUpstream(newBrowser(t), "newcomer", f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()))
		if res.StatusCode != http.StatusForbidden || strings.Contains(res.Header.Get("Location"), "code=") {
			t.Fatalf("want 403 for a disabled account, got %d %s", res.StatusCode, res.Header.Get("Location"))
		}
	})

	t.Run("no address, no account", func(t *testing.T) {
		res, _ := f.viaUpstream(newBrowser(t), "noemail", f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()))
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("want 403, got %d\n%.500s", res.StatusCode, res.body)
		}
	})

	t.Run("the upstream's answer works once, and only in the browser that started it", func(t *testing.T) {
		b := newBrowser(t)
		verifier := oauth2.GenerateVerifier()
		page := b.get(f.authorizeURL("state-0123456789", verifier))
		start := b.get(f.base + connectorLink(t, page.body, "upstream"))
		// Follow the upstream but keep its answer: another browser (an attacker's login CSRF) is refused.
		var callback string
		res := start
		for i := 0; i < 10 && callback == ""; i++ {
			if loc := res.Header.Get("Location"); strings.HasPrefix(loc, f.base+"/oauth2/callback") {
				callback = loc
				break
			}
			if res.StatusCode == http.StatusOK {
				m := upstreamFormRe.FindStringSubmatch(res.body)
				u, _ := res.Request.URL.Parse(html.UnescapeString(m[1] + m[2]))
				res = b.postForm(u.String(), url.Values{"prompt": {"login"}, "login": {"newcomer"}, "password": {"any"}})
				continue
			}
			next, _ := res.Request.URL.Parse(res.Header.Get("Location"))
			res = b.get(next.String())
		}
		if q, _ := url.Parse(callback); q == nil || q.Query().Get("iss") != f.issuer {
			t.Fatalf("the upstream's answer %q carries no iss (RFC 9207)", callback)
		}
		if other := newBrowser(t).get(callback); other.StatusCode != http.StatusBadRequest {
			t.Fatalf("another browser's callback: %d, want 400", other.StatusCode)
		}
		if first := b.get(callback); first.StatusCode != http.StatusSeeOther || !strings.Contains(first.Header.Get("Location"), "code=") {
			t.Fatalf("the browser's own callback: %d %s", first.StatusCode, first.Header.Get("Location"))
		}
		if replay := b.get(callback); replay.StatusCode != http.StatusBadRequest {
			t.Fatalf("the callback again: %d, want 400", replay.StatusCode)
		}
	})

	t.Run("requireMFA still applies: a federated account sets up a second factor first", func(t *testing.T) {
		next := *f.cfg
		next.Auth.Clients = slices.Clone(f.cfg.Auth.Clients)
		next.Auth.Clients[0].RequireMFA = true
		f.live.c.Store(&next)
		defer f.live.c.Store(f.cfg)
		res, _ := f.viaUpstream(newBrowser(t), "newcomer", f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()))
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/account/totp?") {
			t.Fatalf("want the set-up of a second factor, got %d %s", res.StatusCode, loc)
		}
	})

	t.Run("the button in German", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()), nil)
		req.Header.Set("Accept-Language", "de")
		res := newBrowser(t).do(req)
		for _, want := range []string{"Mit Upstream anmelden", "Oder melden Sie sich mit einem Konto an, das Sie schon haben"} {
			if !strings.Contains(res.body, want) {
				t.Errorf("no %q on the German page", want)
			}
		}
	})

	t.Run("connector_id goes straight to the upstream", func(t *testing.T) {
		b := newBrowser(t)
		verifier := oauth2.GenerateVerifier()
		res := b.get(f.authorizeURL("state-0123456789", verifier, oauth2.SetAuthURLParam("connector_id", "upstream")))
		if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), f.issuer) {
			t.Fatalf("want a redirect to the upstream, got %d %s", res.StatusCode, res.Header.Get("Location"))
		}
		answer, _ := f.atUpstream(b, res, "newcomer")
		codeFrom(t, answer, f.redirect)
		bad := b.get(f.authorizeURL("state-0123456789", verifier, oauth2.SetAuthURLParam("connector_id", "nope")))
		if loc := bad.Header.Get("Location"); !strings.Contains(loc, "error=invalid_request") {
			t.Fatalf("an unknown connector_id: %d %s", bad.StatusCode, loc)
		}
	})
}

// The upstream's answer is checked before anything is believed: an ID token signed with an algorithm
// the connector does not pin is refused (the upstream signs RS256; the connector takes ES256 only), and
// so is an answer whose iss is another provider's (RFC 9207 mix-up). Neither signs anyone in.
func TestFederation_RealUpstream_RefusesUnpinnedAlgorithmAndForeignIss(t *testing.T) {
	accounts := map[string]testupstream.Account{"newcomer": {"email": "newcomer@example.com", "email_verified": true}}
	f := startFederated(t, accounts, func(c *config.Connector) { c.SigningAlgs = []string{"ES256"} })
	res, _ := f.viaUpstream(newBrowser(t), "newcomer", f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()))
	if res.StatusCode != http.StatusBadGateway || !strings.Contains(res.body, "did not work") {
		t.Fatalf("an RS256 ID token for an ES256 connector: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	if _, err := f.svc.Users().ByEmail(context.Background(), "newcomer@example.com"); !errors.Is(err, users.ErrNotFound) {
		t.Fatalf("an account was made: %v", err)
	}

	g := startFederated(t, accounts, nil)
	b := newBrowser(t)
	page := b.get(g.authorizeURL("state-0123456789", oauth2.GenerateVerifier()))
	res = b.get(g.base + connectorLink(t, page.body, "upstream"))
	for i := 0; i < 10; i++ { // to the upstream's answer, without following it
		if loc := res.Header.Get("Location"); strings.HasPrefix(loc, g.base+"/oauth2/callback") {
			u, _ := url.Parse(loc)
			q := u.Query()
			q.Set("iss", "https://other-provider.example")
			u.RawQuery = q.Encode()
			mixed := b.get(u.String())
			if mixed.StatusCode != http.StatusBadGateway || strings.Contains(mixed.Header.Get("Location"), "code=") {
				t.Fatalf("an answer with another provider's iss: %d %s", mixed.StatusCode, mixed.Header.Get("Location"))
			}
			return
		}
		if res.StatusCode == http.StatusOK {
			m := upstreamFormRe.FindStringSubmatch(res.body)
			u, _ := res.Request.URL.Parse(html.UnescapeString(m[1] + m[2]))
			res = b.postForm(u.String(), url.Values{"prompt": {"login"}, "login": {"newcomer"}, "password": {"any"}})
			continue
		}
		next, _ := res.Request.URL.Parse(res.Header.Get("Location"))
		res = b.get(next.String())
	}
	t.Fatal("the upstream did not answer")
}
