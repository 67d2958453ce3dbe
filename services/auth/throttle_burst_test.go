package auth_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/config"
)

// The throttle reserves an attempt before the password is hashed: 200 parallel wrong passwords for one
// account, spread over three replicas sharing one Redis, get no more password checks than the account's
// limit, with delays or without (a delay is set when a failure is settled: guesses in flight together
// are bounded by the limit), and every one of them is answered 401 or 429.
func TestSignIn_ParallelWrongPasswordsOverThreeReplicas_NoMoreChecksThanTheLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("a burst over three replicas: not run under -short (make test-fast)")
	}
	// Without delays exactly the limit is checked. With them, as many as were in flight before the third
	// failure was settled (at least three, at most the limit): which, the burst's timing decides.
	t.Run("no delays", func(t *testing.T) { parallelWrongPasswords(t, 10, 10, 10) })
	t.Run("delays after 3 failures", func(t *testing.T) { parallelWrongPasswords(t, 3, 3, 10) })
}

func parallelWrongPasswords(t *testing.T, delayAfter, atLeast, atMost int) {
	const limit, attempts = 10, 200
	// The replicas' clock stands still: the burst's outcome must not depend on how long it takes (a
	// delay's second passing mid-burst would let one more attempt through, rightly).
	frozen := time.Now()
	srv := testredis.Start(t)
	var replicas []*provider
	for i := 0; i < 3; i++ {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 64})
		t.Cleanup(func() { rdb.Close() })
		replicas = append(replicas, startProvider(t, setup{rdb: rdb, now: func() time.Time { return frozen }, mutate: func(c *config.Config) {
			c.Auth.Throttle = config.Throttle{AccountFailures: limit, IPFailures: 100000, Window: config.Duration(time.Minute), DelayAfter: delayAfter}
			c.Auth.PasswordHash.Concurrency = 4
		}}))
	}
	replicas[0].user(testEmail, testPassword)
	type form struct {
		b    *browser
		page string
		p    *provider
	}
	var pages []form
	for _, p := range replicas {
		b := newBrowser(t)
		res := b.get(p.authorizeURL("state-burst-0123", oauth2.GenerateVerifier()))
		if res.StatusCode != http.StatusOK {
			t.Fatalf("sign-in page: %d", res.StatusCode)
		}
		pages = append(pages, form{b, res.body, p})
	}
	before := uint64(0)
	for _, p := range replicas {
		before += p.svc.Users().Hasher().Checks()
	}

	statuses := make(chan int, attempts)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < attempts; i++ {
		f := pages[i%len(pages)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			statuses <- f.b.signIn(f.p.base, f.page, testEmail, "wrong password guess").StatusCode
		}()
	}
	close(start)
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for st := range statuses {
		count[st]++
	}
	checks := uint64(0)
	for _, p := range replicas {
		checks += p.svc.Users().Hasher().Checks()
	}
	checks -= before
	t.Logf("answers %v, password checks %d", count, checks)
	if count[http.StatusUnauthorized]+count[http.StatusTooManyRequests] != attempts {
		t.Fatalf("answers %v: want only 401 and 429", count)
	}
	if checks < uint64(atLeast) || checks > uint64(atMost) {
		t.Fatalf("%d password checks for %d parallel wrong passwords, want %d to %d", checks, attempts, atLeast, atMost)
	}
	// A check that uses the budget up answers 429, the others 401.
	want := int(checks)
	if want == limit {
		want--
	}
	if count[http.StatusUnauthorized] != want {
		t.Fatalf("%d wrong-password answers for %d checks, want %d", count[http.StatusUnauthorized], checks, want)
	}
}
