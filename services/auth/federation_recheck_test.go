package auth_test

import (
	"context"
	"html"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testupstream"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Staying correct after sign-in (docs/auth.md, D78): a grant signed in through a connector with
// offlineAccess keeps the upstream's refresh token, and its refreshes re-check the person with the real
// upstream (oidc-provider, which rotates refresh tokens and refuses those of a removed account) at most
// once per recheckEvery, on the service's clock.

const recheckEvery = 10 * time.Minute

func startRechecking(t *testing.T, policy string) (*federated, *testupstream.Upstream, *testClock) {
	t.Helper()
	clock := newTestClock()
	f, up := startFederatedWith(t, setup{now: clock.now}, map[string]testupstream.Account{
		"ada": {"email": "ada@example.com", "email_verified": true, "name": "Ada"},
		"bob": {"email": "bob@example.com", "email_verified": true, "name": "Bob"},
	}, func(c *config.Connector) {
		c.OfflineAccess, c.RecheckEvery, c.OnUpstreamDown = true, config.Duration(recheckEvery), policy
	})
	return f, up, clock
}

// later moves the service's clock past recheckEvery.
func (c *testClock) later() { c.t.Add(int64((recheckEvery + time.Minute) / time.Second)) }

// refreshed refreshes rt and fails the test unless new tokens came.
func (f *federated) refreshed(t *testing.T, rt, step string) tokens {
	t.Helper()
	tk := f.refresh(rt)
	if tk.status != http.StatusOK || tk.RefreshToken == "" {
		t.Fatalf("%s: refresh %d %s, want new tokens", step, tk.status, tk.Error)
	}
	return tk
}

// rechecks is formsservice_auth_upstream_rechecks_total{connector="upstream",result} at /metrics.
func rechecks(t *testing.T, p *provider, result string) string {
	t.Helper()
	for _, line := range strings.Split(metricsOf(t, p), "\n") {
		if strings.HasPrefix(line, `formsservice_auth_upstream_rechecks_total{connector="upstream",result="`+result+`"} `) {
			return line[strings.LastIndexByte(line, ' ')+1:]
		}
	}
	return "0"
}

// recheckEvents are the trail's token.upstream_recheck events.
func recheckEvents(t *testing.T, p *provider) []audit.Event {
	var out []audit.Event
	for _, e := range trail(t, p) {
		if e.Kind == audit.UpstreamRecheck {
			out = append(out, e)
		}
	}
	return out
}

func TestRecheck_RemovedUpstreamAccountEndsTheGrantAtTheNextDueRefresh(t *testing.T) {
	f, up, clock := startRechecking(t, config.UpstreamDownKeep)
	tk := f.signInVia("ada")
	bob := f.signInVia("bob")

	// Within recheckEvery the upstream is not asked.
	tk = f.refreshed(t, tk.RefreshToken, "at once")
	if n := rechecks(t, f.provider, "not_due"); n != "1" {
		t.Fatalf("not_due re-checks %s, want 1", n)
	}
	// Past it, the upstream's refresh token is refreshed: twice, so the upstream's rotated token was
	// kept (the upstream refuses a used one).
	clock.later()
	tk = f.refreshed(t, tk.RefreshToken, "first re-check")
	clock.later()
	tk = f.refreshed(t, tk.RefreshToken, "second re-check")
	if n := rechecks(t, f.provider, "ok"); n != "2" {
		t.Fatalf("ok re-checks %s, want 2", n)
	}

	// The person is removed upstream: until recheckEvery has passed, the grant refreshes unasked.
	up.Remove(t, "ada")
	tk = f.refreshed(t, tk.RefreshToken, "removed, not yet due")
	clock.later()
	ended := f.refresh(tk.RefreshToken)
	if ended.status != http.StatusBadRequest || ended.Error != "invalid_grant" {
		t.Fatalf("the re-check after the removal: %d %s, want 400 invalid_grant", ended.status, ended.Error)
	}
	// The whole grant is over: its refresh token again, and its last access token.
	if again := f.refresh(tk.RefreshToken); again.Error != "invalid_grant" {
		t.Fatalf("the refresh token of the ended grant: %d %s", again.status, again.Error)
	}
	if st := f.userinfoStatus(tk.AccessToken); st != http.StatusUnauthorized {
		t.Fatalf("the access token of the ended grant: userinfo %d, want 401", st)
	}
	if n := rechecks(t, f.provider, "not_allowed"); n != "1" {
		t.Fatalf("not_allowed re-checks %s, want 1", n)
	}
	evs := recheckEvents(t, f.provider)
	if len(evs) != 1 || evs[0].Outcome != audit.Failure || evs[0].Reason != "not_allowed" ||
		evs[0].Detail["connector"] != "upstream" || evs[0].Detail["grant"] != "ended" || evs[0].User == "" {
		t.Fatalf("audit events %+v, want one not_allowed naming the connector", evs)
	}
	// Another person's grant through the same connector lives on.
	f.refreshed(t, bob.RefreshToken, "another person")

	// The upstream's refresh tokens are sealed at rest: no record holds the state in the clear.
	ctx := context.Background()
	keys, err := f.rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if v, err := f.rdb.Get(ctx, k).Result(); err == nil && (strings.Contains(v, `"rt":`) || strings.Contains(v, `\"rt\":`)) {
			t.Fatalf("%s holds the upstream's refresh token in the clear", k)
		}
	}
}

func TestRecheck_UpstreamDown_KeepRefreshesAndSaysSo(t *testing.T) {
	f, up, clock := startRechecking(t, config.UpstreamDownKeep)
	tk := f.signInVia("ada")
	up.Stop()
	clock.later()
	tk = f.refreshed(t, tk.RefreshToken, "upstream down, keep")
	if n := rechecks(t, f.provider, "unreachable_kept"); n != "1" {
		t.Fatalf("unreachable_kept re-checks %s, want 1", n)
	}
	evs := recheckEvents(t, f.provider)
	if len(evs) != 1 || evs[0].Reason != "unreachable" || evs[0].Detail["grant"] != "kept" || evs[0].Detail["connector"] != "upstream" {
		t.Fatalf("audit events %+v, want one unreachable, kept", evs)
	}
	// Skipped, not checked: the next refresh asks again (and is kept again).
	f.refreshed(t, tk.RefreshToken, "still down")
	if n := rechecks(t, f.provider, "unreachable_kept"); n != "2" {
		t.Fatalf("unreachable_kept re-checks %s, want 2 (a skipped re-check is due at the next refresh)", n)
	}
}

func TestRecheck_UpstreamDown_EndEndsTheGrant(t *testing.T) {
	f, up, clock := startRechecking(t, config.UpstreamDownEnd)
	tk := f.signInVia("ada")
	tk = f.refreshed(t, tk.RefreshToken, "upstream up")
	up.Stop()
	tk = f.refreshed(t, tk.RefreshToken, "down, not yet due")
	clock.later()
	if ended := f.refresh(tk.RefreshToken); ended.status != http.StatusBadRequest || ended.Error != "invalid_grant" {
		t.Fatalf("a due re-check with the upstream down, onUpstreamDown end: %d %s, want 400 invalid_grant", ended.status, ended.Error)
	}
	if again := f.refresh(tk.RefreshToken); again.Error != "invalid_grant" {
		t.Fatalf("the refresh token of the ended grant: %d %s", again.status, again.Error)
	}
	if st := f.userinfoStatus(tk.AccessToken); st != http.StatusUnauthorized {
		t.Fatalf("the access token of the ended grant: userinfo %d, want 401", st)
	}
	if n := rechecks(t, f.provider, "unreachable_ended"); n != "1" {
		t.Fatalf("unreachable_ended re-checks %s, want 1", n)
	}
	evs := recheckEvents(t, f.provider)
	if len(evs) != 1 || evs[0].Reason != "unreachable" || evs[0].Detail["grant"] != "ended" {
		t.Fatalf("audit events %+v, want one unreachable, ended", evs)
	}
}

// At sign-in an upstream that does not answer gets a page that says so, in the person's language: 502,
// never a 500, whether it is down from the start (its discovery) or stops before its answer comes back
// (the code's exchange).
func TestRecheck_UpstreamDownAtSignIn_APageThatSaysSo(t *testing.T) {
	for _, lang := range []struct{ accept, want string }{{"en", "Upstream did not answer"}, {"de", "Upstream hat nicht geantwortet"}} {
		f, up, _ := startRechecking(t, config.UpstreamDownKeep)
		up.Stop()
		b := newBrowser(t)
		req, _ := http.NewRequest(http.MethodGet, f.authorizeURL("state-0123456789", oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("connector_id", "upstream")), nil)
		req.Header.Set("Accept-Language", lang.accept)
		res := b.do(req)
		if res.StatusCode != http.StatusBadGateway || !strings.Contains(html.UnescapeString(res.body), lang.want) {
			t.Fatalf("%s: an upstream down at discovery: %d, want 502 with %q\n%.600s", lang.accept, res.StatusCode, lang.want, res.body)
		}
	}

	f, up, _ := startRechecking(t, config.UpstreamDownKeep)
	b := newBrowser(t)
	page := b.get(f.authorizeURL("state-0123456789", oauth2.GenerateVerifier()))
	res := b.get(f.base + connectorLink(t, page.body, "upstream"))
	callback := f.upToCallback(b, res, "ada")
	up.Stop()
	if answer := b.get(callback); answer.StatusCode != http.StatusBadGateway || !strings.Contains(answer.body, "did not answer") {
		t.Fatalf("an upstream down at the code's exchange: %d\n%.600s", answer.StatusCode, answer.body)
	}
}
