package auth_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/keys"
	"github.com/formsservice/formsservice/services/platform/config"
)

// logicalClock is the replicas' shared clock: the test moves it one second per sign-in of the real user.
type logicalClock struct{ ms atomic.Int64 }

func (c *logicalClock) now() time.Time { return time.UnixMilli(c.ms.Load()) }

// TestLockout_5000GuessesFrom500Addresses_KnownBrowserNeverRefused is issue 22's proof of the lockout
// model (docs/architecture.md D19): 5,000 wrong passwords for one account from 500 client addresses, in
// parallel over three replicas sharing one redis-server, while the account's owner signs in from the
// browser they signed in with before, once per (logical) second, on a rotating replica. The owner is
// never refused; the attack gets no more password checks than the budget of the account's unknown
// browsers (the delays pace one guesser; guesses sent together meet the budget's limit); and an unknown
// browser of the owner is refused, as the model says. Time is the replicas' logical clock: one second per 25 guesses (the attack is 25 guesses a
// second for 200 seconds), the owner signing in at each.
func TestLockout_5000GuessesFrom500Addresses_KnownBrowserNeverRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("5,000 guesses: not run under -short (make test-fast)")
	}
	const addresses, perAddress = 500, 10
	clock := &logicalClock{}
	clock.ms.Store(time.Now().UnixMilli())
	srv := testredis.Start(t)
	ks, err := keys.Generate() // one signing key, as the replicas of a Deployment share one Secret
	if err != nil {
		t.Fatal(err)
	}
	var replicas []*provider
	for range 3 {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 64})
		t.Cleanup(func() { rdb.Close() })
		replicas = append(replicas, startProvider(t, setup{rdb: rdb, keys: ks, now: clock.now, mutate: func(c *config.Config) {
			c.TrustedProxies = []string{"127.0.0.1"} // the test is the ingress: X-Forwarded-For names the client
			c.Auth.PasswordHash.Concurrency = 4
			// The request rate limit (a budget of requests per real minute, not of failures) stays out of
			// the way: the owner's logical seconds pass faster than real ones.
			c.Auth.RateLimit = config.AuthRateLimit{PerIP: 1 << 20, PerUser: 1 << 20}
		}}))
	}
	lim := replicas[0].cfg.Auth.Throttle // the defaults, which docs/security.md states
	replicas[0].user(testEmail, testPassword)
	checks := func() (n uint64) {
		for _, p := range replicas {
			n += p.svc.Users().Hasher().Checks()
		}
		return n
	}

	// The owner's browser signs in once: from then on it is a known browser of the account.
	owner := newBrowser(t)
	ownerSignIn := func(p *provider, step int) response {
		page := owner.get(p.authorizeURL("state-owner-"+strconv.Itoa(step), oauth2.GenerateVerifier(), oauth2.SetAuthURLParam("prompt", "login")))
		if page.StatusCode != http.StatusOK {
			t.Fatalf("owner's page at step %d: %d", step, page.StatusCode)
		}
		f := forms(t, p.base, page.body)[0]
		f.fields.Set("email", testEmail)
		f.fields.Set("password", testPassword)
		return owner.postForm(f.action, f.fields, "X-Forwarded-For", "192.0.2.200")
	}
	if res := ownerSignIn(replicas[0], 0); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the owner's first sign-in: %d", res.StatusCode)
	}

	// The attackers: one browser per address (its own cookies and CSRF token), ten guesses each.
	// IdleConnTimeout well under the server's 10 s ReadTimeout: a connection the transport dialled for a
	// guess that another connection took first waits unused in the pool, and one unused for 10 s is
	// answered 408 by fasthttp, which a later guess on it would read as its answer (ci31 met it once,
	// under -race). Closing idle connections first keeps the answers the provider's own.
	transport := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 5 * time.Second}
	t.Cleanup(transport.CloseIdleConnections)
	type guess struct {
		p      *provider
		c      *http.Client
		action string
		fields url.Values
		addr   string
		n      int
	}
	var guesses []guess
	for i := range addresses {
		p := replicas[i%len(replicas)]
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		addr := fmt.Sprintf("198.51.%d.%d", 100+i/250, i%250+1)
		b := &browser{t: t, c: c}
		page := b.get(p.authorizeURL("state-attack-"+strconv.Itoa(i), oauth2.GenerateVerifier()))
		f := forms(t, p.base, page.body)[0]
		for n := range perAddress {
			// Each guess goes to the next replica: one address's guesses are spread over all three.
			guesses = append(guesses, guess{replicas[(i+n)%len(replicas)], c, f.action, f.fields, addr, n})
		}
	}
	checksBefore := checks()
	answers := map[int]int{}
	var maxRetryAfter atomic.Int64
	// The guesses spread over logical time: every 25 answers, one second passes (the owner's next
	// sign-in), so that the attack is 25 guesses a second for 200 seconds however fast this machine runs:
	// long enough for the delays (1 s doubling to 60 s after the third failure: the tenth comes after
	// about two minutes) to run out and the budget to be used up.
	const perSecond = 25
	tick := make(chan struct{}) // the owner's step: one logical second has passed
	var mu sync.Mutex
	work := make(chan guess)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range work {
				form := url.Values{}
				for k, v := range g.fields {
					form[k] = v
				}
				form.Set("email", testEmail)
				form.Set("password", fmt.Sprintf("guess %s #%d", g.addr, g.n))
				b := &browser{t: t, c: g.c}
				res := b.postForm(g.action, form, "X-Forwarded-For", g.addr)
				if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && int64(ra) > maxRetryAfter.Load() {
					maxRetryAfter.Store(int64(ra))
				}
				mu.Lock()
				answers[res.StatusCode]++
				mu.Unlock()
			}
		}()
	}
	attackDone := make(chan struct{})
	start := time.Now()
	go func() {
		for i, g := range guesses {
			if i > 0 && i%perSecond == 0 {
				<-tick
			}
			work <- g
		}
		close(work)
		wg.Wait()
		close(attackDone)
	}()

	// The owner signs in once per logical second, during the whole attack and a few seconds after it.
	var refusals []string
	steps, after, ownerChecks := 0, 0, uint64(1)
	for done := false; after < 5; {
		if !done { // the next second starts when the attack has sent this one's guesses
			select {
			case tick <- struct{}{}:
			case <-attackDone:
				done = true
			}
		}
		if done {
			after++ // and five more seconds after the attack
		}
		steps++
		clock.ms.Add(time.Second.Milliseconds())
		p := replicas[steps%len(replicas)]
		res := ownerSignIn(p, steps)
		if res.StatusCode != http.StatusTooManyRequests {
			ownerChecks++ // the password was checked
		}
		if res.StatusCode != http.StatusSeeOther {
			refusals = append(refusals, fmt.Sprintf("step %d: %d %s", steps, res.StatusCode, res.Header.Get("Retry-After")))
		}
	}
	attackTime := time.Since(start)
	attackChecks := checks() - checksBefore - (ownerChecks - 1)

	// A browser the owner never signed in with is an unknown browser: the attack has used its budget up.
	stranger := newBrowser(t)
	page := stranger.get(replicas[0].authorizeURL("state-stranger", oauth2.GenerateVerifier()))
	strangerRes := stranger.signIn(replicas[0].base, page.body, testEmail, testPassword)

	var throttled, locked, lockouts int
	var evs []audit.Event
	for _, p := range replicas {
		if err := p.svc.Audit().Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	evs, err = audit.NewStore(replicas[0].rdb, nil).Query(context.Background(), audit.Filter{Kinds: []audit.Kind{audit.SignIn, audit.Lockout}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Kind == audit.Lockout {
			lockouts++
		}
	}
	// A throttled guess names no account (it is refused before the lookup): counted, not stored (D52).
	var failures int
	for _, p := range replicas {
		failures += auditCounted(t, p, audit.SignIn, audit.Failure)
	}
	throttled = failures - answers[http.StatusUnauthorized]
	locked = answers[http.StatusTooManyRequests]
	t.Logf("attack: %d guesses from %d addresses over %d replicas in %s: answers %v, %d password checks, Retry-After up to %d s; "+
		"audit: %d throttled (%d answered 429), %d lockouts", len(guesses), addresses, len(replicas), attackTime.Round(time.Millisecond),
		answers, attackChecks, maxRetryAfter.Load(), throttled, locked, lockouts)
	t.Logf("owner: %d sign-ins from the known browser, one per logical second, %d refused; an unknown browser of the owner: %d",
		steps+1, len(refusals), strangerRes.StatusCode)

	if len(refusals) > 0 {
		t.Fatalf("the owner's known browser was refused %d times: %v", len(refusals), refusals)
	}
	if answers[http.StatusUnauthorized]+answers[http.StatusTooManyRequests] != len(guesses) {
		t.Fatalf("attack answers %v: want only 401 and 429", answers)
	}
	if attackChecks > uint64(lim.AccountFailures) {
		t.Fatalf("the attack got %d password checks; the budget of the account's unknown browsers is %d", attackChecks, lim.AccountFailures)
	}
	// Parallel guesses in flight together are bounded by the budget alone (a delay is set when a failure
	// is settled): the attack uses the budget up at once, and is locked out from then on.
	if lockouts != 1 || locked == 0 {
		t.Fatalf("the attack used the budget up %d times and was refused as locked %d times; want once, and then every time", lockouts, locked)
	}
	if strangerRes.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("an unknown browser during the lockout: %d, want 429", strangerRes.StatusCode)
	}
}

// Failures slow down before they stop: after the third failure each answer carries a Retry-After that
// doubles, an attempt before it is over gets 429 without a password check, and the tenth failure uses
// the budget up. A success gives the browser an HttpOnly device cookie.
func TestSignIn_FailuresSlowDown_RetryAfterGrows(t *testing.T) {
	clock := &logicalClock{}
	clock.ms.Store(time.Now().UnixMilli())
	p := startProvider(t, setup{now: clock.now})
	p.user(testEmail, testPassword)
	b := newBrowser(t)
	page := b.get(p.authorizeURL("state-slow", oauth2.GenerateVerifier()))
	var retryAfter []string
	for i := range 10 {
		res := b.signIn(p.base, page.body, testEmail, fmt.Sprint("wrong password ", i))
		retryAfter = append(retryAfter, res.Header.Get("Retry-After"))
		want := http.StatusUnauthorized
		if i == 9 {
			want = http.StatusTooManyRequests // the tenth failure uses the budget up
		}
		if res.StatusCode != want {
			t.Fatalf("failure %d: %d, want %d", i+1, res.StatusCode, want)
		}
		if ra := res.Header.Get("Retry-After"); ra != "" {
			checks := p.svc.Users().Hasher().Checks()
			early := b.signIn(p.base, page.body, testEmail, testPassword)
			if early.StatusCode != http.StatusTooManyRequests || early.Header.Get("Retry-After") != ra || p.svc.Users().Hasher().Checks() != checks {
				t.Fatalf("an attempt before the wait is over: %d Retry-After %q, want 429 after %s s and no password check", early.StatusCode, early.Header.Get("Retry-After"), ra)
			}
			n, _ := strconv.Atoi(ra)
			clock.ms.Add(int64(n) * 1000)
		}
	}
	// The waits add up to 123 s, so the window of 15 min has 777 s left after the tenth failure.
	if got := fmt.Sprint(retryAfter); got != "[  1 2 4 8 16 32 60 777]" {
		t.Fatalf("Retry-After of the ten failures: %v, want none twice, 1 2 4 8 16 32 60, then the rest of the window (777)", retryAfter)
	}

	// Another browser signs in successfully once the window is over and is given a device cookie.
	clock.ms.Add(15 * time.Minute.Milliseconds())
	other := newBrowser(t)
	page = other.get(p.authorizeURL("state-slow-2", oauth2.GenerateVerifier()))
	res := other.signIn(p.base, page.body, testEmail, testPassword)
	var device *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "fs_device" {
			device = c
		}
	}
	if res.StatusCode != http.StatusSeeOther || device == nil || !device.HttpOnly || device.MaxAge != int((180*24*time.Hour).Seconds()) || device.SameSite != http.SameSiteLaxMode {
		t.Fatalf("after the window: %d, device cookie %+v", res.StatusCode, device)
	}
}
