package auth_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testmail"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/auth"
	"github.com/formsservice/formsservice/services/auth/backchannel"
	"github.com/formsservice/formsservice/services/platform/config"
)

// relyingParty is an application with a session of its own, on a real HTTP server on loopback: it signs
// people in with the provider's ID tokens (go-oidc) and ends their sessions when a logout token arrives
// at /bcl, after checking it as Back-Channel Logout 1.0, 2.6 says.
type relyingParty struct {
	t        testing.TB
	p        *provider
	clientID string
	redirect string
	url      string // its backchannelLogoutURI
	now      func() time.Time
	// answers are the statuses it gives the first logout tokens that arrive (then 200); hang makes it
	// never answer until the test ends.
	answers   []int
	hang      bool
	hangUntil chan struct{}

	mu       sync.Mutex
	sessions map[string]rpSession // its own session ID → who and which provider session
	tokens   []map[string]any     // the logout tokens it accepted
	refused  []string             // why it refused a logout token
	attempts atomic.Int32
	inFlight atomic.Int32
}

type rpSession struct{ sub, sid string }

func newRelyingParty(t testing.TB, clientID string, now func() time.Time) *relyingParty {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rp := &relyingParty{t: t, clientID: clientID, url: "http://" + ln.Addr().String() + "/bcl", now: now, sessions: map[string]rpSession{}}
	release := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(rp.logout), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { close(release); _ = srv.Close() })
	rp.hangUntil = release
	return rp
}

func (rp *relyingParty) logout(w http.ResponseWriter, r *http.Request) {
	n := int(rp.attempts.Add(1))
	rp.inFlight.Add(1)
	defer rp.inFlight.Add(-1)
	if rp.hang {
		<-rp.hangUntil
		return
	}
	if n <= len(rp.answers) {
		w.WriteHeader(rp.answers[n-1])
		return
	}
	claims, err := rp.verify(r)
	if err != nil {
		rp.mu.Lock()
		rp.refused = append(rp.refused, err.Error())
		rp.mu.Unlock()
		http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
		return
	}
	sub, _ := claims["sub"].(string)
	sid, _ := claims["sid"].(string)
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.tokens = append(rp.tokens, claims)
	for id, s := range rp.sessions {
		// With a sid: that session (of that user, when sub is there too); without: every session of sub.
		if (sid != "" && s.sid == sid && (sub == "" || s.sub == sub)) || (sid == "" && s.sub == sub) {
			delete(rp.sessions, id)
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

// verify checks a logout token as an RP must (Back-Channel Logout 1.0, 2.6): the signature by the
// provider's JWKS, iss, aud, exp (go-oidc's verifier, on the test's clock), the typ header, iat, the
// event, sub or sid, and no nonce.
func (rp *relyingParty) verify(r *http.Request) (map[string]any, error) {
	if ct := r.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
		return nil, fmt.Errorf("content type %q", ct)
	}
	if err := r.ParseForm(); err != nil {
		return nil, err
	}
	raw := r.PostForm.Get("logout_token")
	ctx := context.Background()
	op, err := oidc.NewProvider(ctx, rp.p.base)
	if err != nil {
		return nil, err
	}
	tok, err := op.Verifier(&oidc.Config{ClientID: rp.clientID, Now: rp.now}).Verify(ctx, raw)
	if err != nil {
		return nil, err
	}
	hb, err := base64.RawURLEncoding.DecodeString(raw[:strings.IndexByte(raw, '.')])
	if err != nil {
		return nil, err
	}
	var header map[string]any
	if err := json.Unmarshal(hb, &header); err != nil || header["typ"] != "logout+jwt" {
		return nil, fmt.Errorf("header %s", hb)
	}
	var c map[string]any
	if err := tok.Claims(&c); err != nil {
		return nil, err
	}
	events, _ := c["events"].(map[string]any)
	if _, ok := events[backchannel.EventType]; !ok {
		return nil, fmt.Errorf("no back-channel logout event: %v", c["events"])
	}
	if _, ok := c["nonce"]; ok {
		return nil, errors.New("a nonce")
	}
	if _, ok := c["iat"].(float64); !ok {
		return nil, errors.New("no iat")
	}
	if _, ok := c["jti"].(string); !ok {
		return nil, errors.New("no jti")
	}
	if c["sub"] == nil && c["sid"] == nil {
		return nil, errors.New("neither sub nor sid")
	}
	return c, nil
}

// signIn is the RP's callback: it exchanges a code for tokens, verifies the ID token and starts its own
// session for the sub and sid in it. It returns the tokens and the ID token's claims.
func (rp *relyingParty) signIn(code, verifier string) (tokens, map[string]any) {
	rp.t.Helper()
	p := rp.p
	tk := p.tokenRequest(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {rp.redirect},
		"client_id": {rp.clientID}, "code_verifier": {verifier}})
	if tk.status != http.StatusOK {
		rp.t.Fatalf("%s: exchange: %d %s", rp.clientID, tk.status, tk.Error)
	}
	ctx := context.Background()
	op, err := oidc.NewProvider(ctx, p.base)
	if err != nil {
		rp.t.Fatal(err)
	}
	idt, err := op.Verifier(&oidc.Config{ClientID: rp.clientID, Now: rp.now}).Verify(ctx, tk.IDToken)
	if err != nil {
		rp.t.Fatal(err)
	}
	var c map[string]any
	if err := idt.Claims(&c); err != nil {
		rp.t.Fatal(err)
	}
	sid, _ := c["sid"].(string)
	rp.mu.Lock()
	rp.sessions[fmt.Sprintf("s%d", len(rp.sessions)+len(rp.tokens)+1)] = rpSession{sub: idt.Subject, sid: sid}
	rp.mu.Unlock()
	return tk, c
}

func (rp *relyingParty) signedIn() int {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return len(rp.sessions)
}

func (rp *relyingParty) accepted() []map[string]any {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return append([]map[string]any(nil), rp.tokens...)
}

// bclClients registers the relying parties as clients of the provider (each with its redirect URI on the
// provider's host, which no test follows) and ties them to p.
type bclClient struct {
	rp              *relyingParty
	sessionRequired bool
	noURI           bool
}

func startWithRelyingParties(t *testing.T, s setup, clients ...bclClient) *provider {
	t.Helper()
	mutate := s.mutate
	s.mutate = func(c *config.Config) {
		c.Auth.Clients = nil
		for _, cl := range clients {
			cl.rp.redirect = c.PublicURL + "/cb-" + cl.rp.clientID
			oc := config.OAuthClient{ClientID: cl.rp.clientID, RedirectURIs: []string{cl.rp.redirect}, PostLogoutRedirectURIs: []string{c.PublicURL + "/bye"},
				BackchannelLogoutSessionRequired: cl.sessionRequired}
			if !cl.noURI {
				oc.BackchannelLogoutURI = cl.rp.url
			}
			c.Auth.Clients = append(c.Auth.Clients, oc)
		}
		if mutate != nil {
			mutate(c)
		}
	}
	p := startProvider(t, s)
	for _, cl := range clients {
		cl.rp.p = p
	}
	return p
}

// signInTo signs the browser in to rp (with the form when the browser has no session yet) and has the
// RP sign the person in with the code.
func (rp *relyingParty) signInWith(b *browser, email, password string) (tokens, map[string]any) {
	rp.t.Helper()
	p := rp.p
	verifier := oauth2.GenerateVerifier()
	res := b.get(rp.authorizeURL(verifier))
	if res.StatusCode == http.StatusOK {
		res = b.signIn(p.base, res.body, email, password)
	}
	code, _ := codeFrom(rp.t, res, rp.redirect)
	return rp.signIn(code, verifier)
}

// authorizeURL is the RP's authorization request.
func (rp *relyingParty) authorizeURL(verifier string) string {
	conf := &oauth2.Config{ClientID: rp.clientID, RedirectURL: rp.redirect, Scopes: []string{"openid", "email", "offline_access"},
		Endpoint: oauth2.Endpoint{AuthURL: rp.p.base + "/oauth2/authorize"}}
	return conf.AuthCodeURL("state-"+rp.clientID+"-0123456789", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("nonce", "nonce-"+rp.clientID+"-0123456789"))
}

func (p *provider) pending(t testing.TB) map[backchannel.Job]time.Time {
	t.Helper()
	jobs, err := backchannel.NewQueue(p.rdb).Jobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// Provider logout (RP-initiated, with an id_token_hint): every client that had a grant in the browser
// session gets a logout token naming the user and the session (the same sid that was in each client's
// ID token), verifies it and ends its own session; a client without a grant in it hears nothing, and
// discovery says the provider does back-channel logout.
func TestBackchannelLogout_ProviderLogout_EveryRPOfTheSessionEndsItsSession(t *testing.T) {
	app, app2, other, silent := newRelyingParty(t, "app", time.Now), newRelyingParty(t, "app2", time.Now), newRelyingParty(t, "other", time.Now), newRelyingParty(t, "silent", time.Now)
	p := startWithRelyingParties(t, setup{}, bclClient{rp: app, sessionRequired: true}, bclClient{rp: app2}, bclClient{rp: other}, bclClient{rp: silent, noURI: true})
	sub := p.user(testEmail, testPassword)

	var disc map[string]any
	if res := newBrowser(t).get(p.base + "/.well-known/openid-configuration"); json.Unmarshal([]byte(res.body), &disc) != nil ||
		disc["backchannel_logout_supported"] != true || disc["backchannel_logout_session_supported"] != true {
		t.Fatalf("discovery: %.600s", res.body)
	}

	b := newBrowser(t)
	tk, idc := app.signInWith(b, testEmail, testPassword)
	_, idc2 := app2.signInWith(b, testEmail, testPassword)
	_, idc3 := silent.signInWith(b, testEmail, testPassword)
	sid, _ := idc["sid"].(string)
	if sid == "" || idc2["sid"] != sid || idc3["sid"] != sid {
		t.Fatalf("sid: %v, %v, %v: want one, the same for every client of the browser session", idc["sid"], idc2["sid"], idc3["sid"])
	}
	// Another browser's session has another sid, and "other" a session in it that this logout leaves.
	_, idcOther := other.signInWith(newBrowser(t), testEmail, testPassword)
	if idcOther["sid"] == sid || idcOther["sid"] == nil {
		t.Fatalf("another browser's sid: %v", idcOther["sid"])
	}
	// A refreshed ID token keeps the sid.
	if r := p.tokenRequest(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tk.RefreshToken}, "client_id": {"app"}}); r.status != http.StatusOK ||
		claimsOf(t, r.IDToken)["sid"] != sid {
		t.Fatalf("refresh: %d, sid %v", r.status, claimsOf(t, r.IDToken)["sid"])
	}

	res := b.get(p.base + "/oauth2/logout?" + url.Values{"id_token_hint": {tk.IDToken}, "post_logout_redirect_uri": {p.base + "/bye"}}.Encode())
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", res.StatusCode)
	}
	testwait.For(t, 10*time.Second, "app and app2 end their sessions", func() bool { return app.signedIn() == 0 && app2.signedIn() == 0 })
	for _, rp := range []*relyingParty{app, app2} {
		got := rp.accepted()
		if len(got) != 1 || got[0]["sub"] != sub || got[0]["sid"] != sid || got[0]["aud"] != rp.clientID {
			t.Errorf("%s accepted %v, want one token with sub %s and sid %s", rp.clientID, got, sub, sid)
		}
	}
	// The worker takes a job off the queue after the relying party has answered, so the RPs can end
	// their sessions a moment before the queue is empty.
	testwait.For(t, 10*time.Second, "the queue empties", func() bool { return len(p.pending(t)) == 0 })
	p.svc.Backchannel().RunOnce(context.Background()) // nothing is left to send to "other"
	if other.attempts.Load() != 0 || other.signedIn() != 1 {
		t.Errorf("the client without a grant in the session was told %d times, has %d sessions", other.attempts.Load(), other.signedIn())
	}
	if metrics := b.get(p.base + "/metrics"); !strings.Contains(metrics.body, `formsservice_auth_backchannel_logout_total{result="delivered"} 2`) {
		t.Errorf("metrics lack 2 delivered:\n%s", grepLines(metrics.body, "backchannel"))
	}
}

// Ending a browser's session on the account page (from another browser) tells the relying parties of
// the grants started in it, as a logout there would.
func TestBackchannelLogout_SessionEndedOnTheAccountPage_EndsTheRPSession(t *testing.T) {
	app := newRelyingParty(t, "app", time.Now)
	p := startWithRelyingParties(t, setup{}, bclClient{rp: app})
	p.user(testEmail, testPassword)
	_, idc := app.signInWith(newBrowser(t), testEmail, testPassword)

	b := newBrowser(t)
	acct := p.accountSignIn(b, testEmail, testPassword, nil)
	csrf := forms(t, p.base, acct.body)[0].fields.Get("csrf_token")
	sum := sha256.Sum256([]byte(sessionCookieValue(b, p.base)))
	current := base64.RawURLEncoding.EncodeToString(sum[:])
	var other string
	for _, m := range regexp.MustCompile(`name="session" value="([^"]+)"`).FindAllStringSubmatch(acct.body, -1) {
		if m[1] != current {
			other = m[1]
		}
	}
	if other == "" {
		t.Fatalf("no other session on the page")
	}
	if res := b.postForm(p.base+"/account/sessions/end", url.Values{"session": {other}, "csrf_token": {csrf}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("ending the other session: %d", res.StatusCode)
	}
	testwait.For(t, 10*time.Second, "the RP ends its session", func() bool { return app.signedIn() == 0 })
	if got := app.accepted(); len(got) != 1 || got[0]["sid"] != idc["sid"] {
		t.Errorf("accepted %v, want one token with sid %v", got, idc["sid"])
	}
}

// Sign-out everywhere (the account operation every door uses), a password reset by mail, and a disabled
// account (as `formsservice users disable` does it): every client with a grant of the user ends its
// sessions; a client that requires the session gets one token per session, with its sid.
func TestBackchannelLogout_SignOutEverywhereResetAndDisable_EndTheRPSessions(t *testing.T) {
	mp := testmail.Start(t, testmail.Options{})
	app, app2 := newRelyingParty(t, "app", time.Now), newRelyingParty(t, "app2", time.Now)
	p := startWithRelyingParties(t, setup{mail: mp, mutate: newBrowserMailsOff}, bclClient{rp: app, sessionRequired: true}, bclClient{rp: app2})
	sub := p.user(testEmail, testPassword)
	ctx := context.Background()

	signInTwice := func(password string) (sids []any) {
		for range 2 {
			b := newBrowser(t)
			_, c := app.signInWith(b, testEmail, password)
			app2.signInWith(b, testEmail, password)
			sids = append(sids, c["sid"])
		}
		return sids
	}
	wantEnded := func(what string, before int, sids []any) {
		t.Helper()
		testwait.For(t, 10*time.Second, what+": the RPs end their sessions", func() bool { return app.signedIn() == 0 && app2.signedIn() == 0 })
		got := app.accepted()[before:]
		if len(got) != 2 || !(got[0]["sid"] == sids[0] && got[1]["sid"] == sids[1] || got[0]["sid"] == sids[1] && got[1]["sid"] == sids[0]) {
			t.Errorf("%s: app (session required) accepted %v, want one token per session %v", what, got, sids)
		}
		for _, c := range got {
			if c["sub"] != sub {
				t.Errorf("%s: app's token names %v", what, c["sub"])
			}
		}
		if got := app2.accepted(); len(got) == 0 || got[len(got)-1]["sub"] != sub || got[len(got)-1]["sid"] != nil {
			t.Errorf("%s: app2 accepted %v, want its last token with sub only", what, got)
		}
	}

	// Sign out everywhere.
	sids := signInTwice(testPassword)
	if _, _, err := p.svc.Accounts().SignOutEverywhere(ctx, sub); err != nil {
		t.Fatal(err)
	}
	wantEnded("sign out everywhere", 0, sids)

	// A password reset from the mailed link.
	sids = signInTwice(testPassword)
	b := newBrowser(t)
	page := b.get(app.authorizeURL(oauth2.GenerateVerifier()))
	forgot := b.get(p.base + htmlUnescape(regexpFind(t, page.body, `<a href="([^"]+)" id="forgot">`)))
	form := formTo(t, p.base, forgot.body, "/account/forgot")
	form.fields.Set("email", testEmail)
	if res := b.postForm(form.action, form.fields); res.StatusCode != http.StatusOK {
		t.Fatalf("forgot: %d", res.StatusCode)
	}
	resetPage := b.get(mailLink(t, mp, testEmail, "/account/reset", 1))
	reset := formTo(t, p.base, resetPage.body, "/account/reset")
	const newPassword = "a brand new password"
	reset.fields.Set("new_password", newPassword)
	if res := b.postForm(reset.action, reset.fields); res.StatusCode != http.StatusOK || !strings.Contains(res.body, "Your password was changed") {
		t.Fatalf("reset: %d\n%.600s", res.StatusCode, res.body)
	}
	wantEnded("password reset", 2, sids)

	// Disabled, as the command line does it: Redis and the configuration only; a replica's worker sends.
	sids = signInTwice(newPassword)
	if _, err := p.svc.Users().SetDisabled(ctx, testEmail, true); err != nil {
		t.Fatal(err)
	}
	if _, _, err := auth.SignOutEverywhere(ctx, p.rdb, p.cfg.Auth, sub); err != nil {
		t.Fatal(err)
	}
	wantEnded("disabled", 4, sids)
}

// An RP that answers 500 gets the token again after the backoff (2 min on the provider's clock, not
// before), and ends its session then; one that never answers 2xx is given up after MaxAttempts.
func TestBackchannelLogout_RetriedWithBackoffOnTheProvidersClock(t *testing.T) {
	clock := newTestClock()
	flaky, broken := newRelyingParty(t, "app", clock.now), newRelyingParty(t, "app2", clock.now)
	flaky.answers = []int{http.StatusInternalServerError}
	broken.answers = []int{500, 500, 502, 503, 500, 500}
	p := startWithRelyingParties(t, setup{now: clock.now}, bclClient{rp: flaky}, bclClient{rp: broken})
	p.user(testEmail, testPassword)
	b := newBrowser(t)
	tk, _ := flaky.signInWith(b, testEmail, testPassword)
	broken.signInWith(b, testEmail, testPassword)
	worker := p.svc.Backchannel()
	ctx := context.Background()

	if res := b.get(p.base + "/oauth2/logout?" + url.Values{"id_token_hint": {tk.IDToken}}.Encode()); res.StatusCode != http.StatusOK {
		t.Fatalf("logout: %d", res.StatusCode)
	}
	waitAttempts := func(n int) {
		t.Helper()
		testwait.For(t, 10*time.Second, fmt.Sprintf("attempt %d failed and is queued again", n), func() bool {
			for j := range p.pending(t) {
				if j.Client == "app" && j.Attempts == n && flaky.inFlight.Load() == 0 {
					return true
				}
			}
			return false
		})
	}
	waitAttempts(1)
	// The other RP never answers 2xx: each wait four times the one before, then given up.
	brokenAt := func(n int) func() bool { // n attempts made, none in flight, and the queue agrees
		return func() bool {
			if broken.attempts.Load() != int32(n) || broken.inFlight.Load() != 0 {
				return false
			}
			for j := range p.pending(t) {
				if j.Client == "app2" {
					return j.Attempts == n
				}
			}
			return n == backchannel.MaxAttempts
		}
	}
	testwait.For(t, 10*time.Second, "the broken RP's first attempt", brokenAt(1))
	if due := func() time.Time {
		for j, at := range p.pending(t) {
			if j.Client == "app" {
				return at
			}
		}
		return time.Time{}
	}(); !due.Equal(clock.now().Add(backchannel.FirstRetry)) {
		t.Fatalf("the retry is due at %v, want %v", due, clock.now().Add(backchannel.FirstRetry))
	}
	worker.RunOnce(ctx) // not due yet: nothing is sent
	if n := flaky.attempts.Load(); n != 1 || flaky.signedIn() != 1 {
		t.Fatalf("before the backoff: %d attempts, %d sessions", n, flaky.signedIn())
	}
	clock.t.Add(int64(backchannel.FirstRetry / time.Second))
	worker.RunOnce(ctx)
	testwait.For(t, 10*time.Second, "the RP ends its session after the backoff", func() bool { return flaky.signedIn() == 0 })
	if n := flaky.attempts.Load(); n != 2 {
		t.Fatalf("after the backoff: %d attempts (refused: %v)", n, flaky.refused)
	}

	testwait.For(t, 10*time.Second, "the broken RP's second attempt, due with the other's", brokenAt(2))
	for n := 2; n < backchannel.MaxAttempts; n++ {
		clock.t.Add(int64(backchannel.Backoff(n) / time.Second))
		worker.RunOnce(ctx)
		testwait.For(t, 10*time.Second, fmt.Sprintf("the broken RP's attempt %d, after %v", n+1, backchannel.Backoff(n)), brokenAt(n+1))
	}
	if got := p.pending(t); len(got) != 0 || broken.signedIn() != 1 {
		t.Fatalf("after %d attempts: pending %v", broken.attempts.Load(), got)
	}
	metrics := b.get(p.base + "/metrics").body
	for _, want := range []string{`formsservice_auth_backchannel_logout_total{result="gave_up"} 1`, `formsservice_auth_backchannel_logout_total{result="delivered"} 1`,
		`formsservice_auth_backchannel_logout_total{result="retry"} 5`, `formsservice_auth_backchannel_logout_pending 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(metrics, "backchannel"))
		}
	}
}

// An RP that never answers does not hold up the sign-out nor another RP's token, and its attempt ends
// at the timeout (then it is queued for a retry).
func TestBackchannelLogout_AHangingRPHoldsUpNothing(t *testing.T) {
	hanging, good := newRelyingParty(t, "app", time.Now), newRelyingParty(t, "app2", time.Now)
	hanging.hang = true
	p := startWithRelyingParties(t, setup{backchannelTimeout: 300 * time.Millisecond}, bclClient{rp: hanging}, bclClient{rp: good})
	p.user(testEmail, testPassword)
	b := newBrowser(t)
	tk, _ := hanging.signInWith(b, testEmail, testPassword)
	good.signInWith(b, testEmail, testPassword)

	if res := b.get(p.base + "/oauth2/logout?" + url.Values{"id_token_hint": {tk.IDToken}}.Encode()); res.StatusCode != http.StatusOK {
		t.Fatalf("logout: %d", res.StatusCode)
	}
	testwait.For(t, 10*time.Second, "the good RP ends its session", func() bool { return good.signedIn() == 0 })
	testwait.For(t, 10*time.Second, "the hanging RP's attempt times out and is queued again", func() bool {
		for j := range p.pending(t) {
			if j.Client == "app" && j.Attempts == 1 {
				return true
			}
		}
		return false
	})
	if hanging.attempts.Load() != 1 {
		t.Errorf("the hanging RP had %d attempts", hanging.attempts.Load())
	}
}

// groups in the access token: only for the client with accessTokenGroups (and the groups scope), and
// current at every refresh; a client with the scope but not the setting gets them in the ID token only.
func TestAccessTokenGroups_OnlyForTheClientWithTheSetting(t *testing.T) {
	p := startProvider(t, setup{mutate: func(c *config.Config) {
		c.Auth.Clients = []config.OAuthClient{
			{ClientID: "app", RedirectURIs: []string{c.PublicURL + "/cb-app"}, Scopes: []string{"openid", "groups", "offline_access"}, AccessTokenGroups: true},
			{ClientID: "app2", RedirectURIs: []string{c.PublicURL + "/cb-app2"}, Scopes: []string{"openid", "groups", "offline_access"}},
		}
	}})
	p.user(testEmail, testPassword)
	if _, _, err := p.svc.Users().AddGroups(context.Background(), testEmail, []string{"ops"}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	get := func(client string) tokens {
		verifier := oauth2.GenerateVerifier()
		redirect := p.base + "/cb-" + client
		conf := &oauth2.Config{ClientID: client, RedirectURL: redirect, Scopes: []string{"openid", "groups", "offline_access"},
			Endpoint: oauth2.Endpoint{AuthURL: p.base + "/oauth2/authorize"}}
		res := b.get(conf.AuthCodeURL("state-"+client+"-0123456789", oauth2.S256ChallengeOption(verifier)))
		if res.StatusCode == http.StatusOK {
			res = b.signIn(p.base, res.body, testEmail, testPassword)
		}
		code, _ := codeFrom(t, res, redirect)
		tk := p.tokenRequest(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}, "client_id": {client}, "code_verifier": {verifier}})
		if tk.status != http.StatusOK {
			t.Fatalf("%s: %d %s", client, tk.status, tk.Error)
		}
		return tk
	}
	with, without := get("app"), get("app2")
	if g := fmt.Sprint(claimsOf(t, with.AccessToken)["groups"]); g != "[ops]" {
		t.Errorf("app's access token groups: %s", g)
	}
	if g, ok := claimsOf(t, without.AccessToken)["groups"]; ok {
		t.Errorf("app2's access token has groups %v", g)
	}
	if g := fmt.Sprint(claimsOf(t, without.IDToken)["groups"]); g != "[ops]" {
		t.Errorf("app2's ID token groups: %s", g)
	}
	if _, _, err := p.svc.Users().AddGroups(context.Background(), testEmail, []string{"dev"}); err != nil {
		t.Fatal(err)
	}
	r := p.tokenRequest(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {with.RefreshToken}, "client_id": {"app"}})
	if g := fmt.Sprint(claimsOf(t, r.AccessToken)["groups"]); r.status != http.StatusOK || g != "[dev ops]" {
		t.Errorf("after a refresh: %d, groups %s", r.status, g)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
