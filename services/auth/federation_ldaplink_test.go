package auth_test

import (
	"context"
	"errors"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/users"
)

// Linking an account in a real directory (internal/testldap: slapd) from the account page, over HTTP
// (D82): the page offers the ldap connector with a link to its own form, the directory binds as the
// person, the entry is linked to the signed-in account and signs in to it; refused for a wrong
// password (one message), a forged form, an entry linked to another account, an unverified account;
// throttled with the sign-in's budgets; a clear 503 with the directory down; audited with the
// connector; and removed again.

var directoryLinkRe = regexp.MustCompile(`<a class="button secondary" href="([^"]*/account/connectors/ldap\?connector=corp)" data-connector="corp">`)

// directoryLinkForm opens the account page's step of linking corp in b (signed in), and returns it.
func (f *directoryProvider) directoryLinkForm(b *browser, account response) response {
	f.t.Helper()
	m := directoryLinkRe.FindStringSubmatch(account.body)
	if m == nil {
		f.t.Fatalf("the account page offers no link to the directory:\n%.1500s", account.body)
	}
	form := b.get(f.base + html.UnescapeString(m[1]))
	if form.StatusCode != http.StatusOK || !strings.Contains(form.body, `name="username"`) || !strings.Contains(form.body, "Link Corp directory") {
		f.t.Fatalf("the directory's link form: %d\n%.800s", form.StatusCode, form.body)
	}
	return form
}

// linkDirectory posts username and password on the link form page.
func (f *directoryProvider) linkDirectory(b *browser, form response, username, password string) response {
	f.t.Helper()
	pf := forms(f.t, f.base, form.body)[0]
	if !strings.HasSuffix(pf.action, "/account/connectors/ldap") || pf.fields.Get("connector") != "corp" {
		f.t.Fatalf("the link form posts to %s with %v", pf.action, pf.fields)
	}
	pf.fields.Set("username", username)
	pf.fields.Set("password", password)
	return b.postForm(pf.action, pf.fields)
}

func (f *directoryProvider) linkEvents(user string) []audit.Event {
	f.t.Helper()
	ctx := context.Background()
	if err := f.svc.Audit().Flush(ctx); err != nil {
		f.t.Fatal(err)
	}
	events, err := audit.NewStore(f.rdb, nil).Query(ctx, audit.Filter{User: user, Kinds: []audit.Kind{audit.IdentityLinked}})
	if err != nil {
		f.t.Fatal(err)
	}
	return events
}

func TestFederation_LDAPLinkFromTheAccountPage(t *testing.T) {
	f := startDirectory(t, false)
	ctx := context.Background()
	us := f.svc.Users()
	ada := f.user(testEmail, testPassword)
	b := newBrowser(t)
	account := f.accountSignIn(b, testEmail, testPassword, nil)
	form := f.directoryLinkForm(b, account)

	t.Run("a wrong password or unknown user: one refusal, audited, nothing linked", func(t *testing.T) {
		for _, tc := range [][2]string{{"alice", "wrong"}, {"nobody", "alice-pass"}, {"alice", ""}, {"*)(uid=*", "alice-pass"}} {
			res := f.linkDirectory(b, form, tc[0], tc[1])
			if res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.body, "Wrong username or password.") || !strings.Contains(res.body, `role="alert"`) {
				t.Errorf("%q/%q: want 401 and one message, got %d\n%.600s", tc[0], tc[1], res.StatusCode, res.body)
			}
		}
		if ids, _ := us.Identities(ctx, ada); len(ids) != 0 {
			t.Fatalf("linked: %+v", ids)
		}
		events := f.linkEvents(ada)
		if len(events) == 0 || events[0].Outcome != audit.Failure || events[0].Reason != "bad_credentials" || events[0].Detail["connector"] != "corp" {
			t.Fatalf("audit events %+v", events)
		}
	})

	t.Run("the form needs its CSRF token", func(t *testing.T) {
		res := b.postForm(f.base+"/account/connectors/ldap", url.Values{"csrf_token": {"forged"}, "connector": {"corp"}, "username": {"alice"}, "password": {"alice-pass"}})
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("want 403, got %d", res.StatusCode)
		}
		if ids, _ := us.Identities(ctx, ada); len(ids) != 0 {
			t.Fatalf("linked by a forged form: %+v", ids)
		}
	})

	t.Run("the person's entry is linked, and signs in to the account", func(t *testing.T) {
		res := f.linkDirectory(b, form, "alice", "alice-pass")
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/account?done=linked" {
			t.Fatalf("want 303 to the account page, got %d %s\n%.600s", res.StatusCode, res.Header.Get("Location"), res.body)
		}
		ids, err := us.Identities(ctx, ada)
		if err != nil || len(ids) != 1 || ids[0].Connector != "corp" || ids[0].Email != "alice@example.com" || len(ids[0].Subject) != 36 { // entryUUID
			t.Fatalf("identities %+v, %v", ids, err)
		}
		events := f.linkEvents(ada) // oldest first
		if last := events[len(events)-1]; last.Outcome != audit.Success || last.Detail["connector"] != "corp" {
			t.Fatalf("audit events %+v", events)
		}
		page := b.get(f.base + "/account?done=linked")
		if !strings.Contains(page.body, "The account was linked") || !strings.Contains(page.body, "alice@example.com") || directoryLinkRe.MatchString(page.body) {
			t.Fatalf("the account page after linking:\n%.1500s", page.body)
		}
		// The directory's sign-in now ends in Ada's account: no account of its own for alice.
		verifier := oauth2.GenerateVerifier()
		code, _ := codeFrom(t, f.viaDirectory(newBrowser(t), f.authorizeURL("state-0123456789", verifier), "alice", "alice-pass"), f.redirect)
		tk := f.exchange(code, verifier)
		if sub := idClaims(t, tk.IDToken)["sub"]; sub != ada {
			t.Fatalf("the directory signs in to %v, want %s", sub, ada)
		}
		if _, err := us.ByEmail(ctx, "alice@example.com"); !errors.Is(err, users.ErrNotFound) {
			t.Fatalf("an account was made for alice: %v", err)
		}
	})

	t.Run("an entry linked to another account is refused clearly", func(t *testing.T) {
		other := f.user("other@example.com", testPassword)
		ob := newBrowser(t)
		res := f.linkDirectory(ob, f.directoryLinkForm(ob, f.accountSignIn(ob, "other@example.com", testPassword, nil)), "alice", "alice-pass")
		if res.StatusCode != http.StatusConflict || !strings.Contains(res.body, "This Corp directory account is linked to another account here.") {
			t.Fatalf("want 409 saying so, got %d\n%.600s", res.StatusCode, res.body)
		}
		if ids, _ := us.Identities(ctx, other); len(ids) != 0 {
			t.Fatalf("linked twice: %+v", ids)
		}
		if u, err := us.ByIdentity(ctx, "corp", mustIdentity(t, us, ada)); err != nil || u.ID != ada {
			t.Fatalf("the entry links to %+v (%v), want %s", u, err, ada)
		}
		if events := f.linkEvents(other); len(events) != 1 || events[0].Reason != "taken" || events[0].Detail["connector"] != "corp" {
			t.Fatalf("audit events %+v", events)
		}
	})

	t.Run("an account whose address is not verified links nothing", func(t *testing.T) {
		f.unverifiedUser("early@example.com", testPassword)
		ub := newBrowser(t)
		page := f.accountSignIn(ub, "early@example.com", testPassword, nil)
		if directoryLinkRe.MatchString(page.body) {
			t.Fatal("the account page offers the directory to an unverified account")
		}
		res := ub.get(f.base + "/account/connectors/ldap?connector=corp")
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/account?link_error=refused" {
			t.Fatalf("the form for an unverified account: %d %s", res.StatusCode, res.Header.Get("Location"))
		}
	})

	t.Run("the form in German", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, f.base+"/account/connectors/ldap?connector=corp", nil)
		req.Header.Set("Accept-Language", "de")
		res := b.do(req)
		for _, want := range []string{"Corp directory verknüpfen", "Benutzername", "Passwort", "Geben Sie Benutzernamen und Passwort Ihres Kontos bei Corp directory ein."} {
			if !strings.Contains(res.body, want) {
				t.Errorf("no %q on the German form:\n%.800s", want, res.body)
			}
		}
	})

	t.Run("removed again", func(t *testing.T) {
		f := forms(t, f.base, b.get(f.base+"/account").body)
		var unlink *pageForm
		for i := range f {
			if strings.HasSuffix(f[i].action, "/account/connectors/unlink") && f[i].fields.Get("connector") == "corp" {
				unlink = &f[i]
			}
		}
		if unlink == nil {
			t.Fatal("no unlink form for corp")
		}
		res := b.postForm(unlink.action, unlink.fields)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/account?done=unlinked" {
			t.Fatalf("unlink: %d %s", res.StatusCode, res.Header.Get("Location"))
		}
		if ids, _ := us.Identities(ctx, ada); len(ids) != 0 {
			t.Fatalf("still linked: %+v", ids)
		}
	})

	t.Run("the directory down: a clear 503, never a 500", func(t *testing.T) {
		f.dir.Stop()
		defer f.dir.Restart()
		res := f.linkDirectory(b, form, "alice", "alice-pass")
		if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(res.body, "Corp directory did not answer") || res.Header.Get("Retry-After") == "" {
			t.Fatalf("want 503 saying the directory did not answer, got %d\n%.600s", res.StatusCode, res.body)
		}
	})

	t.Run("failures count against the sign-in's budgets for the username", func(t *testing.T) {
		var last response
		for range 12 {
			last = f.linkDirectory(b, form, "bob", "guess")
			if last.StatusCode == http.StatusTooManyRequests {
				break
			}
		}
		if last.StatusCode != http.StatusTooManyRequests || last.Header.Get("Retry-After") == "" {
			t.Fatalf("after repeated failures: %d, want 429 with Retry-After", last.StatusCode)
		}
		// The same budgets hold the directory's sign-in for bob: the link form is no way around them.
		res := f.viaDirectory(newBrowser(t), f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()), "bob", "bob-pass")
		if res.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("the sign-in for bob after the link form's failures: %d, want 429", res.StatusCode)
		}
	})
}

// mustIdentity is the subject of the user's one linked identity.
func mustIdentity(t *testing.T, us *users.Store, user string) string {
	t.Helper()
	ids, err := us.Identities(context.Background(), user)
	if err != nil || len(ids) != 1 {
		t.Fatalf("identities %+v, %v", ids, err)
	}
	return ids[0].Subject
}
