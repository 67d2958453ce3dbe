// Package testgithub is GitHub's side of a sign-in through a github connector (D64), in process, for
// tests: GitHub cannot be reached from the machines the tests run on. It answers as GitHub's
// documentation says ("Authorizing OAuth apps" and the REST API's users, emails, orgs and teams), at
// GitHub Enterprise Server's paths (the web flow at /login/oauth/…, the API at /api/v3): the authorize
// page (a form that takes a login name in place of GitHub's sign-in and consent; no password is
// checked), the redirect with code and state, the token endpoint (form-encoded answers unless JSON is
// accepted, errors as 200 with error=…, single-use codes, PKCE S256 when the request had a challenge),
// and GET /user, /user/emails, /user/orgs, /user/teams with the token (per_page and Link pagination;
// 401 without a token it gave).
package testgithub

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Account is a GitHub account, by its login name.
type Account struct {
	ID     int64
	Name   string
	Emails []Email
	Orgs   []string
	Teams  []Team
}

// Email is one of an account's addresses, as GET /user/emails lists it.
type Email struct {
	Email    string `json:"email"`
	Primary  bool   `json:"primary"`
	Verified bool   `json:"verified"`
}

// Team is a team (its slug) of an organisation.
type Team struct{ Org, Slug string }

// App is the OAuth app registered at GitHub: our provider.
type App struct {
	ClientID, Secret, Callback string
}

// Server is the running GitHub.
type Server struct {
	URL string // the base URL: a connector's baseURL

	app      App
	accounts map[string]Account

	mu     sync.Mutex
	codes  map[string]grant
	tokens map[string]string // access token → login
}

type grant struct {
	login, redirect, challenge string
}

// Start runs GitHub with the app and accounts until the test ends.
func Start(t testing.TB, app App, accounts map[string]Account) *Server {
	t.Helper()
	s := &Server{app: app, accounts: accounts, codes: map[string]grant{}, tokens: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login/oauth/authorize", s.authorizePage)
	mux.HandleFunc("POST /login/oauth/authorize", s.authorize)
	mux.HandleFunc("POST /login/oauth/access_token", s.token)
	mux.HandleFunc("GET /api/v3/user", s.api(func(a Account, login string) any {
		name := any(nil)
		if a.Name != "" {
			name = a.Name
		}
		return map[string]any{"login": login, "id": a.ID, "node_id": "U_" + strconv.FormatInt(a.ID, 10), "type": "User", "name": name}
	}))
	mux.HandleFunc("GET /api/v3/user/emails", s.list(func(a Account) []any {
		var out []any
		for _, e := range a.Emails {
			out = append(out, map[string]any{"email": e.Email, "primary": e.Primary, "verified": e.Verified, "visibility": "private"})
		}
		return out
	}))
	mux.HandleFunc("GET /api/v3/user/orgs", s.list(func(a Account) []any {
		var out []any
		for i, o := range a.Orgs {
			out = append(out, map[string]any{"login": o, "id": 1000 + i})
		}
		return out
	}))
	mux.HandleFunc("GET /api/v3/user/teams", s.list(func(a Account) []any {
		var out []any
		for i, tm := range a.Teams {
			out = append(out, map[string]any{"id": 2000 + i, "slug": tm.Slug, "name": tm.Slug, "organization": map[string]any{"login": tm.Org}})
		}
		return out
	}))
	srv := httptest.NewServer(mux) // 127.0.0.1, a port the kernel picks
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// authorizePage stands for GitHub's sign-in and consent: a form whose action keeps the request.
func (s *Server) authorizePage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != s.app.ClientID {
		http.Error(w, "The client_id is not an OAuth app's.", http.StatusNotFound)
		return
	}
	if ru := q.Get("redirect_uri"); ru != "" && ru != s.app.Callback {
		http.Error(w, "The redirect_uri MUST match the registered callback URL for this application.", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<!doctype html><html lang="en"><title>Sign in to GitHub</title><main><h1>Sign in to GitHub to continue</h1>
<form action="%s" method="post"><label>Username <input name="login" autocomplete="username"></label>
<label>Password <input name="password" type="password" autocomplete="current-password"></label>
<button type="submit">Authorize</button></form></main>`, html.EscapeString("/login/oauth/authorize?"+r.URL.RawQuery))
}

// authorize answers the form: the redirect to the callback with a code and the state, or
// access_denied for an unknown login.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != s.app.ClientID {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	login := r.PostFormValue("login")
	back, _ := url.Parse(s.app.Callback)
	v := url.Values{"state": {q.Get("state")}}
	if _, ok := s.accounts[login]; !ok {
		v.Set("error", "access_denied")
		v.Set("error_description", "The user has denied your application access.")
	} else {
		if m := q.Get("code_challenge_method"); q.Get("code_challenge") != "" && m != "S256" {
			http.Error(w, "code_challenge_method must be S256", http.StatusBadRequest)
			return
		}
		code := random()
		s.mu.Lock()
		s.codes[code] = grant{login: login, redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge")}
		s.mu.Unlock()
		v.Set("code", code)
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// token is POST /login/oauth/access_token.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	f := r.PostForm
	answer := func(v url.Values) {
		if strings.Contains(r.Header.Get("Accept"), "application/json") {
			m := map[string]string{}
			for k := range v {
				m[k] = v.Get(k)
			}
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			_ = json.NewEncoder(w).Encode(m)
			return
		}
		w.Header().Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
		_, _ = w.Write([]byte(v.Encode()))
	}
	fail := func(code, desc string) { // GitHub answers its errors with 200
		answer(url.Values{"error": {code}, "error_description": {desc}, "error_uri": {"https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors"}})
	}
	if f.Get("client_id") != s.app.ClientID || f.Get("client_secret") != s.app.Secret {
		fail("incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect.")
		return
	}
	s.mu.Lock()
	g, ok := s.codes[f.Get("code")]
	delete(s.codes, f.Get("code"))
	s.mu.Unlock()
	switch {
	case !ok:
		fail("bad_verification_code", "The code passed is incorrect or expired.")
		return
	case g.redirect != "" && f.Get("redirect_uri") != g.redirect:
		fail("redirect_uri_mismatch", "The redirect_uri MUST match the registered callback URL for this application.")
		return
	case g.challenge != "" && g.challenge != s256(f.Get("code_verifier")):
		fail("bad_verification_code", "The code_verifier does not match the code_challenge.")
		return
	}
	tok := "gho_" + random()
	s.mu.Lock()
	s.tokens[tok] = g.login
	s.mu.Unlock()
	answer(url.Values{"access_token": {tok}, "scope": {"read:org,read:user,user:email"}, "token_type": {"bearer"}})
}

// api serves a resource of the account the request's token belongs to.
func (s *Server) api(body func(Account, string) any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		login, ok := s.caller(w, r)
		if !ok {
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(body(s.accounts[login], login))
	}
}

// list serves a list resource a page at a time (per_page, default 30, at most 100; page from 1), with
// GitHub's Link header.
func (s *Server) list(items func(Account) []any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		login, ok := s.caller(w, r)
		if !ok {
			return
		}
		all := items(s.accounts[login])
		per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
		if per <= 0 {
			per = 30
		}
		per = min(per, 100)
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		page = max(page, 1)
		from, to := min((page-1)*per, len(all)), min(page*per, len(all))
		if to < len(all) {
			next := *r.URL
			q := next.Query()
			q.Set("page", strconv.Itoa(page+1))
			next.RawQuery = q.Encode()
			w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, s.URL, next.RequestURI()))
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		out := all[from:to]
		if out == nil {
			out = []any{}
		}
		_ = json.NewEncoder(w).Encode(out)
	}
}

// caller is the login whose token the request carries ("Bearer" or GitHub's older "token"); 401 as
// GitHub answers otherwise.
func (s *Server) caller(w http.ResponseWriter, r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		tok, _ = strings.CutPrefix(h, "token ")
	}
	s.mu.Lock()
	login, known := s.tokens[tok]
	s.mu.Unlock()
	if tok == "" || !known {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest","status":"401"}`))
		return "", false
	}
	return login, true
}

func random() string {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}

func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
