package auth_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// TestConcurrency_ManyRefreshesAndSignInsAtOnce runs sign-ins and refresh chains of many users at the
// same time, plus a crowd racing one refresh token, against one real redis-server. The atomic steps are
// single Lua scripts that never call back into the store, so nothing can deadlock; a watchdog fails the
// test instead of hanging if something does.
func TestConcurrency_ManyRefreshesAndSignInsAtOnce(t *testing.T) {
	p := startProvider(t, setup{})
	const usersN, refreshes = 16, 8
	for i := range usersN {
		p.user(fmt.Sprintf("user%d@example.com", i), testPassword)
	}
	done := make(chan struct{})
	var failures atomic.Int64
	var wg sync.WaitGroup

	wg.Add(usersN)
	for i := range usersN {
		go func() {
			defer wg.Done()
			email := fmt.Sprintf("user%d@example.com", i)
			for round := range 2 { // two sign-ins per user, in parallel with everyone else's refreshes
				b := newBrowser(t)
				verifier := oauth2.GenerateVerifier()
				page := b.get(p.authorizeURL(fmt.Sprintf("state-%d-%d-x", i, round), verifier))
				res := b.signIn(p.base, page.body, email, testPassword)
				if res.StatusCode != http.StatusSeeOther {
					failures.Add(1)
					t.Errorf("%s sign-in: %d %s", email, res.StatusCode, res.body)
					return
				}
				code, _ := codeFrom(t, res, p.redirect)
				tk := p.exchange(code, verifier)
				for r := 0; r < refreshes && tk.status == http.StatusOK; r++ {
					tk = p.refresh(tk.RefreshToken)
				}
				if tk.status != http.StatusOK {
					failures.Add(1)
					t.Errorf("%s refresh chain: %d %s", email, tk.status, tk.Error)
				}
			}
		}()
	}

	// A crowd presents the same refresh token at once: at most one wins; the others are reuse, so the
	// whole family ends up revoked and the winner's tokens are dead too.
	p.user("crowd@example.com", testPassword)
	shared, _ := p.fullSignIn("crowd@example.com", testPassword)
	const crowd = 12
	results := make([]tokens, crowd)
	wg.Add(crowd)
	start := make(chan struct{})
	for i := range crowd {
		go func() {
			defer wg.Done()
			<-start
			results[i] = p.refresh(shared.RefreshToken)
		}()
	}
	close(start)
	go func() { wg.Wait(); close(done) }() // after every Add

	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("concurrent sign-ins and refreshes did not finish within 2 minutes (deadlock?)")
	}
	if failures.Load() > 0 {
		t.Fatalf("%d users failed", failures.Load())
	}
	wins := 0
	for _, r := range results {
		switch r.status {
		case http.StatusOK:
			wins++
			if st := p.userinfoStatus(r.AccessToken); st != http.StatusUnauthorized {
				t.Errorf("the winner's access token survived the reuse: %d", st)
			}
		case http.StatusBadRequest:
		default:
			t.Errorf("racing refresh: %d %s", r.status, r.Error)
		}
	}
	if wins > 1 {
		t.Fatalf("%d concurrent refreshes of one token succeeded, want at most 1", wins)
	}
	family := familyOf(t, shared.RefreshToken)
	if revoked, err := p.svc.Store().FamilyRevoked(context.Background(), family); err != nil || !revoked {
		t.Fatalf("family revoked after the race: %v %v", revoked, err)
	}
}

func TestToken_ConcurrentCodeExchange_AtMostOneWins(t *testing.T) {
	p := startProvider(t, setup{})
	p.user(testEmail, testPassword)
	verifier := oauth2.GenerateVerifier()
	code := p.signInAndGetCode(newBrowser(t), testEmail, testPassword, verifier)
	const n = 10
	results := make([]tokens, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); <-start; results[i] = p.exchange(code, verifier) }()
	}
	close(start)
	wg.Wait()
	wins := 0
	for _, r := range results {
		switch r.status {
		case http.StatusOK:
			wins++
		case http.StatusBadRequest:
			if r.Error != "invalid_grant" {
				t.Errorf("losing exchange: %s", r.Error)
			}
		default:
			t.Errorf("exchange: %d %s", r.status, r.Error)
		}
	}
	if wins > 1 {
		t.Fatalf("%d exchanges of one code succeeded", wins)
	}
	// Every loser was a replay: whatever the winner got is revoked.
	for _, r := range results {
		if r.status == http.StatusOK {
			if st := p.userinfoStatus(r.AccessToken); st != http.StatusUnauthorized {
				t.Fatalf("the winner's token survived the replay: %d", st)
			}
		}
	}
}
