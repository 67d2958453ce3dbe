package auth_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/users"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Sign-up cannot be farmed: 100 parallel sign-ups from one client address create exactly the address's
// budget of accounts, and 100 parallel sign-ups of one e-mail address from 100 client addresses reach the
// store (and its owner's inbox) exactly the e-mail address's budget of times; the rest are 429 with
// Retry-After. Each sign-up is reserved before anything is created (it once created 120 accounts from one
// address in 4 s, and raced its own limit: 53 answers past a limit of 50).
func TestSignup_100ParallelProbes_NoMoreThanTheBudgets(t *testing.T) {
	p := startProvider(t, setup{mutate: func(c *config.Config) {
		c.Auth.SelfSignup = true
		c.TrustedProxies = []string{"127.0.0.1"}
		c.Auth.Throttle.SignupsPerIP, c.Auth.Throttle.SignupsPerAddress = 10, 3
		c.Auth.RateLimit = config.AuthRateLimit{PerIP: 1 << 20, PerUser: 1 << 20}
	}})
	b := newBrowser(t)
	t.Cleanup(b.c.CloseIdleConnections) // before the provider stops: its shutdown waits for open connections
	page := b.get(p.authorizeURL("state-farm", oauth2.GenerateVerifier()))
	form := forms(t, p.base, page.body)[2]
	probe := func(email, addr func(i int) string) map[int]int {
		answers := map[int]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f := pageForm{action: form.action, fields: map[string][]string{}}
				for k, v := range form.fields {
					f.fields[k] = v
				}
				f.fields.Set("email", email(i))
				f.fields.Set("password", "a farmed password")
				res := b.postForm(f.action, f.fields, "X-Forwarded-For", addr(i))
				if res.StatusCode == http.StatusTooManyRequests && res.Header.Get("Retry-After") == "" {
					t.Error("429 without Retry-After")
				}
				mu.Lock()
				answers[res.StatusCode]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		return answers
	}
	countUsers := func() int {
		n := 0
		if err := p.svc.Users().List(t.Context(), func(*users.User) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}

	answers := probe(func(i int) string { return fmt.Sprintf("farm%d@example.com", i) }, func(int) string { return "203.0.113.50" })
	if answers[http.StatusOK] != 10 || answers[http.StatusTooManyRequests] != 90 || countUsers() != 10 {
		t.Fatalf("one client address: answers %v, %d accounts; want 10 × 200, 90 × 429, 10 accounts", answers, countUsers())
	}

	answers = probe(func(int) string { return "target@example.com" }, func(i int) string { return fmt.Sprintf("198.51.100.%d", i+1) })
	if answers[http.StatusOK] != 3 || answers[http.StatusTooManyRequests] != 97 || countUsers() != 11 {
		t.Fatalf("one e-mail address: answers %v, %d accounts; want 3 × 200, 97 × 429, one more account", answers, countUsers())
	}
	ctx := t.Context()
	if err := p.svc.Audit().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	evs, err := audit.NewStore(p.rdb, nil).Query(ctx, audit.Filter{Kinds: []audit.Kind{audit.SignUp}})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, e := range evs {
		reasons[string(e.Outcome)+" "+e.Reason]++
	}
	// One account created for the target address (11 in all); the two "taken" answers and the 187
	// throttled ones name no account: counted, not stored (D52).
	if reasons["success "] != 11 || len(reasons) != 1 || auditCounted(t, p, audit.SignUp, audit.Failure) != 189 {
		t.Fatalf("sign-up events by outcome and reason: %v, failures counted %d", reasons, auditCounted(t, p, audit.SignUp, audit.Failure))
	}
}
