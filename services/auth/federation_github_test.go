package auth_test

import (
	"context"
	"errors"
	"html"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testgithub"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Signing in through a github connector, end to end over HTTP as a browser does it: the hosted page's
// GitHub button, GitHub's authorize page, its answer at /oauth2/callback, and the code back to the
// client (D64). GitHub cannot be reached from here: its side is internal/testgithub, an in-process
// server that answers as GitHub's documentation says (the web flow and the REST API at GitHub
// Enterprise Server's paths). Everything on our side is real: the provider, Redis, the page.

// startGitHub is a provider with one github connector, "github", offered to the test client, and
// GitHub with the accounts.
func startGitHub(t *testing.T, accounts map[string]testgithub.Account, orgs []string) *federated {
	t.Helper()
	p := startProvider(t, setup{})
	gh := testgithub.Start(t, testgithub.App{ClientID: "Iv1.formsservice", Secret: upstreamSecret, Callback: p.base + "/oauth2/callback"}, accounts)
	secret := filepath.Join(t.TempDir(), "github-secret")
	if err := os.WriteFile(secret, []byte(upstreamSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	next := *p.cfg
	next.Auth.Connectors = []config.Connector{{ID: "github", Type: config.TypeGitHub, BaseURL: gh.URL, ClientID: "Iv1.formsservice",
		ClientSecretFile: secret, Orgs: orgs}}
	next.Auth.Clients = slices.Clone(p.cfg.Auth.Clients)
	next.Auth.Clients[0].Connectors = []string{"github"}
	next.ApplyDefaults()
	if err := next.Validate(); err != nil {
		t.Fatal(err)
	}
	p.live.c.Store(&next)
	p.cfg = &next
	return &federated{provider: p, issuer: gh.URL}
}

// viaGitHub signs in at the hosted page through its GitHub button as login and returns our answer to
// GitHub's callback.
func (f *federated) viaGitHub(b *browser, login string) response {
	f.t.Helper()
	page := b.get(f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()))
	if !strings.Contains(page.body, `<a class="button brand-github" href=`) {
		f.t.Fatalf("no button in GitHub's look:\n%.1500s", page.body)
	}
	res, _ := f.atUpstream(b, b.get(f.base+connectorLink(f.t, page.body, "github")), login)
	return res
}

func TestFederation_GitHub(t *testing.T) {
	email := func(addr string, verified bool) []testgithub.Email {
		return []testgithub.Email{{Email: "noreply-" + addr, Verified: true}, {Email: addr, Primary: true, Verified: verified}}
	}
	f := startGitHub(t, map[string]testgithub.Account{
		"octocat":  {ID: 583231, Name: "The Octocat", Emails: email("octocat@example.com", true), Orgs: []string{"acme", "elsewhere"}, Teams: []testgithub.Team{{Org: "acme", Slug: "core"}, {Org: "elsewhere", Slug: "x"}}},
		"ada":      {ID: 11, Emails: email(testEmail, true), Orgs: []string{"acme"}},
		"mallory":  {ID: 12, Name: "Not the owner", Emails: email("owner@example.com", false), Orgs: []string{"acme"}},
		"outsider": {ID: 13, Emails: email("outsider@example.com", true), Orgs: []string{"elsewhere"}},
	}, []string{"acme"})
	ctx := context.Background()
	us := f.svc.Users()

	t.Run("a new person signs in, gets an account, and their organisation and team as groups", func(t *testing.T) {
		b := newBrowser(t)
		verifier := oauth2.GenerateVerifier()
		page := b.get(f.authorizeURL("state-0123456789", verifier))
		res, _ := f.atUpstream(b, b.get(f.base+connectorLink(t, page.body, "github")), "octocat")
		code, _ := codeFrom(t, res, f.redirect)
		tk := f.exchange(code, verifier)
		if tk.status != http.StatusOK {
			t.Fatalf("exchange: %d %s", tk.status, tk.Error)
		}
		c := idClaims(t, tk.IDToken)
		u, err := us.ByEmail(ctx, "octocat@example.com")
		if err != nil {
			t.Fatal(err)
		}
		if c["sub"] != u.ID || !u.EmailVerified || u.Name != "The Octocat" || u.Hash != "" {
			t.Fatalf("claims %v, account %+v", c, u)
		}
		if amr, _ := c["amr"].([]any); len(amr) != 1 || amr[0] != "fed" {
			t.Fatalf("amr %v, want [fed]", c["amr"])
		}
		if !slices.Equal(u.Groups, []string{"github:acme", "github:acme:core"}) {
			t.Fatalf("groups %v, want the allowed organisation and its team only", u.Groups)
		}
		// Linked by GitHub's numeric id, which a renamed login keeps.
		if ids, err := us.Identities(ctx, u.ID); err != nil || len(ids) != 1 || ids[0].Connector != "github" || ids[0].Subject != "583231" {
			t.Fatalf("identities %+v, %v", ids, err)
		}
	})

	t.Run("a verified primary address links the existing account that verified it", func(t *testing.T) {
		id := f.user(testEmail, testPassword)
		res := f.viaGitHub(newBrowser(t), "ada")
		code, _ := codeFrom(t, res, f.redirect)
		if code == "" {
			t.Fatal("no code")
		}
		if u, err := us.ByIdentity(ctx, "github", "11"); err != nil || u.ID != id {
			t.Fatalf("the GitHub account links to %+v, %v; want %s", u, err, id)
		}
	})

	t.Run("an unverified primary address does not link the account that has it", func(t *testing.T) {
		owner := f.user("owner@example.com", testPassword)
		res := f.viaGitHub(newBrowser(t), "mallory")
		if res.StatusCode != http.StatusConflict || !strings.Contains(html.UnescapeString(res.body), "link GitHub on your account page") {
			t.Fatalf("want 409 and the way to link, got %d\n%.800s", res.StatusCode, res.body)
		}
		if _, err := us.ByIdentity(ctx, "github", "12"); !errors.Is(err, users.ErrNotFound) {
			t.Fatalf("mallory was linked: %v", err)
		}
		if ids, _ := us.Identities(ctx, owner); len(ids) != 0 {
			t.Fatalf("the owner's account has identities %+v", ids)
		}
	})

	t.Run("a person in none of the allowed organisations is refused", func(t *testing.T) {
		res := f.viaGitHub(newBrowser(t), "outsider")
		if res.StatusCode != http.StatusForbidden || !strings.Contains(html.UnescapeString(res.body), "Your GitHub account may not sign in here") {
			t.Fatalf("want 403 saying why, got %d %s\n%.800s", res.StatusCode, res.Header.Get("Location"), res.body)
		}
		if _, err := us.ByEmail(ctx, "outsider@example.com"); !errors.Is(err, users.ErrNotFound) {
			t.Fatalf("an account was made: %v", err)
		}
	})

	t.Run("GitHub's refusal (the person declined) signs nobody in", func(t *testing.T) {
		res := f.viaGitHub(newBrowser(t), "nobody-at-github")
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.body, "was cancelled or refused") {
			t.Fatalf("want 401, got %d\n%.500s", res.StatusCode, res.body)
		}
	})

	t.Run("the button in German", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()), nil)
		req.Header.Set("Accept-Language", "de")
		res := newBrowser(t).do(req)
		if !strings.Contains(res.body, `data-connector="github"><svg`) || !strings.Contains(res.body, "Mit GitHub anmelden</a>") {
			t.Errorf("the German page's button:\n%.2000s", res.body)
		}
	})

	t.Run("the refusal in German", func(t *testing.T) {
		b := newBrowser(t)
		req, _ := http.NewRequest(http.MethodGet, f.authorizeURL("state-0123456789", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("ui_locales", "de")), nil)
		page := b.do(req)
		res, _ := f.atUpstream(b, b.get(f.base+connectorLink(t, page.body, "github")), "outsider")
		if !strings.Contains(html.UnescapeString(res.body), "Ihr GitHub-Konto darf sich hier nicht anmelden") {
			t.Errorf("the German refusal:\n%.1500s", res.body)
		}
	})
}
