package auth_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testmail"
	"github.com/formsservice/formsservice/services/auth"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/config"
)

// groupsOf reads the groups claim of a claim set: its strings, and whether it is there at all.
func groupsOf(t *testing.T, c map[string]any) ([]string, bool) {
	t.Helper()
	v, ok := c["groups"]
	if !ok {
		return nil, false
	}
	arr, isArr := v.([]any)
	if !isArr {
		t.Fatalf("groups is %T (%v), want a JSON array", v, v)
	}
	out := []string{}
	for _, g := range arr {
		s, isStr := g.(string)
		if !isStr {
			t.Fatalf("a group is %T (%v), want a string", g, g)
		}
		out = append(out, s)
	}
	return out, true
}

// signInWithScope runs the flow for scope and returns the tokens and the browser (signed in).
func (p *provider) signInWithScope(email, password, scope string) (tokens, *browser) {
	p.t.Helper()
	b := newBrowser(p.t)
	verifier := oauth2.GenerateVerifier()
	page := b.get(p.authorizeURL("state-groups-0001", verifier, oauth2.SetAuthURLParam("scope", scope)))
	if page.StatusCode != http.StatusOK {
		p.t.Fatalf("authorize page: %d\n%.500s", page.StatusCode, page.body)
	}
	code, _ := codeFrom(p.t, b.signIn(p.base, page.body, email, password), p.redirect)
	tk := p.exchange(code, verifier)
	if tk.status != http.StatusOK {
		p.t.Fatalf("exchange: %d %s", tk.status, tk.Error)
	}
	return tk, b
}

// The groups scope puts the user's groups in the ID token and at userinfo, as a JSON array of strings;
// userinfo reads them live, a refresh issues the current ones; without the scope there is no claim;
// discovery advertises both; the account page shows them.
func TestGroups_ClaimInIDTokenAndUserinfo_WithTheScope(t *testing.T) {
	p := startProvider(t, setup{mutate: func(c *config.Config) {
		c.Auth.Clients[0].Scopes = []string{"openid", "profile", "email", "offline_access", "groups"}
	}})
	p.user(testEmail, testPassword)
	if _, _, err := p.svc.Users().AddGroups(context.Background(), testEmail, []string{"ops", "system:masters"}); err != nil {
		t.Fatal(err)
	}

	tk, b := p.signInWithScope(testEmail, testPassword, "openid email groups offline_access")
	if g, ok := groupsOf(t, claimsOf(t, tk.IDToken)); !ok || !slices.Equal(g, []string{"ops", "system:masters"}) {
		t.Fatalf("ID token groups %v (present %v)", g, ok)
	}
	if g, ok := groupsOf(t, p.userinfo(tk.AccessToken)); !ok || !slices.Equal(g, []string{"ops", "system:masters"}) {
		t.Fatalf("userinfo groups %v (present %v)", g, ok)
	}

	// A change reaches userinfo at once and the next refresh's ID token.
	if _, _, err := p.svc.Users().RemoveGroups(context.Background(), testEmail, []string{"system:masters"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.svc.Users().AddGroups(context.Background(), testEmail, []string{"dev"}); err != nil {
		t.Fatal(err)
	}
	if g, _ := groupsOf(t, p.userinfo(tk.AccessToken)); !slices.Equal(g, []string{"dev", "ops"}) {
		t.Fatalf("userinfo after the change: %v", g)
	}
	rf := p.refresh(tk.RefreshToken)
	if rf.status != http.StatusOK {
		t.Fatalf("refresh: %d %s", rf.status, rf.Error)
	}
	if g, _ := groupsOf(t, claimsOf(t, rf.IDToken)); !slices.Equal(g, []string{"dev", "ops"}) {
		t.Fatalf("refreshed ID token groups %v", g)
	}

	// A user in no group gets an empty array, not a missing claim.
	if _, _, err := p.svc.Users().RemoveGroups(context.Background(), testEmail, []string{"dev", "ops"}); err != nil {
		t.Fatal(err)
	}
	if g, ok := groupsOf(t, p.userinfo(rf.AccessToken)); !ok || len(g) != 0 {
		t.Fatalf("userinfo of a user in no group: %v (present %v)", g, ok)
	}

	// Without the scope, no claim (same client, same user).
	if _, _, err := p.svc.Users().AddGroups(context.Background(), testEmail, []string{"ops"}); err != nil {
		t.Fatal(err)
	}
	plain, _ := p.signInWithScope(testEmail, testPassword, "openid email")
	if g, ok := groupsOf(t, claimsOf(t, plain.IDToken)); ok {
		t.Fatalf("ID token without the groups scope has groups %v", g)
	}
	if g, ok := groupsOf(t, p.userinfo(plain.AccessToken)); ok {
		t.Fatalf("userinfo without the groups scope has groups %v", g)
	}

	// Discovery advertises the scope and the claim.
	res, err := http.Get(p.base + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var doc struct {
		Scopes []string `json:"scopes_supported"`
		Claims []string `json:"claims_supported"`
	}
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(doc.Scopes, "groups") || !slices.Contains(doc.Claims, "groups") {
		t.Fatalf("discovery: scopes_supported %v, claims_supported %v", doc.Scopes, doc.Claims)
	}

	// The account page shows them, read-only (no form acts on them).
	acct := b.get(p.base + "/account")
	if acct.StatusCode != http.StatusOK || !strings.Contains(acct.body, `<h2 id="groups-title">Groups</h2>`) || !strings.Contains(acct.body, "<li>ops</li>") {
		t.Fatalf("account page: %d\n%.3000s", acct.StatusCode, acct.body)
	}
	if strings.Contains(acct.body, "/account/groups") {
		t.Fatal("the account page offers to change the groups")
	}
}

// A client that does not list groups in its scopes cannot ask for them: invalid_scope on its redirect
// URI before the sign-in page, and its tokens never carry the claim.
func TestGroups_ClientWithoutTheScope_NoClaim(t *testing.T) {
	p := startProvider(t, setup{}) // the default scopes: openid profile email offline_access
	p.user(testEmail, testPassword)
	if _, _, err := p.svc.Users().AddGroups(context.Background(), testEmail, []string{"ops"}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	res := b.get(p.authorizeURL("state-groups-0002", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("scope", "openid groups")))
	loc, _ := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusSeeOther || loc == nil || loc.Query().Get("error") != "invalid_scope" {
		t.Fatalf("a client without the groups scope asking for it: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	tk, _ := p.fullSignIn(testEmail, testPassword)
	if g, ok := groupsOf(t, claimsOf(t, tk.IDToken)); ok {
		t.Fatalf("ID token has groups %v", g)
	}
	if g, ok := groupsOf(t, p.userinfo(tk.AccessToken)); ok {
		t.Fatalf("userinfo has groups %v", g)
	}
}

// SendVerification (the `users send-verification` command's core) mails the sign-up's link through a
// real relay (Mailpit); the link verifies the address on the service (email_verified true after it), and
// a verified, disabled or unknown account is refused without a mail.
func TestSendVerification_LinkFromTheMailVerifies(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	p := startProvider(t, setup{mail: mp})
	p.unverifiedUser(testEmail, testPassword)
	u, err := p.svc.SendVerification(context.Background(), "ADA@example.com", "")
	if err != nil || u.Email != testEmail {
		t.Fatalf("send: %v %v", u, err)
	}
	b := newBrowser(t)
	res := followVerifyLink(t, b, p.base, mailLink(t, mp, testEmail, "/account/verify", 1), "confirm")
	if res.StatusCode != http.StatusOK || !strings.Contains(res.body, "is confirmed as your address") {
		t.Fatalf("the link: %d\n%.800s", res.StatusCode, res.body)
	}
	if got, _ := p.svc.Users().ByEmail(context.Background(), testEmail); !got.EmailVerified {
		t.Fatal("the address is not verified after the link")
	}
	if _, err := p.svc.SendVerification(context.Background(), testEmail, ""); !errors.Is(err, auth.ErrAlreadyVerified) {
		t.Fatalf("a verified account: %v", err)
	}
	if _, err := p.svc.SendVerification(context.Background(), "nobody@example.com", ""); !errors.Is(err, users.ErrNotFound) {
		t.Fatalf("an unknown account: %v", err)
	}
	p.user("grace@example.com", testPassword)
	if _, err := p.svc.Users().SetDisabled(context.Background(), "grace@example.com", true); err != nil {
		t.Fatal(err)
	}
	if _, err := p.svc.SendVerification(context.Background(), "grace@example.com", ""); !errors.Is(err, users.ErrDisabled) {
		t.Fatalf("a disabled account: %v", err)
	}
	if n := len(mp.Messages(t)); n != 1 {
		t.Fatalf("%d mails, want 1", n)
	}
}

// An account made on the sign-up form is marked as such (users purge-unverified frees only those); one
// an operator makes is not.
func TestSignup_MarksTheAccountSelfMade(t *testing.T) {
	p := startProvider(t, setup{mutate: func(c *config.Config) { c.Auth.SelfSignup = true }})
	p.user(testEmail, testPassword)
	signUpOnPage(t, p, newBrowser(t), "linus@example.com", "a sign-up password")
	if u, err := p.svc.Users().ByEmail(context.Background(), "linus@example.com"); err != nil || !u.SelfSignup {
		t.Fatalf("the sign-up's account: %+v %v", u, err)
	}
	if u, _ := p.svc.Users().ByEmail(context.Background(), testEmail); u.SelfSignup {
		t.Fatal("an operator's account is marked self-made")
	}
}
