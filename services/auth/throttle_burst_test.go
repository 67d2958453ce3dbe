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
// limit (without delays), or than the failures before the first delay (with them), and every one of
// them is answered 401 or 429.
func TestSignIn_ParallelWrongPasswordsOverThreeReplicas_NoMoreChecksThanTheLimit(t *testing.T) {
	t.Run("no delays", func(t *testing.T) { parallelWrongPasswords(t, 10, 10) })
	t.Run("delays after 3 failures", func(t *testing.T) { parallelWrongPasswords(t, 3, 3) })
}

func parallelWrongPasswords(t *testing.T, delayAfter, checksWanted int) {
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
	if checks != uint64(checksWanted) {
		t.Fatalf("%d password checks for %d parallel wrong passwords, want %d", checks, attempts, checksWanted)
	}
	// A check that uses the budget up answers 429, the others 401.
	want := checksWanted
	if checksWanted == limit {
		want--
	}
	if count[http.StatusUnauthorized] != want {
		t.Fatalf("%d wrong-password answers, want %d", count[http.StatusUnauthorized], want)
	}
}
