package auth_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/config"
)

// redisCounter is a go-redis hook that counts what the provider asks of Redis: round trips (a command
// or a pipeline), script calls (EVALSHA/EVAL, alone or in a pipeline) and commands. The audit trail's
// writes are counted apart: they are batched in the background, so how many a step costs depends on
// timing, not on the step.
type redisCounter struct {
	mu                            sync.Mutex
	trips, scripts, cmds, audited int
	log                           []string
}

type redisCost struct{ trips, scripts, cmds int }

func (c *redisCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *redisCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (c *redisCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.count(cmds)
		return next(ctx, cmds)
	}
}

func (c *redisCounter) count(cmds []redis.Cmder) {
	var names []string
	scripts := 0
	for _, cmd := range cmds {
		if slices.ContainsFunc(cmd.Args(), func(a any) bool { s, _ := a.(string); return s == "auth:audit" }) {
			c.mu.Lock()
			c.audited++
			c.mu.Unlock()
			return
		}
		name := cmd.Name()
		if name == "multi" || name == "exec" {
			continue
		}
		if name == "hello" || name == "client" || name == "auth" || name == "select" {
			return // a new pooled connection's handshake (when the pool had none idle), not the flow's
		}
		if name == "evalsha" || name == "eval" {
			scripts++
		}
		names = append(names, name+keyShape(cmd))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trips++
	c.scripts += scripts
	c.cmds += len(names)
	c.log = append(c.log, strings.Join(names, "+"))
}

// keyShape is the command's first key without what names a user, family or address ("auth:{…}:rt"),
// so that the failure message says which script or record a round trip was for.
func keyShape(cmd redis.Cmder) string {
	args := cmd.Args()
	i := 1
	if n := cmd.Name(); n == "evalsha" || n == "eval" {
		i = 3
	}
	if len(args) <= i {
		return ""
	}
	k, _ := args[i].(string)
	if a, b, ok := strings.Cut(k, "{"); ok {
		_, rest, _ := strings.Cut(b, "}")
		k = a + "{…}" + rest
	}
	return "(" + k + ")"
}

// measure runs step and returns what it cost, with the round trips it made for the failure message.
func (c *redisCounter) measure(step func()) (redisCost, []string) {
	c.mu.Lock()
	c.trips, c.scripts, c.cmds, c.log = 0, 0, 0, nil
	c.mu.Unlock()
	step()
	c.mu.Lock()
	defer c.mu.Unlock()
	return redisCost{c.trips, c.scripts, c.cmds}, slices.Clone(c.log)
}

// Redis budget per flow, audit trail on (issue 22 item 8): a whole sign-in (the page, the password, the
// code exchange) in a browser that has a session already (prompt=login) and in a new one (the flow `make
// bench` measures), a sign-in that the browser's session answers (authorize and exchange), and a refresh.
// Each is what the code makes today (docs/auth.md, "Redis cost per flow"; D38 folded the rate limit into
// the throttle's reservation, the grant write into one script with its index, the code's OpenID Connect
// record into the code's read and claim, the PKCE check into its read, and a refresh's user rate limit
// into one pipeline with the user's read; it was 24/17/32, 13/13/15 and 5/5/6; D44 sent a password
// sign-in's reads and writes together: the reservation with the account's lookup, the account with its
// second factor and generation, the session with the settled reservation and the user's rate limit, and
// a session's user with that rate limit; they were 20, 15 and 10 round trips; D43 read the token
// endpoint's records in the pipeline of its per-address rate limit and counted a code exchange's user
// rate limit in its unit: an exchange 5 -> 2 round trips, a refresh 4 -> 3; D45 read a refresh's user
// in its prefetch and counted its user rate limit in its unit: 3/4/5 -> 2/3/3; D66 mails the owner of a
// sign-in in a new browser after the answer, its rate limit and its link 2 round trips, a script call and
// 2 commands beside the 7, 9 and 20 before the answer): a change that adds a round
// trip, a script call or a command fails here, and must either fold it into a call that runs already or
// raise the budget there with its reason. Lower the budget when a change makes a flow cheaper.
var redisBudget = map[string]redisCost{
	"sign-in with the password": {trips: 12, scripts: 10, cmds: 24},
	"sign-in in a new browser":  {trips: 9, scripts: 10, cmds: 22},
	"sign-in with the session":  {trips: 6, scripts: 7, cmds: 8},
	"refresh":                   {trips: 2, scripts: 3, cmds: 3},
}

// countedProvider is a provider on rdb, whose calls counter counts, without rate limits in the way, and
// with the test user.
func countedProvider(t *testing.T, rdb redis.UniversalClient) (*provider, *redisCounter) {
	t.Helper()
	t.Cleanup(func() { rdb.Close() })
	counter := &redisCounter{}
	rdb.AddHook(counter)
	p := startProvider(t, setup{rdb: rdb, mutate: func(c *config.Config) {
		c.Auth.RateLimit = config.AuthRateLimit{PerIP: 1 << 30, PerUser: 1 << 30}
	}})
	p.user(testEmail, testPassword)
	return p, counter
}

func TestRedisRoundTrips_PerSignInAndRefresh_WithinBudget(t *testing.T) {
	srv := testredis.Start(t)
	p, counter := countedProvider(t, redis.NewClient(&redis.Options{Addr: srv.Addr()}))
	// Once through every path first: the scripts are loaded (a first EVALSHA answers NOSCRIPT and is
	// sent again), and the device cookie of a known browser exists.
	warm, b := p.fullSignIn(testEmail, testPassword)
	{
		verifier := oauth2.GenerateVerifier()
		code, _ := codeFrom(t, p.codeWithSession(b, "state-warm", verifier), p.redirect)
		if tk := p.exchange(code, verifier); tk.status != http.StatusOK {
			t.Fatalf("exchange: %d %s", tk.status, tk.Error)
		}
	}
	if r := p.refresh(warm.RefreshToken); r.status != http.StatusOK {
		t.Fatalf("refresh: %d %s", r.status, r.Error)
	}
	ctx := context.Background()
	got := map[string]redisCost{}
	trips := map[string][]string{}

	var rt string
	passwordSignIn := func() {
		verifier := oauth2.GenerateVerifier()
		page := b.get(p.authorizeURL("state-password", verifier, oauth2.SetAuthURLParam("prompt", "login")))
		if page.StatusCode != http.StatusOK {
			t.Fatalf("authorize page: %d", page.StatusCode)
		}
		code, _ := codeFrom(t, b.signIn(p.base, page.body, testEmail, testPassword), p.redirect)
		tk := p.exchange(code, verifier)
		if tk.status != http.StatusOK {
			t.Fatalf("exchange: %d %s", tk.status, tk.Error)
		}
		rt = tk.RefreshToken
	}
	passwordSignIn() // the first replaces a session: its scripts are loaded
	got["sign-in with the password"], trips["sign-in with the password"] = counter.measure(passwordSignIn)
	got["sign-in with the session"], trips["sign-in with the session"] = counter.measure(func() {
		verifier := oauth2.GenerateVerifier()
		code, _ := codeFrom(t, p.codeWithSession(b, "state-session", verifier), p.redirect)
		if tk := p.exchange(code, verifier); tk.status != http.StatusOK {
			t.Fatalf("exchange: %d %s", tk.status, tk.Error)
		}
	})
	got["sign-in in a new browser"], trips["sign-in in a new browser"] = counter.measure(func() {
		verifier := oauth2.GenerateVerifier()
		code := p.signInAndGetCode(newBrowser(t), testEmail, testPassword, verifier)
		if tk := p.exchange(code, verifier); tk.status != http.StatusOK {
			t.Fatalf("exchange: %d %s", tk.status, tk.Error)
		}
		p.svc.Notices().Wait() // the owner's mail of the new browser, sent after the answer, is the flow's too
	})
	got["refresh"], trips["refresh"] = counter.measure(func() {
		if r := p.refresh(rt); r.status != http.StatusOK {
			t.Fatalf("refresh: %d %s", r.status, r.Error)
		}
	})
	if err := p.svc.Audit().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"sign-in with the password", "sign-in in a new browser", "sign-in with the session", "refresh"} {
		g, b := got[name], redisBudget[name]
		t.Logf("%s: %d round trips, %d script calls, %d commands (budget %d, %d, %d)\n%s", name, g.trips, g.scripts, g.cmds, b.trips, b.scripts, b.cmds, strings.Join(trips[name], "\n"))
		if g.trips > b.trips || g.scripts > b.scripts || g.cmds > b.cmds {
			t.Errorf("%s costs %d round trips, %d script calls, %d commands: over its budget of %d, %d, %d. Round trips:\n%s",
				name, g.trips, g.scripts, g.cmds, b.trips, b.scripts, b.cmds, strings.Join(trips[name], "\n"))
		}
	}
}

// On a Redis Cluster the token endpoint's folds hold too (D43): the prefetch rides in the per-address
// rate limit's pipeline (go-redis splits it by node), and a code exchange's user rate limit stays a call
// of its own (its counter is not on the family's slot): a refresh 3 round trips, an exchange 3.
func TestRedisRoundTrips_TokenEndpointOnACluster(t *testing.T) {
	cluster := testredis.StartCluster(t, 3, 0)
	p, counter := countedProvider(t, redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()}))
	tk, b := p.fullSignIn(testEmail, testPassword) // loads the scripts on every master
	rt := tk.RefreshToken
	for range 2 {
		r := p.refresh(rt)
		if r.status != http.StatusOK {
			t.Fatalf("refresh: %d %s", r.status, r.Error)
		}
		rt = r.RefreshToken
	}
	verifier := oauth2.GenerateVerifier()
	code, _ := codeFrom(t, p.codeWithSession(b, "state-cluster-trips", verifier), p.redirect)
	exchange, exTrips := counter.measure(func() {
		if tk := p.exchange(code, verifier); tk.status != http.StatusOK {
			t.Fatalf("exchange: %d %s", tk.status, tk.Error)
		}
	})
	refresh, rtTrips := counter.measure(func() {
		if r := p.refresh(rt); r.status != http.StatusOK {
			t.Fatalf("refresh: %d %s", r.status, r.Error)
		}
	})
	t.Logf("on a cluster: an exchange %d round trips, a refresh %d\nexchange:\n%s\nrefresh:\n%s", exchange.trips, refresh.trips, strings.Join(exTrips, "\n"), strings.Join(rtTrips, "\n"))
	if exchange.trips > 3 || refresh.trips > 3 {
		t.Fatalf("on a cluster: an exchange %d round trips (want 3), a refresh %d (want 3)\nexchange:\n%s\nrefresh:\n%s",
			exchange.trips, refresh.trips, strings.Join(exTrips, "\n"), strings.Join(rtTrips, "\n"))
	}
}
