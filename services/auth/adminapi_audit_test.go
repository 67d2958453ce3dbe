package auth_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/services/auth"
	"github.com/formsservice/formsservice/services/auth/admin"
	"github.com/formsservice/formsservice/services/platform/config"
)

// The trail is read newest first, filtered by user, kind and time, a page at a time without losing or
// repeating an event; bad filters are 400 naming the parameter.
func TestAdminAPI_Audit_FiltersAndPages(t *testing.T) {
	p := startAdminProvider(t, false)
	ops, auditor := p.token(opsClient, "users:write"), p.token(auditorClient, "audit:read")
	before := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	var ids []string
	for _, e := range []string{"a@example.com", "b@example.com", "c@example.com"} {
		a := p.api(post("/admin/v1/users", ops, `{"email":"`+e+`"}`))
		ids = append(ids, a.body["id"].(string))
	}
	for range 2 {
		p.api(post("/admin/v1/users/"+ids[0]+"/disable", ops, ""))
		p.api(post("/admin/v1/users/"+ids[0]+"/enable", ops, ""))
	}
	trail(t, p.provider) // flushed

	var kinds []string
	cursor := ""
	for page := 0; ; page++ {
		path := "/admin/v1/audit?limit=2&user=" + ids[0] + "&since=" + url.QueryEscape(before)
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		a := p.api(get(path, auditor))
		events, _ := a.body["events"].([]any)
		if a.status != http.StatusOK || len(events) > 2 || page > 6 {
			t.Fatalf("page %d: %d %s", page, a.status, a.raw)
		}
		for _, e := range events {
			ev := e.(map[string]any)
			if ev["user"] != ids[0] || ev["trail"] != "security" || ev["actor"] != "admin" || ev["client"] != opsClient {
				t.Fatalf("event %v", ev)
			}
			kinds = append(kinds, ev["kind"].(string))
		}
		next, _ := a.body["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	want := []string{"user.enabled", "user.signout_everywhere", "user.disabled", "user.enabled", "user.signout_everywhere", "user.disabled", "user.created"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("newest first: %v, want %v", kinds, want)
	}
	a := p.api(get("/admin/v1/audit?kind=user.created,user.disabled", auditor))
	if n := len(a.body["events"].([]any)); a.status != http.StatusOK || n != 5 {
		t.Fatalf("by kind: %d events, %s", n, a.raw)
	}
	a = p.api(get("/admin/v1/audit?kind=user.&until=2000-01-01", auditor))
	if a.status != http.StatusOK || len(a.body["events"].([]any)) != 0 {
		t.Fatalf("until long ago: %s", a.raw)
	}
	for name, c := range map[string]struct{ query, field string }{
		"an unknown kind":      {"kind=user.nonsense", "kind"},
		"a time not a time":    {"since=yesterday-ish", "since"},
		"until before since":   {"since=2026-01-02&until=2026-01-01", "until"},
		"a cursor of users":    {"cursor=dTE6YUBleGFtcGxlLmNvbQ", "cursor"},
		"a cursor of a stream": {"cursor=YTE6OTox", "cursor"},
	} {
		if fields := problemOf(t, name, p.api(get("/admin/v1/audit?"+c.query, auditor)), http.StatusBadRequest); fields[c.field] == nil {
			t.Errorf("%s: errors %v", name, fields)
		}
	}
	problemOf(t, "a limit out of range", p.api(apiCall{method: http.MethodGet, path: "/admin/v1/audit?limit=1000", token: auditor, badRequest: true}), http.StatusBadRequest)
}

// The clients are listed as configured, never with a secret, for either scope that names clients.
func TestAdminAPI_Clients(t *testing.T) {
	p := startAdminProvider(t, false)
	for _, tok := range []string{p.token(readerClient, "users:read"), p.token(auditorClient, "audit:read")} {
		a := p.api(get("/admin/v1/clients", tok))
		list, _ := a.body["clients"].([]any)
		if a.status != http.StatusOK || len(list) != len(p.cfg.Auth.Clients) {
			t.Fatalf("clients: %d %s", a.status, a.raw)
		}
		if strings.Contains(string(a.raw), robotSecret) || strings.Contains(strings.ToLower(string(a.raw)), "secret\"") {
			t.Fatalf("a secret in the listing: %s", a.raw)
		}
	}
	a := p.api(get("/admin/v1/clients/"+opsClient, p.token(readerClient, "users:read")))
	if a.status != http.StatusOK || a.body["public"] != false || a.body["token_endpoint_auth_method"] != "client_secret_basic" ||
		!slices.Equal(toStrings(a.body["grant_types"]), []string{"client_credentials"}) {
		t.Fatalf("client: %d %s", a.status, a.raw)
	}
	if a := p.api(get("/admin/v1/clients/"+clientID, p.token(readerClient, "users:read"))); a.body["public"] != true || a.body["token_endpoint_auth_method"] != "none" {
		t.Fatalf("public client: %s", a.raw)
	}
	problemOf(t, "an unknown client", p.api(get("/admin/v1/clients/nobody", p.token(readerClient, "users:read"))), http.StatusNotFound)
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// routeParam replaces a route's parameters by a value.
var routeParam = regexp.MustCompile(`:[a-z]+`)

// Every route of the API (but its description) refuses a request without a token (401), a token without
// the route's scope (403, naming the scopes that would do), and a person outside the admin group (403),
// each an RFC 9457 problem the document describes.
func TestAdminAPI_EveryRouteRefuses(t *testing.T) {
	p := startAdminProvider(t, false)
	id := p.user(testEmail, testPassword)
	forms := p.token(formsClient, "forms:read forms:write")
	formsReader := p.token(formsClient, "forms:read")
	reader := p.token(readerClient, "users:read")
	auditor := p.token(auditorClient, "audit:read")

	// A person's token for the admin API, outside the admin group.
	b := newBrowser(t)
	verifier := oauth2.GenerateVerifier()
	pg := b.get(p.authorizeURL("state-admin-0123", verifier, oauth2.SetAuthURLParam("scope", "openid users:read users:write"),
		oauth2.SetAuthURLParam("resource", p.base+"/admin")))
	code, _ := codeFrom(t, b.signIn(p.base, pg.body, testEmail, testPassword), p.redirect)
	person := p.exchange(code, verifier).AccessToken

	routes := 0
	for _, r := range (&auth.Service{}).Routes() {
		if !strings.HasPrefix(r.Path, admin.Prefix+"/") || r.Path == admin.Prefix+"/openapi.yaml" {
			continue
		}
		routes++
		path := routeParam.ReplaceAllString(r.Path, id)
		body := map[string]string{"POST " + admin.Prefix + "/users": `{"email":"x@example.com"}`, "PUT " + admin.Prefix + "/users/:id/groups": `{"groups":[]}`,
			"POST " + admin.Prefix + "/erasures": `{"email":"x@example.com"}`}[r.Method+" "+r.Path]
		if strings.Contains(r.Path, "/forms/") { // a form's id and a submission's
			path = strings.NewReplacer(":form", "contact", ":id", "1767323045000-0").Replace(r.Path)
		}
		call := func(token string, bad bool) apiAnswer {
			return p.api(apiCall{method: r.Method, path: path, token: token, body: body, badRequest: bad})
		}
		name := r.Method + " " + r.Path
		a := call("", true)
		problemOf(t, name+" without a token", a, http.StatusUnauthorized)
		if a.header.Get("WWW-Authenticate") != `Bearer realm="`+p.base+`/admin"` {
			t.Errorf("%s without a token: %q", name, a.header.Get("WWW-Authenticate"))
		}
		formsArea := isFormsRoute(r.Path)
		if other := forms; r.Path != admin.Prefix+"/whoami" { // whoami takes any admin scope
			if formsArea {
				other = reader // a forms route refuses the accounts' scope
			}
			a = call(other, false)
			problemOf(t, name+" with another area's scopes", a, http.StatusForbidden)
			if !strings.Contains(a.header.Get("WWW-Authenticate"), `error="insufficient_scope"`) || a.body["scope"] == "" {
				t.Errorf("%s with another area's scopes: %q %v", name, a.header.Get("WWW-Authenticate"), a.body)
			}
		}
		writes := r.Method != http.MethodGet && !strings.HasSuffix(r.Path, "/link") // a file's link is read with forms:read
		switch {
		case writes && formsArea:
			problemOf(t, name+" with forms:read", call(formsReader, false), http.StatusForbidden)
		case writes:
			problemOf(t, name+" with users:read", call(reader, false), http.StatusForbidden)
		case strings.HasPrefix(r.Path, admin.Prefix+"/users"):
			problemOf(t, name+" with audit:read", call(auditor, false), http.StatusForbidden)
		case strings.HasPrefix(r.Path, admin.Prefix+"/audit"):
			problemOf(t, name+" with users:read", call(reader, false), http.StatusForbidden)
		}
		a = call(person, false)
		problemOf(t, name+" by a person outside the admin group", a, http.StatusForbidden)
		if !strings.HasPrefix(r.Path, admin.Prefix+"/audit") && !formsArea && !strings.Contains(a.body["detail"].(string), config.DefaultAdminGroup) {
			t.Errorf("%s: the refusal names no group: %v", name, a.body)
		}
		problemOf(t, name+" with a token in the URL", p.api(apiCall{method: r.Method, path: path + "?access_token=" + reader, body: body, badRequest: true}), http.StatusBadRequest)
	}
	if routes < 29 {
		t.Fatalf("%d admin routes checked", routes)
	}
	// In the group, the person's token works.
	if _, _, err := p.svc.Users().AddGroups(context.Background(), testEmail, []string{config.DefaultAdminGroup}); err != nil {
		t.Fatal(err)
	}
	if a := p.api(get("/admin/v1/users/"+id, person)); a.status != http.StatusOK {
		t.Fatalf("a member of the admin group: %d %s", a.status, a.raw)
	}
	if a := p.api(get("/admin/v1/whoami", person)); a.status != http.StatusOK || a.body["sub"] != id || a.body["machine"] != false {
		t.Fatalf("whoami: %d %s", a.status, a.raw)
	}
}

// The document describes exactly the routes routes.go declares under /admin/v1 (their methods and
// paths), no more and no fewer.
func TestAdminAPI_DocumentListsEveryRoute(t *testing.T) {
	doc, err := libopenapi.NewDocument(admin.Document)
	if err != nil {
		t.Fatal(err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	var described []string
	for path, item := range model.Model.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().FromOldest() {
			described = append(described, strings.ToUpper(method)+" "+path)
		}
	}
	var declared []string
	for _, r := range (&auth.Service{}).Routes() {
		if strings.HasPrefix(r.Path, admin.Prefix+"/") {
			declared = append(declared, r.Method+" "+routeParam.ReplaceAllStringFunc(r.Path, func(s string) string { return "{" + s[1:] + "}" }))
		}
	}
	slices.Sort(described)
	slices.Sort(declared)
	if !slices.Equal(described, declared) {
		t.Fatalf("the document describes\n  %v\nroutes.go declares\n  %v", described, declared)
	}
}
