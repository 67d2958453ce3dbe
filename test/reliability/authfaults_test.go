package reliability

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"

	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testredis"
)

// TestAuthFaults_RedisRestartedBetweenSteps_UsedCodeRevokedFamilyWrongVerifierStayRefused walks the
// security-relevant transitions of the token endpoint with a SIGKILL and restart of Redis (append-only,
// fsync always) between every two steps: a wrong verifier gets nothing, a used code gets nothing and
// revokes what it issued, a reused refresh token revokes its family, a revoked family stays revoked, and
// a live refresh token keeps working across the restarts.
func TestAuthFaults_RedisRestartedBetweenSteps_UsedCodeRevokedFamilyWrongVerifierStayRefused(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{AppendOnly: true, Unix: true})
	a := startAuth(t, redisURLSection(rs.URL()))
	restart := func() {
		rs.Kill()
		rs.Restart()
	}

	t.Run("wrong verifier, then the code twice", func(t *testing.T) {
		v := oauth2.GenerateVerifier()
		code, err := a.code(newBrowser(), v)
		if err != nil {
			t.Fatal(err)
		}
		restart()
		if tk := a.exchange(code, oauth2.GenerateVerifier()); tk.status != 400 || tk.AccessToken != "" {
			t.Fatalf("wrong verifier: %d %q, want 400 and no token", tk.status, tk.Error)
		}
		restart()
		first := a.exchange(code, v)
		switch {
		case first.status == 200:
		case first.status == 400 && first.Error == "invalid_grant":
			// The code is burned by a wrong verifier (its challenge is checked once): safe too; issuing is
			// what must not happen twice.
			t.Logf("the right verifier after a wrong one: %d %s", first.status, first.Error)
		default:
			t.Fatalf("the right verifier after a wrong one and a restart: %d %s, want 200 or 400 invalid_grant", first.status, first.Error)
		}
		restart()
		if tk := a.exchange(code, v); tk.status != 400 || tk.AccessToken != "" {
			t.Fatalf("replayed code: %d %q, want 400 and no token", tk.status, tk.Error)
		}
		restart()
		if first.status == 200 {
			if st := a.userinfo(first.AccessToken); st != 401 {
				t.Errorf("access token of a replayed code: userinfo %d, want 401 (revoked)", st)
			}
			if tk := a.refresh(first.RefreshToken); tk.status != 400 {
				t.Errorf("refresh token of a replayed code: %d, want 400 (revoked)", tk.status)
			}
		}
	})

	t.Run("refresh reuse revokes the family across restarts", func(t *testing.T) {
		r0 := a.signedIn(t)
		restart()
		r1 := a.refresh(r0.RefreshToken)
		if r1.status != 200 {
			t.Fatalf("refresh after a Redis restart: %d %s (a live grant must survive it)", r1.status, r1.Error)
		}
		restart()
		if tk := a.refresh(r0.RefreshToken); tk.status != 400 || tk.AccessToken != "" {
			t.Fatalf("reused refresh token: %d, want 400 and no token", tk.status)
		}
		restart()
		if tk := a.refresh(r1.RefreshToken); tk.status != 400 {
			t.Errorf("newest refresh token of a family whose older token was reused: %d, want 400", tk.status)
		}
		if st := a.userinfo(r1.AccessToken); st != 401 {
			t.Errorf("access token of the revoked family: userinfo %d, want 401", st)
		}
	})

	t.Run("revoked family stays revoked", func(t *testing.T) {
		tk := a.signedIn(t)
		if st := a.revoke(tk.RefreshToken); st != 200 {
			t.Fatalf("revoke: %d", st)
		}
		restart()
		if r := a.refresh(tk.RefreshToken); r.status != 400 {
			t.Errorf("refresh with a revoked token after a restart: %d, want 400", r.status)
		}
		if st := a.userinfo(tk.AccessToken); st != 401 {
			t.Errorf("access token of a revoked grant after a restart: userinfo %d, want 401", st)
		}
	})
}

// tokenEvent is one presentation of a credential at the token endpoint.
type tokenEvent struct {
	credential string // "code:<code>" or "refresh:<token>"
	family     int
	wrongPKCE  bool
	reuse      bool // a credential presented before (replayed code, rotated refresh token)
	ans        tokenAnswer
	at         time.Time
}

// TestAuthFaults_RedisKilledDuringFlows_NoTokenForUsedCodeRevokedFamilyOrWrongVerifier runs sign-ins,
// exchanges, refresh chains, replays, reuses and wrong verifiers from several clients at once while Redis
// is SIGKILLed and restarted 4 times, each time once the flows have had tokens since the last restart,
// and held down until a request has failed on it, so that deaths land inside requests. Whatever the timing:
// no credential yields tokens twice, a wrong verifier never yields tokens, a family in which a reuse was
// detected yields nothing afterwards, no answer is a 500, and the service recovers without restart.
func TestAuthFaults_RedisKilledDuringFlows_NoTokenForUsedCodeRevokedFamilyOrWrongVerifier(t *testing.T) {
	const (
		workers = 6
		kills   = 4
	)
	rs := testredis.Start(t, testredis.Options{AppendOnly: true, Unix: true})
	a := startAuth(t, redisURLSection(rs.URL()))

	var (
		mu       sync.Mutex
		events   []tokenEvent
		families atomic.Int64
		stop     atomic.Bool
		wg       sync.WaitGroup
		pageErrs atomic.Int64
		latest   = map[int]tokenAnswer{} // family -> newest tokens it was issued
	)
	present := func(ev tokenEvent) tokenAnswer {
		ev.at = time.Now()
		mu.Lock()
		defer mu.Unlock()
		if ev.ans.status == 200 {
			latest[ev.family] = ev.ans
		}
		events = append(events, ev)
		return ev.ans
	}
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for !stop.Load() {
				v := oauth2.GenerateVerifier()
				code, err := a.code(newBrowser(), v)
				if err != nil {
					pageErrs.Add(1)
					var se *stepError
					if errors.As(err, &se) && se.status != 503 {
						t.Errorf("%s answered %d while Redis was failing (want 503)", se.step, se.status)
					} else if se == nil {
						t.Errorf("sign-in: %v", err)
					}
					time.Sleep(50 * time.Millisecond) // a client's pause before it tries again
					continue
				}
				fam := int(families.Add(1))
				if rng.IntN(4) == 0 {
					present(tokenEvent{credential: "code:" + code, family: fam, wrongPKCE: true,
						ans: a.exchange(code, oauth2.GenerateVerifier())})
				}
				tk := present(tokenEvent{credential: "code:" + code, family: fam, ans: a.exchange(code, v)})
				if rng.IntN(3) == 0 {
					present(tokenEvent{credential: "code:" + code, family: fam, reuse: true, ans: a.exchange(code, v)})
				}
				if tk.status != 200 {
					continue
				}
				prev, cur := "", tk.RefreshToken
				for step := 0; step < 4 && !stop.Load(); step++ {
					if prev != "" && rng.IntN(5) == 0 {
						present(tokenEvent{credential: "refresh:" + prev, family: fam, reuse: true, ans: a.refresh(prev)})
					}
					r := present(tokenEvent{credential: "refresh:" + cur, family: fam, ans: a.refresh(cur)})
					if r.status != 200 {
						break
					}
					prev, cur = cur, r.RefreshToken
				}
			}
		})
	}
	// A t.Fatal below (a restart that fails) must not leave the workers logging after the test ended.
	t.Cleanup(func() { stop.Store(true); wg.Wait() })
	// issuedSoFar counts token answers 200; failedSoFar the requests Redis's absence failed; reuseSeen
	// whether a replay or reuse has been refused yet.
	tally := func() (issuedSoFar, failedSoFar int, reuseSeen bool) {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range events {
			switch {
			case ev.ans.status == 200:
				issuedSoFar++
			case ev.ans.status == 503:
				failedSoFar++
			case ev.reuse && ev.ans.status == 400 && ev.ans.Error == "invalid_grant":
				reuseSeen = true
			}
		}
		return issuedSoFar, failedSoFar + int(pageErrs.Load()), reuseSeen
	}
	for i := range kills {
		from, _, _ := tally()
		testwait.For(t, 30*time.Second, fmt.Sprintf("5 tokens issued before kill %d", i+1), func() bool { n, _, _ := tally(); return n >= from+5 })
		_, failedBefore, _ := tally()
		rs.Kill()
		testwait.For(t, 30*time.Second, "a request failed while Redis was dead", func() bool { _, f, _ := tally(); return f > failedBefore })
		rs.Restart()
	}
	from, _, _ := tally()
	testwait.For(t, 60*time.Second, "flows recovered after the last restart (10 tokens) and a reuse refused", func() bool {
		n, _, reused := tally()
		return n >= from+10 && reused
	})
	stop.Store(true)
	wg.Wait()

	// The service recovered by itself: a whole flow works.
	testwait.Until(t, 10*time.Second, "a whole flow after the last Redis restart", func() error {
		v := oauth2.GenerateVerifier()
		code, err := a.code(newBrowser(), v)
		if err != nil {
			return err
		}
		if tk := a.exchange(code, v); tk.status != 200 {
			return fmt.Errorf("exchange: %d %s", tk.status, tk.Error)
		}
		return nil
	})

	issued := map[string]int{}      // credential -> 200 answers
	detected := map[int]time.Time{} // family -> first time a reuse was refused as invalid_grant
	statuses := map[string]int{}
	for _, ev := range events {
		a := ev.ans
		label := fmt.Sprint(a.status)
		if a.err != nil {
			label = "transport error"
			t.Errorf("%s: %v", ev.credential[:5], a.err)
		}
		statuses[label]++
		switch a.status {
		case 200, 400, 503:
		default:
			t.Errorf("token endpoint answered %d %s (want 200, 400 or 503)", a.status, a.Error)
		}
		if a.status == 200 {
			issued[ev.credential]++
			if ev.wrongPKCE {
				t.Errorf("a wrong code_verifier got tokens (family %d)", ev.family)
			}
		}
		if ev.reuse && a.status == 400 && a.Error == "invalid_grant" {
			if _, ok := detected[ev.family]; !ok {
				detected[ev.family] = ev.at
			}
		}
	}
	for cred, n := range issued {
		if n > 1 {
			t.Errorf("%s... yielded tokens %d times", cred[:12], n)
		}
	}
	// A family in which a reuse was detected: its newest tokens are dead now, whatever happened after.
	revokedChecked := 0
	for fam := range detected {
		tk, ok := latest[fam]
		if !ok {
			continue
		}
		revokedChecked++
		if r := a.refresh(tk.RefreshToken); r.status == 200 {
			t.Errorf("family %d: a reuse was detected, yet its newest refresh token still works", fam)
		}
		if st := a.userinfo(tk.AccessToken); st == 200 {
			t.Errorf("family %d: a reuse was detected, yet its newest access token still opens userinfo", fam)
		}
	}
	reuses, wrong := 0, 0
	for _, ev := range events {
		if ev.reuse {
			reuses++
		}
		if ev.wrongPKCE {
			wrong++
		}
	}
	t.Logf("%d families, %d token requests (%d replays/reuses, %d wrong verifiers) over %d SIGKILL/restarts of Redis; answers %s; authorize/sign-in failures during outages: %d",
		families.Load(), len(events), reuses, wrong, kills, sortedCounts(statuses), pageErrs.Load())
	t.Logf("credentials that yielded tokens: %d (none twice); families with a detected reuse: %d, all %d checked are revoked",
		len(issued), len(detected), revokedChecked)
	if len(detected) == 0 || len(issued) < 20 {
		t.Errorf("too little happened to prove anything: %d detections, %d issued", len(detected), len(issued))
	}
}
