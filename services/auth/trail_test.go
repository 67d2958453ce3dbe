package auth_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/platform/config"
)

// A trail nobody can flush (D52): 200,000 requests anyone can send — forms without their CSRF token,
// introspection without credentials, malformed addresses, wrong passwords for the account — against a
// trail capped at 100,000 entries (the default) leave a chosen security event (the owner's sign-in) in
// place, and the security events' chain intact. The request rate limits are off, so that the trail holds
// on its own. Under -short and -race: 4,000 requests against a cap of 2,000.
func TestAuditTrail_200000UnauthenticatedRequestsLeaveASecurityEventInPlace(t *testing.T) {
	n, maxEntries := 200_000, int64(100_000)
	if testing.Short() || raceEnabled {
		n, maxEntries = 4_000, 2_000
	}
	p := startProvider(t, setup{mutate: func(c *config.Config) {
		c.Auth.RateLimit = config.AuthRateLimit{PerIP: 1 << 30, PerUser: 1 << 30}
		c.Auth.Audit.MaxEntries = maxEntries
	}})
	owner := p.user(testEmail, testPassword)
	p.fullSignIn(testEmail, testPassword) // the security event to keep
	ctx := context.Background()
	if err := p.svc.Audit().Flush(ctx); err != nil {
		t.Fatal(err)
	}

	signIn := formTo(t, p.base, newBrowser(t).get(p.authorizeURL("state-flood-0123", oauth2.GenerateVerifier())).body, "/oauth2/authorize")
	requests := []func(i int) (*http.Request, int){
		func(int) (*http.Request, int) { // no CSRF token
			return form(p.base+"/account/forgot", url.Values{"email": {testEmail}}), http.StatusForbidden
		},
		func(int) (*http.Request, int) { // a resource server without credentials
			return form(p.base+"/oauth2/introspect", url.Values{"token": {"x"}}), http.StatusUnauthorized
		},
		func(int) (*http.Request, int) { // the sign-in form without its CSRF cookie
			return form(signIn.action, url.Values{"email": {testEmail}, "password": {"guess"}}), http.StatusForbidden
		},
	}
	var next, bad atomic.Int64
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				req, want := requests[i%len(requests)](i)
				res, err := client.Do(req)
				if err != nil {
					bad.Add(1)
					continue
				}
				res.Body.Close()
				if res.StatusCode != want {
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if bad.Load() > 0 {
		t.Fatalf("%d of %d requests were not answered as expected", bad.Load(), n)
	}
	// Wrong passwords for the account (the throttle answers most): the attempts stream takes them.
	b := newBrowser(t)
	page := b.get(p.authorizeURL("state-flood-0124", oauth2.GenerateVerifier()))
	for i := range 30 {
		page = b.signIn(p.base, page.body, testEmail, fmt.Sprint("guess ", i))
	}
	if err := p.svc.Audit().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	kept, err := audit.NewStore(p.rdb, nil).Query(ctx, audit.Filter{User: owner, Kinds: []audit.Kind{audit.SignIn}})
	if err != nil {
		t.Fatal(err)
	}
	var signedIn, refused int
	for _, e := range kept {
		switch e.Outcome {
		case audit.Success:
			signedIn++
		case audit.Failure:
			refused++
		}
	}
	if signedIn != 1 || refused == 0 {
		t.Fatalf("after %d requests: %d sign-ins and %d refused ones of the owner in the trail, want the sign-in and the refusals", n, signedIn, refused)
	}
	if l := p.rdb.XLen(ctx, audit.StreamKey).Val(); l > 10 {
		t.Fatalf("the security stream holds %d entries: unauthenticated requests reached it", l)
	}
	var k audit.ChainKeys
	if k.Current, k.Others, err = p.keys.Secrets(audit.ChainPurpose); err != nil {
		t.Fatal(err)
	}
	if v, err := audit.NewStore(p.rdb, nil).Verify(ctx, k); err != nil || !v.Intact() || v.Chained == 0 {
		t.Fatalf("the chain: %+v %v", v, err)
	}
}

func form(u string, v url.Values) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req
}
