// Package github is the client of GitHub as a connector (type github, D64): GitHub's OAuth 2.0 web
// flow (state, and PKCE S256) and its REST API, read with the access token once: the account (GET
// /user; the subject is its numeric id, which a rename keeps), its primary address and whether GitHub
// verified it (GET /user/emails), and its organisations and teams as groups `org` and `org:team`
// (GET /user/orgs, /user/teams), with the connector's allow-list of organisations. The token is dropped
// after these calls. GitHub Enterprise Server is the same at its own address, its API at /api/v3.
// Like package upstream it keeps nothing per sign-in: the caller stores state and verifier.
package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/services/auth/upstream"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Connector is one GitHub (github.com or an Enterprise Server), as one version of the configuration
// describes it.
type Connector struct {
	cfg    config.Connector
	oauth  *oauth2.Config
	api    string // the REST API's base URL, without a trailing slash
	client *http.Client
}

// New returns the connector for c with its client secret and our callback URL. client makes every
// request to GitHub (nil: one with a 10 s timeout).
func New(c config.Connector, secret, redirectURL string, client *http.Client) *Connector {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	base := strings.TrimSuffix(c.BaseURL, "/")
	return &Connector{
		cfg: c,
		oauth: &oauth2.Config{ClientID: c.ClientID, ClientSecret: secret, RedirectURL: redirectURL, Scopes: c.Scopes,
			Endpoint: oauth2.Endpoint{AuthURL: base + "/login/oauth/authorize", TokenURL: base + "/login/oauth/access_token",
				AuthStyle: oauth2.AuthStyleInParams}},
		api:    APIURL(base),
		client: client,
	}
}

// APIURL is the REST API of the GitHub at base: api.github.com for github.com, <base>/api/v3 for an
// Enterprise Server.
func APIURL(base string) string {
	if base == config.GitHubURL {
		return "https://api.github.com"
	}
	return strings.TrimSuffix(base, "/") + "/api/v3"
}

// Config is the connector's configuration.
func (c *Connector) Config() config.Connector { return c.cfg }

// AuthOrigin is the origin of GitHub's authorization page.
func (c *Connector) AuthOrigin(context.Context) (string, error) {
	u, err := url.Parse(c.oauth.Endpoint.AuthURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%w: the authorization endpoint %q", upstream.ErrRefused, c.oauth.Endpoint.AuthURL)
	}
	return u.Scheme + "://" + u.Host, nil
}

// AuthURL is where to send the browser for s. GitHub has no login_hint; its login parameter suggests
// an account by its GitHub login, which we do not know, so extra is not passed on.
func (c *Connector) AuthURL(_ context.Context, s upstream.Start, _ map[string]string) (string, error) {
	return c.oauth.AuthCodeURL(s.State, oauth2.S256ChallengeOption(s.Verifier)), nil
}

// Exchange checks GitHub's answer to the sign-in s, exchanges the code and reads the account.
func (c *Connector) Exchange(ctx context.Context, s upstream.Start, code, iss string) (*upstream.Identity, error) {
	// GitHub sends no iss: an answer that carries one is another (OpenID) provider's, sent to the
	// callback of a sign-in through GitHub (a mix-up, RFC 9207).
	if iss != "" {
		return nil, fmt.Errorf("%w: an answer with iss %q for a GitHub sign-in (RFC 9207)", upstream.ErrRefused, iss)
	}
	if code == "" {
		return nil, fmt.Errorf("%w: the answer has no code", upstream.ErrRefused)
	}
	tok, err := c.oauth.Exchange(context.WithValue(ctx, oauth2.HTTPClient, c.client), code, oauth2.VerifierOption(s.Verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode != "" { // GitHub answers 200 with error=bad_verification_code
			return nil, fmt.Errorf("%w: the token endpoint refused the code: %s", upstream.ErrRefused, re.ErrorCode)
		}
		return nil, fmt.Errorf("%w: the token endpoint: %v", upstream.ErrUnreachable, err)
	}
	return c.identity(ctx, tok.AccessToken)
}

// user, email, org and team are the parts of GitHub's answers that are read.
type (
	user struct {
		ID    int64  `json:"id"`
		Login string `json:"login"`
		Name  string `json:"name"`
	}
	email struct {
		Email    string `json:"email"`
		Primary  bool   `json:"primary"`
		Verified bool   `json:"verified"`
	}
	org struct {
		Login string `json:"login"`
	}
	team struct {
		Slug         string `json:"slug"`
		Organization org    `json:"organization"`
	}
)

// identity reads the person with the access token.
func (c *Connector) identity(ctx context.Context, token string) (*upstream.Identity, error) {
	var u user
	if err := c.get(ctx, token, "/user", &u); err != nil {
		return nil, err
	}
	if u.ID <= 0 {
		return nil, fmt.Errorf("%w: GET /user has no id", upstream.ErrRefused)
	}
	id := &upstream.Identity{Issuer: c.cfg.BaseURL, Subject: strconv.FormatInt(u.ID, 10), Name: u.Name}
	if id.Name == "" {
		id.Name = u.Login
	}
	var emails []email
	if err := c.list(ctx, token, "/user/emails", func(raw json.RawMessage) error { return appendJSON(raw, &emails) }); err != nil {
		return nil, err
	}
	// The primary address only: the one the person chose for their account. It counts as verified
	// only when GitHub says so.
	for _, e := range emails {
		if e.Primary {
			id.Email, id.EmailVerified = e.Email, e.Verified
		}
	}
	var orgs []org
	if err := c.list(ctx, token, "/user/orgs", func(raw json.RawMessage) error { return appendJSON(raw, &orgs) }); err != nil {
		return nil, err
	}
	allowed := func(login string) bool {
		return len(c.cfg.Orgs) == 0 || slices.ContainsFunc(c.cfg.Orgs, func(o string) bool { return strings.EqualFold(o, login) })
	}
	for _, o := range orgs {
		if allowed(o.Login) {
			id.Groups = append(id.Groups, o.Login)
		}
	}
	if len(c.cfg.Orgs) > 0 && len(id.Groups) == 0 {
		return nil, fmt.Errorf("%w: the GitHub account %s is in none of %s", upstream.ErrNotAllowed, u.Login, strings.Join(c.cfg.Orgs, ", "))
	}
	var teams []team
	if err := c.list(ctx, token, "/user/teams", func(raw json.RawMessage) error { return appendJSON(raw, &teams) }); err != nil {
		return nil, err
	}
	for _, t := range teams {
		if t.Slug != "" && allowed(t.Organization.Login) {
			id.Groups = append(id.Groups, t.Organization.Login+":"+t.Slug)
		}
	}
	return id, nil
}

func appendJSON[T any](raw json.RawMessage, to *[]T) error {
	var page []T
	if err := json.Unmarshal(raw, &page); err != nil {
		return err
	}
	*to = append(*to, page...)
	return nil
}

// maxPages bounds a list's pages (100 entries each): nobody is in 1,000 organisations or teams.
const maxPages = 10

// list reads every page of a list resource, following the Link header's rel="next".
func (c *Connector) list(ctx context.Context, token, path string, page func(json.RawMessage) error) error {
	next := c.api + path + "?per_page=100"
	for range maxPages {
		var raw json.RawMessage
		res, err := c.do(ctx, token, next, &raw)
		if err != nil {
			return err
		}
		if err := page(raw); err != nil {
			return fmt.Errorf("%w: GET %s: %v", upstream.ErrRefused, path, err)
		}
		if next = nextLink(res.Header.Get("Link")); next == "" {
			return nil
		}
		// The next page must be the same API's: a Link header does not send the token elsewhere.
		if !strings.HasPrefix(next, c.api+"/") {
			return fmt.Errorf("%w: GET %s: a next page outside the API (%q)", upstream.ErrRefused, path, next)
		}
	}
	return nil
}

func (c *Connector) get(ctx context.Context, token, path string, v any) error {
	_, err := c.do(ctx, token, c.api+path, v)
	return err
}

// do makes one request of the REST API as GitHub's documentation asks (its media type and version).
func (c *Connector) do(ctx context.Context, token, u string, v any) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", upstream.ErrRefused, err)
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %v", upstream.ErrUnreachable, req.URL.Path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: GET %s: %v", upstream.ErrUnreachable, req.URL.Path, err)
	case res.StatusCode >= 500:
		return nil, fmt.Errorf("%w: GET %s: %s", upstream.ErrUnreachable, req.URL.Path, res.Status)
	case res.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%w: GET %s: %s", upstream.ErrRefused, req.URL.Path, res.Status)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return nil, fmt.Errorf("%w: GET %s: %v", upstream.ErrRefused, req.URL.Path, err)
	}
	return res, nil
}

// nextLink is the rel="next" URL of an RFC 8288 Link header, as GitHub paginates ("" when none).
func nextLink(h string) string {
	for _, part := range strings.Split(h, ",") {
		target, params, ok := strings.Cut(part, ";")
		if !ok {
			continue
		}
		target = strings.TrimSpace(target)
		if strings.HasPrefix(target, "<") && strings.HasSuffix(target, ">") && strings.Contains(params, `rel="next"`) {
			return target[1 : len(target)-1]
		}
	}
	return ""
}
