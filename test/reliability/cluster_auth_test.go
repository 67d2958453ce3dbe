package reliability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"

	"github.com/redis/go-redis/v9"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/auth/store"
)

// replicationLag bounds how long before the kill a write acknowledged by the old master may be missing
// from its replica. Loopback replication takes well under a millisecond; a credential issued earlier than
// this and gone after the failover is a lost grant, not Redis's asynchronous replication.
const replicationLag = time.Second

// authEvent is one request of the auth load: a sign-in (authorize page and form), or one presentation
// of a credential at the token or userinfo endpoint.
type authEvent struct {
	kind    string    // sign-in, exchange, refresh, userinfo
	cred    string    // "code:…", "refresh:…" or "access:…"; "" for a sign-in
	issued  time.Time // when the request that issued cred started
	started time.Time
	elapsed time.Duration
	status  int    // -1: transport error or unreadable answer
	oauth   string // the OAuth error code of a token answer
	err     error
}

func (e authEvent) ended() time.Time { return e.started.Add(e.elapsed) }

// healthAnswer is one GET /health.
type healthAnswer struct {
	started     time.Time
	elapsed     time.Duration
	status      int
	contentType string
	body        string // the body's "status": pass, warn or fail
	err         error
}

// TestCluster_MasterKilledUnderLoad_AuthAndHealthAnswer503OnlyWithoutMaster_ThenRecover runs
// `formsservice auth` and `formsservice health` on a Redis Cluster of 3 masters with 1 replica each, all
// on loopback, and SIGKILLs the master that holds the user's record (every sign-in, refresh and userinfo
// reads it) while 4 clients sign in, exchange codes, refresh and call userinfo. The token endpoint
// answers 200, or 503 only between the kill and the replica's promotion (plus the client's reconnect
// slack), never 500, never hangs, and issues no credential's tokens twice; grants signed in before the
// kill, on the killed master or not, keep working afterwards and their reuse detection survives; health
// answers 200 or 503 in its format within its bound, and 200 pass once the cluster is whole again.
func TestCluster_MasterKilledUnderLoad_AuthAndHealthAnswer503OnlyWithoutMaster_ThenRecover(t *testing.T) {
	const (
		workers     = 4
		healthLimit = 5 * time.Second
	)
	cl := testredis.StartCluster(t, 3, 1)
	waitReplicasInSync(t, cl, 30*time.Second)
	a := startAuth(t, redisClusterSection(cl.Addrs()))
	health := startProc(t, "health", fmt.Sprintf("logLevel: warn\nredis:\n%shealth:\n  authURL: %s\n  warnAfter: 2s\n  timeout: %s\n  cacheFor: 500ms\n",
		redisClusterSection(cl.Addrs()), a.Base, healthLimit), nil)
	healthBound := healthLimit + time.Second

	// The victim holds the user's record: sign-in (after the e-mail index), refresh (the identity is
	// re-read) and userinfo all read it, whatever slot their token family is on.
	ctx := context.Background()
	userID, err := cl.Client().Get(ctx, "auth:email:{"+authEmail+"}").Result()
	if err != nil {
		t.Fatalf("the user's e-mail index: %v", err)
	}
	victim, slot := masterOf(t, cl, "auth:user:{"+userID+"}")

	// Grants signed in before the load, some on the victim's slots: each is refreshed once, so that both a
	// live refresh token and a rotated one are in the store when the master dies.
	type sleeper struct {
		r0, r1   tokenAnswer
		onVictim bool
	}
	var sleepers []sleeper
	onVictim, elsewhere := 0, 0
	for onVictim < 2 || elsewhere < 2 {
		if len(sleepers) >= 40 {
			t.Fatalf("no 2 grants on each side of the victim in %d sign-ins", len(sleepers))
		}
		s := sleeper{r0: a.signedIn(t)}
		if s.r1 = a.refresh(s.r0.RefreshToken); s.r1.status != 200 {
			t.Fatalf("refresh before the kill: %d %s %v", s.r1.status, s.r1.Error, s.r1.err)
		}
		family, _, ok := store.Family(s.r1.RefreshToken)
		if !ok {
			t.Fatal("a refresh token without a family prefix")
		}
		if m, _ := masterOf(t, cl, "{"+family+"}"); m == victim {
			s.onVictim = true
			onVictim++
		} else {
			elsewhere++
		}
		sleepers = append(sleepers, s)
	}
	// Everything written so far (the user, the grants above) is on the replicas: what follows is about
	// the failover, not about a set-up whose writes had not been copied yet.
	waitReplicated(t, cl, 10*time.Second)
	t.Logf("the user's slot %d is on master %s; %d grants signed in before the load", slot, victim.Addr(), len(sleepers))

	var (
		mu      sync.Mutex
		events  []authEvent
		answers []healthAnswer
		stop    atomic.Bool
		wg      sync.WaitGroup
	)
	record := func(e authEvent) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}
	// present sends a credential to the token endpoint and, like a client honouring Retry-After, sends
	// it again while the answer is 503. It returns the last answer and when its request started.
	present := func(kind, cred string, issued time.Time, call func() tokenAnswer) (tokenAnswer, time.Time) {
		for {
			start := time.Now()
			tk := call()
			e := authEvent{kind: kind, cred: cred, issued: issued, started: start, elapsed: time.Since(start),
				status: tk.status, oauth: tk.Error, err: tk.err}
			if tk.err != nil {
				e.status = -1
			}
			record(e)
			if e.status != 503 || stop.Load() {
				return tk, start
			}
			time.Sleep(100 * time.Millisecond) // the client's pause before it tries again
		}
	}
	for w := range workers {
		// Half the workers refresh each grant 5 times, half never (they sign in again at once): so that
		// sign-ins, exchanges and refreshes are all under way when the master dies.
		chain := 5 * (w % 2)
		wg.Go(func() {
			for !stop.Load() {
				v := oauth2.GenerateVerifier()
				start := time.Now()
				code, err := a.code(newBrowser(), v)
				e := authEvent{kind: "sign-in", started: start, elapsed: time.Since(start), status: 200, err: err}
				var se *stepError
				if errors.As(err, &se) {
					e.status = se.status
				} else if err != nil {
					e.status = -1
				}
				record(e)
				if err != nil {
					time.Sleep(50 * time.Millisecond) // the client's pause before it tries again
					continue
				}
				tk, issued := present("exchange", "code:"+code, start, func() tokenAnswer { return a.exchange(code, v) })
				for step := 0; tk.status == 200 && tk.err == nil && !stop.Load(); step++ {
					start := time.Now()
					st := a.userinfo(tk.AccessToken)
					record(authEvent{kind: "userinfo", cred: "access:" + tk.AccessToken, issued: issued, started: start, elapsed: time.Since(start), status: st})
					if step == chain {
						break
					}
					rt := tk.RefreshToken
					tk, issued = present("refresh", "refresh:"+rt, issued, func() tokenAnswer { return a.refresh(rt) })
				}
			}
		})
	}
	healthClient := &http.Client{Timeout: 3 * healthBound}
	defer healthClient.CloseIdleConnections()
	getHealth := func() healthAnswer {
		h := healthAnswer{started: time.Now()}
		res, err := healthClient.Get(health.Base + "/health")
		if err != nil {
			h.elapsed, h.status, h.err = time.Since(h.started), -1, err
			return h
		}
		body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<16))
		res.Body.Close()
		h.elapsed, h.status, h.contentType = time.Since(h.started), res.StatusCode, res.Header.Get("Content-Type")
		var doc struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			h.err = fmt.Errorf("body is not JSON: %.200s", body)
		}
		h.body = doc.Status
		return h
	}
	wg.Go(func() {
		for !stop.Load() {
			h := getHealth()
			mu.Lock()
			answers = append(answers, h)
			mu.Unlock()
			time.Sleep(100 * time.Millisecond) // a scraper's interval, shortened
		}
	})

	// A t.Fatal below must not leave the workers running after the test ended.
	t.Cleanup(func() { stop.Store(true); wg.Wait() })
	// issuedSince counts exchanges and refreshes that gave tokens, started at from or later.
	issuedSince := func(from time.Time) (exchanges, refreshes int) {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range events {
			if e.status == 200 && !e.started.Before(from) {
				switch e.kind {
				case "exchange":
					exchanges++
				case "refresh":
					refreshes++
				}
			}
		}
		return exchanges, refreshes
	}
	testwait.For(t, 30*time.Second, "10 exchanges and 10 refreshes before the kill", func() bool {
		e, r := issuedSince(time.Time{})
		return e >= 10 && r >= 10
	})
	killedAt := time.Now()
	victim.Kill()
	promotedAt := waitPromotion(t, cl, victim, slot, 30*time.Second)
	windowEnd := promotedAt.Add(reconnectSlack)
	// Load on the new master: requests started after the window may answer 200 only.
	testwait.For(t, 60*time.Second, "10 exchanges and 10 refreshes after the window without a master, 20 of each in all", func() bool {
		if !time.Now().After(windowEnd) {
			return false
		}
		e, r := issuedSince(windowEnd)
		eAll, rAll := issuedSince(time.Time{})
		return e >= 10 && r >= 10 && eAll >= 20 && rAll >= 20
	})
	stop.Store(true)
	wg.Wait()
	since := func(at time.Time) time.Duration { return at.Sub(killedAt).Round(time.Millisecond) }
	inWindow := func(start, end time.Time) bool { return !end.Before(killedAt) && !start.After(windowEnd) }

	// The token and userinfo endpoints.
	counts := map[string]int{}
	issued := map[string]int{} // credential -> answers that gave tokens for it
	var lastFailure time.Time
	var slowest, oldestLost time.Duration
	lost, failedInWindow := 0, 0
	for _, e := range events {
		bound := storeBound
		if e.kind == "sign-in" {
			bound = 2 * storeBound // two requests
		}
		counts[fmt.Sprintf("%s %d", e.kind, e.status)]++
		slowest = max(slowest, e.elapsed)
		if e.elapsed > bound {
			t.Errorf("%s answered %d after %s (bound %s)", e.kind, e.status, e.elapsed, bound)
		}
		// A credential issued by a request that started just before the kill may be gone: the old master
		// acknowledged the write and died before its replica had it, or the kill cut off the answer of a
		// request that had used it. The new master then refuses it: invalid_grant, or 401 at userinfo.
		refusedAsLost := ((e.kind == "exchange" || e.kind == "refresh") && e.status == 400 && e.oauth == "invalid_grant") ||
			(e.kind == "userinfo" && e.status == 401)
		switch {
		case e.status == -1:
			t.Errorf("%s: %v", e.kind, e.err)
		case e.status == 200:
			if e.kind == "exchange" || e.kind == "refresh" {
				issued[e.cred]++
			}
		case e.status == 503:
			failedInWindow++
			if e.ended().After(lastFailure) {
				lastFailure = e.ended()
			}
			if !inWindow(e.started, e.ended()) {
				t.Errorf("%s got 503 at %s, outside the window without a master (kill at 0, promotion at %s, window ends %s)",
					e.kind, since(e.ended()), since(promotedAt), since(windowEnd))
			}
		case refusedAsLost && e.issued.Before(killedAt) && killedAt.Sub(e.issued) <= replicationLag:
			lost++
			oldestLost = max(oldestLost, killedAt.Sub(e.issued))
		default:
			t.Errorf("%s answered %d %s %v at %s (credential issued at %s; want 200, or 503 during the outage)",
				e.kind, e.status, e.oauth, e.err, since(e.ended()), since(e.issued))
		}
	}

	// After the window: a whole flow works, and so do the grants signed in before the kill.
	after := func(step string, got, want int, detail string) {
		if got != want {
			t.Errorf("after the failover, %s: %d %s (want %d)", step, got, detail, want)
		}
	}
	v := oauth2.GenerateVerifier()
	if code, err := a.code(newBrowser(), v); err != nil {
		t.Errorf("after the failover, sign-in: %v", err)
	} else if tk := a.exchange(code, v); tk.status != 200 {
		after("exchange", tk.status, 200, tk.Error)
	} else {
		issued["code:"+code]++
		r := a.refresh(tk.RefreshToken)
		after("refresh", r.status, 200, r.Error)
		after("userinfo", a.userinfo(r.AccessToken), 200, "")
	}
	for i, s := range sleepers {
		r2 := a.refresh(s.r1.RefreshToken)
		after(fmt.Sprintf("refresh of grant %d signed in before the kill (on the killed master: %t)", i, s.onVictim), r2.status, 200, r2.Error)
		if r2.status != 200 {
			continue
		}
		issued["refresh:"+s.r1.RefreshToken]++
		after(fmt.Sprintf("userinfo of grant %d", i), a.userinfo(r2.AccessToken), 200, "")
		// Its reuse detection survived too: the token rotated before the kill is refused and revokes the grant.
		re := a.refresh(s.r0.RefreshToken)
		after(fmt.Sprintf("reuse of grant %d's token rotated before the kill", i), re.status, 400, re.Error)
		if re.status == 200 {
			issued["refresh:"+s.r0.RefreshToken]++
		}
		r3 := a.refresh(r2.RefreshToken)
		after(fmt.Sprintf("refresh of grant %d after its reuse", i), r3.status, 400, r3.Error)
	}
	for cred, n := range issued {
		if n > 1 {
			t.Errorf("%.14s… yielded tokens %d times", cred, n)
		}
	}

	// Health: its format and bound throughout, and whole again after the window.
	healthCounts := map[string]int{}
	var slowestHealth time.Duration
	sawFail := false
	for _, h := range answers {
		healthCounts[fmt.Sprintf("%d %s", h.status, h.body)]++
		slowestHealth = max(slowestHealth, h.elapsed)
		switch {
		case h.err != nil:
			t.Errorf("GET /health at %s: %v", since(h.started), h.err)
		case h.status != 200 && h.status != 503:
			t.Errorf("GET /health answered %d %s (want 200 or 503)", h.status, h.body)
		case !strings.HasPrefix(h.contentType, "application/health+json"):
			t.Errorf("GET /health answered %d with content type %q", h.status, h.contentType)
		case (h.status == 200) != (h.body == "pass" || h.body == "warn"):
			t.Errorf("GET /health answered %d with status %q", h.status, h.body)
		case h.status == 503 && h.started.Add(h.elapsed).Before(killedAt):
			t.Errorf("GET /health answered 503 %s before the kill", h.body)
		}
		if h.elapsed > healthBound {
			t.Errorf("GET /health took %s at %s (bound %s)", h.elapsed, since(h.started), healthBound)
		}
		if h.status == 503 && inWindow(h.started, h.started.Add(h.elapsed)) {
			sawFail = true
		}
	}
	testwait.Until(t, 10*time.Second, "GET /health 200 pass after the failover", func() error {
		if h := getHealth(); h.status != 200 || h.body != "pass" {
			return fmt.Errorf("%d %q %v", h.status, h.body, h.err)
		}
		return nil
	})
	recoveredAt := time.Now()

	t.Logf("%d requests by %d workers; master %s SIGKILLed, replica promoted after %s; last 503 at %s after the kill",
		len(events), workers, victim.Addr(), since(promotedAt), since(lastFailure))
	t.Logf("answers: %s; slowest %s", sortedCounts(counts), slowest.Round(time.Millisecond))
	t.Logf("credentials that yielded tokens: %d (none twice); refused after the failover as issued just before the kill: %d (oldest %s before it); %d grants signed in before the kill (%d on the killed master) checked",
		len(issued), lost, oldestLost.Round(time.Millisecond), len(sleepers), onVictim)
	t.Logf("health: %s; slowest %s; 200 pass again %s after the kill", sortedCounts(healthCounts), slowestHealth.Round(time.Millisecond), since(recoveredAt))
	if counts["exchange 200"] < 20 || counts["refresh 200"] < 20 {
		t.Errorf("too little load got through: %v", counts)
	}
	if failedInWindow == 0 {
		t.Error("no request failed while the user's slot had no master: the kill did not hit the load")
	}
	if !sawFail {
		t.Error("GET /health never answered 503 while a slot had no master")
	}
}

// waitReplicated waits until every replica has applied everything its master had written when it was
// called (each replica's slave_repl_offset reaches its master's master_repl_offset).
func waitReplicated(t *testing.T, cl *testredis.Cluster, within time.Duration) {
	t.Helper()
	ctx := context.Background()
	info := func(n *testredis.Server) map[string]string {
		c := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
		defer c.Close()
		s, err := c.Info(ctx, "replication").Result()
		if err != nil {
			t.Fatalf("INFO replication of %s: %v", n.Addr(), err)
		}
		m := map[string]string{}
		for _, line := range strings.Split(s, "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
				m[k] = v
			}
		}
		return m
	}
	target := map[string]int64{} // master's port -> its offset now
	for _, n := range cl.Nodes {
		if m := info(n); m["role"] == "master" {
			_, port, _ := strings.Cut(n.Addr(), ":")
			target[port], _ = strconv.ParseInt(m["master_repl_offset"], 10, 64)
		}
	}
	testwait.Until(t, within, "every replica at its master's offset", func() error {
		for _, n := range cl.Nodes {
			m := info(n)
			if m["role"] != "slave" {
				continue
			}
			if off, _ := strconv.ParseInt(m["slave_repl_offset"], 10, 64); off < target[m["master_port"]] {
				return fmt.Errorf("replica %s at offset %d, its master at %d", n.Addr(), off, target[m["master_port"]])
			}
		}
		return nil
	})
}
