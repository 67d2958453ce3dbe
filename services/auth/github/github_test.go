package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/formsservice/formsservice/internal/testgithub"
	"github.com/formsservice/formsservice/services/auth/upstream"
	"github.com/formsservice/formsservice/services/platform/config"
)

// These tests talk to internal/testgithub, an in-process server that answers as GitHub's documentation
// says: GitHub itself cannot be reached from where the tests run (D64).

const callback = "https://id.example.com/oauth2/callback"

func start(t *testing.T, orgs []string) (*testgithub.Server, config.Connector) {
	t.Helper()
	var teams []testgithub.Team
	for i := range 150 { // more than a page of 100: the Link header is followed
		teams = append(teams, testgithub.Team{Org: "acme", Slug: fmt.Sprintf("team-%03d", i)})
	}
	gh := testgithub.Start(t, testgithub.App{ClientID: "Iv1.app", Secret: "app-secret", Callback: callback}, map[string]testgithub.Account{
		"octocat": {ID: 583231, Name: "The Octocat", Orgs: []string{"Acme", "other"}, Teams: append(teams, testgithub.Team{Org: "other", Slug: "x"}),
			Emails: []testgithub.Email{{Email: "old@example.com", Verified: true}, {Email: "octocat@example.com", Primary: true, Verified: true}}},
		"unverified": {ID: 7, Orgs: []string{"acme"}, Emails: []testgithub.Email{{Email: "u@example.com", Primary: true}, {Email: "v@example.com", Verified: true}}},
		"outsider":   {ID: 8, Name: "Out Sider", Orgs: []string{"other"}, Emails: []testgithub.Email{{Email: "o@example.com", Primary: true, Verified: true}}},
	})
	c := config.Connector{ID: "github", Type: config.TypeGitHub, ClientID: "Iv1.app", ClientSecretFile: "/unused", BaseURL: gh.URL, Orgs: orgs}
	cfg := config.Config{Auth: config.Auth{Connectors: []config.Connector{c}}}
	cfg.ApplyDefaults()
	return gh, cfg.Auth.Connectors[0]
}

var formAction = regexp.MustCompile(`<form action="([^"]+)" method="post">`)

// answer goes through GitHub's authorize page as login and returns the callback's query.
func answer(t *testing.T, c *Connector, s upstream.Start, login string) url.Values {
	t.Helper()
	to, err := c.AuthURL(context.Background(), s, map[string]string{"login_hint": "x@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(to)
	if q := u.Query(); q.Get("code_challenge_method") != "S256" || q.Get("state") != s.State || q.Get("scope") != "read:user user:email read:org" || q.Has("login_hint") {
		t.Fatalf("the authorization URL %s", to)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Get(to)
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 4096)
	n, _ := res.Body.Read(body)
	res.Body.Close()
	m := formAction.FindSubmatch(body[:n])
	if m == nil {
		t.Fatalf("no form on GitHub's page: %s", body[:n])
	}
	action, _ := u.Parse(html.UnescapeString(string(m[1])))
	res, err = client.PostForm(action.String(), url.Values{"login": {login}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	back, _ := url.Parse(res.Header.Get("Location"))
	if back.Scheme+"://"+back.Host+back.Path != callback || back.Query().Get("state") != s.State {
		t.Fatalf("GitHub's answer %s", back)
	}
	return back.Query()
}

func TestExchange_ReadsTheAccountItsPrimaryAddressAndGroups(t *testing.T) {
	_, conf := start(t, []string{"acme"})
	c := New(conf, "app-secret", callback, nil)
	s := upstream.NewStart()
	q := answer(t, c, s, "octocat")
	id, err := c.Exchange(context.Background(), s, q.Get("code"), "")
	if err != nil {
		t.Fatal(err)
	}
	if id.Subject != "583231" || id.Name != "The Octocat" || id.Email != "octocat@example.com" || !id.EmailVerified || id.Issuer != conf.BaseURL {
		t.Errorf("identity %+v", id)
	}
	// The allowed organisation (as GitHub spells it) and its 150 teams, over two pages; not the other.
	if len(id.Groups) != 151 || id.Groups[0] != "Acme" || !slices.Contains(id.Groups, "acme:team-149") || slices.Contains(id.Groups, "other") || slices.Contains(id.Groups, "other:x") {
		t.Errorf("groups (%d) %v…", len(id.Groups), id.Groups[:min(3, len(id.Groups))])
	}
	// The code works once.
	if _, err := c.Exchange(context.Background(), s, q.Get("code"), ""); !errors.Is(err, upstream.ErrRefused) {
		t.Errorf("the code again: %v", err)
	}
}

func TestExchange_RefusesWhatGitHubOrTheConnectorRefuses(t *testing.T) {
	_, conf := start(t, []string{"acme"})
	ctx := context.Background()
	c := New(conf, "app-secret", callback, nil)

	s := upstream.NewStart()
	if _, err := c.Exchange(ctx, s, answer(t, c, s, "outsider").Get("code"), ""); !errors.Is(err, upstream.ErrNotAllowed) {
		t.Errorf("a person in none of the organisations: %v", err)
	}

	s = upstream.NewStart()
	id, err := c.Exchange(ctx, s, answer(t, c, s, "unverified").Get("code"), "")
	if err != nil || id.Email != "u@example.com" || id.EmailVerified || id.Name != "unverified" {
		t.Errorf("an unverified primary address (another one verified): %+v %v", id, err)
	}

	s = upstream.NewStart()
	code := answer(t, c, s, "octocat").Get("code")
	if _, err := c.Exchange(ctx, s, code, "https://accounts.google.com"); !errors.Is(err, upstream.ErrRefused) {
		t.Errorf("an answer with an iss: %v", err)
	}
	if _, err := c.Exchange(ctx, upstream.Start{State: s.State, Verifier: upstream.NewStart().Verifier}, code, ""); !errors.Is(err, upstream.ErrRefused) {
		t.Errorf("another verifier: %v", err)
	}
	if _, err := c.Exchange(ctx, s, "", ""); !errors.Is(err, upstream.ErrRefused) {
		t.Errorf("no code: %v", err)
	}

	s = upstream.NewStart()
	code = answer(t, c, s, "octocat").Get("code")
	if _, err := New(conf, "wrong-secret", callback, nil).Exchange(ctx, s, code, ""); !errors.Is(err, upstream.ErrRefused) {
		t.Errorf("a wrong client secret: %v", err)
	}

	down := conf
	down.BaseURL = "http://127.0.0.1:1"
	if _, err := New(down, "app-secret", callback, nil).Exchange(ctx, s, "x", ""); !errors.Is(err, upstream.ErrUnreachable) {
		t.Errorf("GitHub down: %v", err)
	}
}

func TestAPIURL(t *testing.T) {
	if got := APIURL("https://github.com"); got != "https://api.github.com" {
		t.Errorf("github.com: %s", got)
	}
	if got := APIURL("https://github.example.com"); got != "https://github.example.com/api/v3" {
		t.Errorf("an Enterprise Server: %s", got)
	}
	c := New(config.Connector{BaseURL: "https://github.example.com"}, "", callback, nil)
	if o, _ := c.AuthOrigin(context.Background()); o != "https://github.example.com" {
		t.Errorf("origin %s", o)
	}
}

// A list's next page is followed only within the API: a Link header that points elsewhere does not
// get the access token sent there.
func TestList_NextPageOutsideTheAPIIsRefused(t *testing.T) {
	var elsewhere atomic.Bool
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Store(true)
		_, _ = w.Write([]byte(`[]`))
	}))
	defer other.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", `<`+other.URL+`/api/v3/user/orgs?page=2>; rel="next", <`+other.URL+`/x>; rel="last"`)
		_, _ = w.Write([]byte(`[{"login":"acme"}]`))
	}))
	defer api.Close()
	c := New(config.Connector{BaseURL: api.URL}, "", callback, nil)
	var pages int
	err := c.list(context.Background(), "gho_token", "/user/orgs", func(json.RawMessage) error { pages++; return nil })
	if !errors.Is(err, upstream.ErrRefused) || pages != 1 || elsewhere.Load() {
		t.Errorf("err %v, pages %d, the other server asked: %v", err, pages, elsewhere.Load())
	}
	if got := nextLink(`<https://api.github.com/user/orgs?page=2>; rel="next", <https://api.github.com/user/orgs?page=5>; rel="last"`); got != "https://api.github.com/user/orgs?page=2" {
		t.Errorf("nextLink: %q", got)
	}
	if got := nextLink(`<https://api.github.com/user/orgs?page=1>; rel="prev"`); got != "" {
		t.Errorf("nextLink without next: %q", got)
	}
}
