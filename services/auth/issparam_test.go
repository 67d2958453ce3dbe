package auth_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"golang.org/x/oauth2"
)

// Every authorization response names its issuer (RFC 9207): the code, a cancelled sign-in, and
// prompt=none without a session, so that a client of several providers can refuse a mixed-up answer;
// discovery says so.
func TestAuthorize_EveryResponseCarriesIss(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	issOf := func(name string, res response) {
		t.Helper()
		loc, err := url.Parse(res.Header.Get("Location"))
		if res.StatusCode != http.StatusSeeOther || err != nil {
			t.Fatalf("%s: %d %q", name, res.StatusCode, res.Header.Get("Location"))
		}
		if got := loc.Query()["iss"]; len(got) != 1 || got[0] != p.base {
			t.Fatalf("%s: iss %q in %s, want %s", name, got, loc, p.base)
		}
		if loc.Query().Get("state") == "" {
			t.Fatalf("%s: the state was lost: %s", name, loc)
		}
	}

	b := newBrowser(t)
	page := b.get(p.authorizeURL("state-iss-code", oauth2.GenerateVerifier()))
	signedIn := b.signIn(p.base, page.body, testEmail, testPassword)
	issOf("code", signedIn)
	if code, _ := codeFrom(t, signedIn, p.redirect); code == "" {
		t.Fatal("no code beside iss")
	}

	canceller := newBrowser(t)
	page = canceller.get(p.authorizeURL("state-iss-cancel", oauth2.GenerateVerifier()))
	f := cancelForm(t, p.base, page.body)
	issOf("cancel", canceller.postForm(f.action, f.fields, "Origin", p.base))

	issOf("prompt=none", newBrowser(t).get(p.authorizeURL("state-iss-none", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("prompt", "none"))))

	res, err := http.Get(p.base + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var doc map[string]any
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil || doc["authorization_response_iss_parameter_supported"] != true {
		t.Fatalf("discovery: %v %v", err, doc["authorization_response_iss_parameter_supported"])
	}
}
