package auth_test

import (
	"context"
	"encoding/json"
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
	"time"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testdex"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Dex as the upstream OpenID provider (internal/testdex: the real Dex, built from the module proxy, no
// mock), beside oidc-provider (federation_test.go): a second implementation that nobody here wrote, with
// its own login page, subjects, refresh tokens and error answers. Over HTTP as a browser does it here;
// in Chromium in federation_dex_browser_test.go.

const dexClientID = "formsservice"

var (
	dexAda = testdex.Account{Email: "ada.dex@example.com", Password: "ada's dex password", Username: "Ada Lovelace", UserID: "ada-0001"}
	dexBob = testdex.Account{Email: "bob.dex@example.com", Password: "bob's dex password", Username: "Bob", UserID: "bob-0002"}
	// dexStaff is a static account (Dex keeps groups only for those) with an unverified address.
	dexStaff = testdex.Account{Email: "staff.dex@example.com", Password: "staff's dex password", Username: "Staff", UserID: "staff-0003",
		Static: true, Groups: []string{"staff", "ops"}, EmailVerified: new(bool)}
	// dexEve's address at Dex is unverified, and an account here has it.
	dexEve = testdex.Account{Email: "eve.dex@example.com", Password: "eve's dex password", Username: "Not the owner", UserID: "eve-0006",
		Static: true, EmailVerified: new(bool)}
)

// dexConnector is the connector of docs/auth.md's example under "Dex as the upstream", with the
// running Dex's issuer and the test's secret file: the page shows what the tests run.
func dexConnector(t *testing.T, issuer, secretFile string) config.Connector {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "auth.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "### Dex as the upstream\n")
	_, block, ok2 := strings.Cut(section, "```yaml\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal(`docs/auth.md has no YAML example under "### Dex as the upstream"`)
	}
	c, err := config.Parse([]byte("publicURL: https://auth.example.com\n" + block))
	if err != nil || len(c.Auth.Connectors) != 1 || c.Auth.Connectors[0].ID != "dex" {
		t.Fatalf("docs/auth.md's Dex example: %v (%d connectors)", err, len(c.Auth.Connectors))
	}
	conn := c.Auth.Connectors[0]
	conn.Issuer, conn.ClientSecretFile = issuer, secretFile
	return conn
}

// startDex starts the provider, then Dex with our callback registered, then gives the provider the
// connector (a reload), changed by mutate.
func startDex(t *testing.T, s setup, mutate func(*config.Connector), accounts ...testdex.Account) (*federated, *testdex.Dex) {
	t.Helper()
	p := startProvider(t, s)
	dx := testdex.Start(t, testdex.Client{ID: dexClientID, Secret: upstreamSecret, RedirectURIs: []string{p.base + "/oauth2/callback"}}, accounts...)
	secret := filepath.Join(t.TempDir(), "dex-secret")
	if err := os.WriteFile(secret, []byte(upstreamSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := dexConnector(t, dx.Issuer, secret)
	if mutate != nil {
		mutate(&c)
	}
	next := *p.cfg
	next.Auth.Connectors = []config.Connector{c}
	next.Auth.Clients = slices.Clone(p.cfg.Auth.Clients)
	next.Auth.Clients[0].Connectors = []string{"dex"}
	next.ApplyDefaults()
	if err := next.Validate(); err != nil {
		t.Fatal(err)
	}
	p.live.c.Store(&next)
	p.cfg = &next
	return &federated{provider: p, issuer: dx.Issuer}, dx
}

var dexFormRe = regexp.MustCompile(`<form method="post" action="([^"]+)">`)

// dexToCallback follows res (the hosted page's connector link, answered with a redirect to Dex)
// through Dex's login page as a, and returns the URL of Dex's answer to our callback, unfollowed.
func (f *federated) dexToCallback(b *browser, res response, a testdex.Account) string {
	f.t.Helper()
	for range 10 {
		switch {
		case res.StatusCode == http.StatusSeeOther || res.StatusCode == http.StatusFound:
			next, err := res.Request.URL.Parse(res.Header.Get("Location"))
			if err != nil {
				f.t.Fatal(err)
			}
			if strings.HasPrefix(next.String(), f.base+"/oauth2/callback") {
				return next.String()
			}
			res = b.get(next.String())
		case res.StatusCode == http.StatusOK && strings.Contains(res.body, `id="submit-login"`):
			if strings.Contains(res.body, `id="login-error"`) {
				f.t.Fatalf("Dex refused %s's password", a.Email)
			}
			m := dexFormRe.FindStringSubmatch(res.body)
			if m == nil {
				f.t.Fatalf("no form on Dex's login page:\n%.800s", res.body)
			}
			action, _ := res.Request.URL.Parse(html.UnescapeString(m[1]))
			res = b.postForm(action.String(), url.Values{"login": {a.Email}, "password": {a.Password}})
		default:
			f.t.Fatalf("on the way through Dex: %d %s\n%.800s", res.StatusCode, res.Request.URL, res.body)
		}
	}
	f.t.Fatal("Dex did not answer the callback within 10 steps")
	return ""
}

// viaDex opens the hosted page of authorize in b, chooses Dex, signs in there as a, and returns the
// URL of Dex's answer to our callback, unfollowed.
func (f *federated) viaDex(b *browser, authorize string, a testdex.Account) string {
	f.t.Helper()
	page := b.get(authorize)
	if page.StatusCode != http.StatusOK {
		f.t.Fatalf("authorize page: %d\n%.500s", page.StatusCode, page.body)
	}
	start := b.get(f.base + connectorLink(f.t, page.body, "dex"))
	if loc := start.Header.Get("Location"); start.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, f.issuer+"/auth?") {
		f.t.Fatalf("the button leads to %d %s, not Dex's authorization endpoint", start.StatusCode, loc)
	}
	return f.dexToCallback(b, start, a)
}

// signInViaDex signs in through Dex as a and returns the client's tokens.
func (f *federated) signInViaDex(a testdex.Account) tokens {
	f.t.Helper()
	b := newBrowser(f.t)
	verifier := oauth2.GenerateVerifier()
	code, _ := codeFrom(f.t, b.get(f.viaDex(b, f.authorizeURL("state-0123456789", verifier), a)), f.redirect)
	tk := f.exchange(code, verifier)
	if tk.status != http.StatusOK {
		f.t.Fatalf("exchange: %d %s", tk.status, tk.Error)
	}
	return tk
}

func TestFederation_Dex(t *testing.T) {
	f, dx := startDex(t, setup{}, nil, dexAda, dexStaff, dexEve)
	ctx := context.Background()
	us := f.svc.Users()

	t.Run("a new person gets an account just in time, linked to Dex's subject", func(t *testing.T) {
		tk := f.signInViaDex(dexAda)
		c := idClaims(t, tk.IDToken)
		u, err := us.ByEmail(ctx, dexAda.Email)
		if err != nil {
			t.Fatal(err)
		}
		// Dex says the address of an account of its password database is verified (emailVerified unset).
		if c["sub"] != u.ID || !u.EmailVerified || u.Name != dexAda.Username || u.Hash != "" {
			t.Fatalf("claims %v, account %+v", c, u)
		}
		if amr, _ := c["amr"].([]any); !slices.Equal(amr, []any{"fed"}) {
			t.Fatalf("amr %v, want [fed]", c["amr"])
		}
		ids, err := us.Identities(ctx, u.ID)
		if err != nil || len(ids) != 1 || ids[0].Connector != "dex" || ids[0].Subject != testdex.Subject(dexAda) {
			t.Fatalf("identities %+v (%v), want dex / %s", ids, err, testdex.Subject(dexAda))
		}
		if again := idClaims(t, f.signInViaDex(dexAda).IDToken); again["sub"] != u.ID {
			t.Fatalf("the second sign-in is %v, want %s", again["sub"], u.ID)
		}
	})

	t.Run("Dex's groups map into ours; its unverified address makes an unverified account", func(t *testing.T) {
		f.signInViaDex(dexStaff)
		u, err := us.ByEmail(ctx, dexStaff.Email)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(u.Groups, []string{"dex:ops", "dex:staff"}) || u.EmailVerified {
			t.Fatalf("groups %v, verified %v; want [dex:ops dex:staff], unverified", u.Groups, u.EmailVerified)
		}
	})

	t.Run("a verified address at Dex links the existing account; an unverified one does not", func(t *testing.T) {
		grace := testdex.Account{Email: "grace.dex@example.com", Password: "grace's dex password", Username: "Grace", UserID: "grace-0005"}
		dx.Add(t, grace)
		id := f.user(grace.Email, testPassword)
		if c := idClaims(t, f.signInViaDex(grace).IDToken); c["sub"] != id {
			t.Fatalf("signed in as %v, want the existing account %s", c["sub"], id)
		}
		owner := f.user(dexEve.Email, testPassword)
		b := newBrowser(t)
		res := b.get(f.viaDex(b, f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()), dexEve))
		if res.StatusCode != http.StatusConflict || !strings.Contains(html.UnescapeString(res.body), "link Dex on your account page") {
			t.Fatalf("an unverified address at Dex: %d, want 409 and the way to link\n%.600s", res.StatusCode, res.body)
		}
		if ids, _ := us.Identities(ctx, owner); len(ids) != 0 {
			t.Fatalf("the owner's account has identities %+v", ids)
		}
	})

	t.Run("Dex sends no iss (no RFC 9207); another provider's iss added to its answer is refused", func(t *testing.T) {
		b := newBrowser(t)
		callback := f.viaDex(b, f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()), dexAda)
		u, _ := url.Parse(callback)
		q := u.Query()
		if q.Has("iss") || q.Get("code") == "" || q.Get("state") == "" {
			t.Fatalf("Dex's answer %s: want a code and state, and no iss", callback)
		}
		q.Set("iss", "https://other-provider.example")
		u.RawQuery = q.Encode()
		if mixed := b.get(u.String()); mixed.StatusCode != http.StatusBadGateway || strings.Contains(mixed.Header.Get("Location"), "code=") {
			t.Fatalf("Dex's answer with another provider's iss: %d %s", mixed.StatusCode, mixed.Header.Get("Location"))
		}
	})

	t.Run("Dex's answer with its own iss added is taken", func(t *testing.T) {
		b := newBrowser(t)
		verifier := oauth2.GenerateVerifier()
		u, _ := url.Parse(f.viaDex(b, f.authorizeURL("state-0123456789", verifier), dexAda))
		q := u.Query()
		q.Set("iss", dx.Issuer)
		u.RawQuery = q.Encode()
		codeFrom(t, b.get(u.String()), f.redirect)
	})

	t.Run("Dex's ID token carries the sign-in's nonce, and another nonce is refused", func(t *testing.T) {
		// Every sign-in above passed the nonce check. Here the sign-in's kept nonce is changed before
		// Dex's answer comes back, as if Dex's ID token carried another's: refused, no account made.
		mallory := testdex.Account{Email: "mallory.dex@example.com", Password: "mallory's dex password", Username: "M", UserID: "mallory-0004"}
		dx.Add(t, mallory)
		b := newBrowser(t)
		callback, _ := url.Parse(f.viaDex(b, f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()), mallory))
		key := "auth:fed:{" + callback.Query().Get("state") + "}"
		var pending map[string]any
		raw, err := f.rdb.Get(ctx, key).Bytes()
		if err != nil || json.Unmarshal(raw, &pending) != nil || pending["n"] == nil {
			t.Fatalf("the sign-in's pending record %s: %v %s", key, err, raw)
		}
		pending["n"] = "another-sign-ins-nonce"
		raw, _ = json.Marshal(pending)
		if err := f.rdb.Set(ctx, key, raw, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if res := b.get(callback.String()); res.StatusCode != http.StatusBadGateway || strings.Contains(res.Header.Get("Location"), "code=") {
			t.Fatalf("an ID token with another nonce: %d %s", res.StatusCode, res.Header.Get("Location"))
		}
		if _, err := us.ByEmail(ctx, mallory.Email); !errors.Is(err, users.ErrNotFound) {
			t.Fatalf("an account was made: %v", err)
		}
	})

	t.Run("a wrong password stays at Dex", func(t *testing.T) {
		b := newBrowser(t)
		page := b.get(f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()))
		res := b.get(f.base + connectorLink(t, page.body, "dex"))
		for res.StatusCode == http.StatusSeeOther || res.StatusCode == http.StatusFound {
			next, _ := res.Request.URL.Parse(res.Header.Get("Location"))
			res = b.get(next.String())
		}
		action, _ := res.Request.URL.Parse(html.UnescapeString(dexFormRe.FindStringSubmatch(res.body)[1]))
		wrong := b.postForm(action.String(), url.Values{"login": {dexAda.Email}, "password": {"not it"}})
		if wrong.StatusCode != http.StatusUnauthorized || !strings.Contains(wrong.body, `id="login-error"`) {
			t.Fatalf("a wrong password at Dex: %d", wrong.StatusCode)
		}
	})
}

// Staying correct after sign-in with Dex (docs/auth.md "Dex as the upstream", D81). Dex rotates its
// refresh tokens (here with no reuse interval: a used one is refused at once), and answers a refresh
// of a grant it no longer has (revoked through its API) with 400 invalid_request, not invalid_grant;
// a refresh of a grant whose account was deleted fails inside Dex's password connector, which Dex
// answers with 500, as it answers its own failures.

// startDexRechecking is a provider whose Dex connector re-checks every recheckEvery on clock, with
// onUpstreamDown policy.
func startDexRechecking(t *testing.T, policy string) (*federated, *testdex.Dex, *testClock) {
	t.Helper()
	clock := newTestClock()
	f, dx := startDex(t, setup{now: clock.now}, func(c *config.Connector) {
		c.OfflineAccess, c.RecheckEvery, c.OnUpstreamDown = true, config.Duration(recheckEvery), policy
	}, dexAda, dexBob)
	return f, dx, clock
}

// dexRechecks is formsservice_auth_upstream_rechecks_total{connector="dex",result} at /metrics.
func dexRechecks(t *testing.T, p *provider, result string) string {
	t.Helper()
	for _, line := range strings.Split(metricsOf(t, p), "\n") {
		if strings.HasPrefix(line, `formsservice_auth_upstream_rechecks_total{connector="dex",result="`+result+`"} `) {
			return line[strings.LastIndexByte(line, ' ')+1:]
		}
	}
	return "0"
}

// ended checks that the grant of tk is over: the refresh answers invalid_grant, and so do its refresh
// token again and userinfo with its access token; and that the trail says why.
func (f *federated) ended(t *testing.T, tk tokens, reason string) {
	t.Helper()
	if res := f.refresh(tk.RefreshToken); res.status != http.StatusBadRequest || res.Error != "invalid_grant" {
		t.Fatalf("the due re-check: %d %s, want 400 invalid_grant", res.status, res.Error)
	}
	if again := f.refresh(tk.RefreshToken); again.Error != "invalid_grant" {
		t.Fatalf("the refresh token of the ended grant: %d %s", again.status, again.Error)
	}
	if st := f.userinfoStatus(tk.AccessToken); st != http.StatusUnauthorized {
		t.Fatalf("the access token of the ended grant: userinfo %d, want 401", st)
	}
	evs := recheckEvents(t, f.provider)
	if len(evs) != 1 || evs[0].Reason != reason || evs[0].Detail["connector"] != "dex" || evs[0].Detail["grant"] != "ended" {
		t.Fatalf("audit events %+v, want one %s, ended, naming dex", evs, reason)
	}
}

func TestRecheck_Dex_RotatedRefreshTokensAndARevokedGrant(t *testing.T) {
	f, dx, clock := startDexRechecking(t, config.UpstreamDownKeep)
	tk := f.signInViaDex(dexAda)
	bob := f.signInViaDex(dexBob)

	tk = f.refreshed(t, tk.RefreshToken, "at once")
	// Past recheckEvery, Dex's refresh token is refreshed: twice, so Dex's rotated token was kept (Dex
	// refuses a used one).
	clock.later()
	tk = f.refreshed(t, tk.RefreshToken, "first re-check")
	clock.later()
	tk = f.refreshed(t, tk.RefreshToken, "second re-check")
	if n, not := dexRechecks(t, f.provider, "ok"), dexRechecks(t, f.provider, "not_due"); n != "2" || not != "1" {
		t.Fatalf("re-checks ok %s, not_due %s; want 2 and 1", n, not)
	}

	// Dex's operator signs Ada out (RevokeRefresh): Dex answers the next re-check 400 invalid_request.
	// That is Dex saying no, not Dex being down: the grant ends, even with onUpstreamDown keep.
	dx.RevokeRefresh(t, dexAda, dexClientID)
	tk = f.refreshed(t, tk.RefreshToken, "revoked, not yet due")
	clock.later()
	f.ended(t, tk, "not_allowed")
	if n := dexRechecks(t, f.provider, "not_allowed"); n != "1" {
		t.Fatalf("not_allowed re-checks %s, want 1", n)
	}
	// Bob's grant through the same Dex lives on.
	f.refreshed(t, bob.RefreshToken, "another person")
}

// A deleted account: Dex answers 500, which says nothing we can tell from Dex failing. With
// onUpstreamDown end (what docs/auth.md advises for Dex) the grant ends at the next due refresh; with
// keep it is kept and the trail says the re-check could not be made.
func TestRecheck_Dex_DeletedAccount(t *testing.T) {
	t.Run("onUpstreamDown end: the grant ends at the next due refresh", func(t *testing.T) {
		f, dx, clock := startDexRechecking(t, config.UpstreamDownEnd)
		tk := f.signInViaDex(dexAda)
		bob := f.signInViaDex(dexBob)
		clock.later()
		tk = f.refreshed(t, tk.RefreshToken, "before the deletion")
		dx.Delete(t, dexAda.Email)
		tk = f.refreshed(t, tk.RefreshToken, "deleted, not yet due")
		clock.later()
		f.ended(t, tk, "unreachable")
		if n := dexRechecks(t, f.provider, "unreachable_ended"); n != "1" {
			t.Fatalf("unreachable_ended re-checks %s, want 1", n)
		}
		f.refreshed(t, bob.RefreshToken, "another person")
	})
	t.Run("onUpstreamDown keep: the grant is kept, and the trail says so", func(t *testing.T) {
		f, dx, clock := startDexRechecking(t, config.UpstreamDownKeep)
		tk := f.signInViaDex(dexAda)
		dx.Delete(t, dexAda.Email)
		clock.later()
		f.refreshed(t, tk.RefreshToken, "deleted, keep")
		if n := dexRechecks(t, f.provider, "unreachable_kept"); n != "1" {
			t.Fatalf("unreachable_kept re-checks %s, want 1", n)
		}
		if evs := recheckEvents(t, f.provider); len(evs) != 1 || evs[0].Reason != "unreachable" || evs[0].Detail["grant"] != "kept" {
			t.Fatalf("audit events %+v, want one unreachable, kept", evs)
		}
	})
}

// A connector whose issuer is not the one Dex names itself (the same Dex, reached as localhost instead
// of 127.0.0.1) signs no one in: go-oidc refuses the discovery document whose issuer differs, and the
// page answers 502, never a 500, and never redirects to Dex.
func TestFederation_Dex_IssuerMustBeDexsOwn(t *testing.T) {
	f, _ := startDex(t, setup{}, func(c *config.Connector) {
		c.Issuer = strings.Replace(c.Issuer, "http://127.0.0.1:", "http://localhost:", 1)
	}, dexAda)
	res := newBrowser(t).get(f.authorizeURL("state-0123456789", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("connector_id", "dex")))
	if res.StatusCode != http.StatusBadGateway || strings.Contains(res.Header.Get("Location"), "/dex/auth") {
		t.Fatalf("a connector with another issuer: %d %s\n%.500s", res.StatusCode, res.Header.Get("Location"), res.body)
	}
}
