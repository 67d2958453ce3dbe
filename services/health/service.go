// Package health is the platform's GET /health: it checks the store, the forms service and the auth
// service concurrently, each within its own bound, and answers in the IETF health-check format
// (application/health+json). Results are cached briefly and shared between concurrent requests, and
// exported as Prometheus gauges.
package health

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/server"
)

// ContentType is the media type of the body (draft-inadvisable-health-check).
const ContentType = "application/health+json"

// Options are the health service's dependencies.
type Options struct {
	// Config gives the health section (thresholds, cache interval, the services' URLs) on every refresh,
	// so that a reloaded configuration takes effect without a restart.
	Config    config.Source
	Redis     redis.UniversalClient
	RedisMode RedisMode
	// Peers are services in the same process (the dev server). When set they are checked through their
	// Ready method instead of over HTTP at FormsURL and AuthURL.
	Peers []server.Service
	// Version goes into the body's "version".
	Version string
	Logger  *slog.Logger
	// Registerer receives the formsservice_health_* gauges; nil registers nothing.
	Registerer prometheus.Registerer
	// FormsStore, when set, is asked after the forms service's /readyz answered 200: whether its store
	// answers and can keep forms.durability (FormsStore builds it). forms:readiness fails with its
	// reason. nil (the dev server, whose store keeps nothing anyway) asks only /readyz.
	FormsStore func(context.Context) error
	// HTTPClient asks the services' /readyz; nil builds one without proxy or redirects.
	HTTPClient *http.Client
	// Clock tells the age of the cached round against health.cacheFor; nil is time.Now. Tests move their
	// own clock past cacheFor instead of waiting for it.
	Clock func() time.Time
}

// Service is the health service.
type Service struct {
	o      Options
	log    *slog.Logger
	client *http.Client
	now    func() time.Time // the cache's clock
	fixed  []Check          // the store's and the in-process peers' checks; the HTTP ones follow the config

	group singleflight.Group
	last  atomic.Pointer[snapshot]

	mu      sync.Mutex
	running map[string]bool // checks whose last run has not returned yet
}

// snapshot is one round of checks, with the body encoded once for every request that reuses it.
type snapshot struct {
	at     time.Time // when the round started (on the cache's clock): its results are as old as that
	code   int
	body   []byte
	status Status
	checks map[string]CheckOut
	// redis is the store's INFO, read beside the checks for the formsservice_redis_* metrics.
	redis   []redisStats
	redisUp bool
}

// New builds the service and registers its metrics.
func New(o Options) (*Service, error) {
	s := &Service{o: o, log: o.Logger, client: o.HTTPClient, now: o.Clock, running: map[string]bool{}}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.client == nil {
		s.client = newHTTPClient()
	}
	if o.Redis != nil {
		s.fixed = append(s.fixed, redisChecks(o.Redis, o.RedisMode)...)
	}
	for _, p := range o.Peers {
		if p.Name() != "health" {
			s.fixed = append(s.fixed, peerReadiness(p))
		}
	}
	if o.Registerer != nil {
		if err := o.Registerer.Register(newCollector(s)); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Name labels the service's metrics and logs.
func (s *Service) Name() string { return "health" }

// Ready is always nil: the health service can report whatever state the platform is in, and taking it
// out of rotation when the store fails would hide exactly the answer people need.
func (s *Service) Ready(context.Context) error { return nil }

func (s *Service) handleHealth(c *fiber.Ctx) error {
	snap := s.current()
	c.Set(fiber.HeaderContentType, ContentType)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Status(snap.code).Send(snap.body)
}

// current returns the latest round of checks, running a new one when the cached round is older than
// health.cacheFor. Concurrent callers share one round (a scrape storm does one set of checks).
func (s *Service) current() *snapshot {
	cfg := s.o.Config.Current().Health
	if snap := s.last.Load(); snap != nil && s.now().Sub(snap.at) < cfg.CacheFor.D() {
		return snap
	}
	v, _, _ := s.group.Do("round", func() (any, error) {
		// A caller that arrived just after another round finished takes that round.
		if snap := s.last.Load(); snap != nil && s.now().Sub(snap.at) < cfg.CacheFor.D() {
			return snap, nil
		}
		snap := s.round(s.o.Config.Current().Health)
		s.logChanges(s.last.Load(), snap)
		s.last.Store(snap)
		return snap, nil
	})
	return v.(*snapshot)
}

// checks lists this round's checks: the fixed ones, and the services' /readyz over HTTP when they are
// not in this process.
func (s *Service) checks(cfg config.Health) []Check {
	list := append([]Check(nil), s.fixed...)
	if len(s.o.Peers) == 0 {
		if cfg.FormsURL != "" {
			list = append(list, httpReadiness("forms", cfg.FormsURL, s.client, s.o.FormsStore))
		}
		if cfg.AuthURL != "" {
			list = append(list, httpReadiness("auth", cfg.AuthURL, s.client, nil))
		}
	}
	return list
}

// round runs every check concurrently. Each returns by its own timeout, so the round takes at most the
// longest timeout however the dependencies behave.
func (s *Service) round(cfg config.Health) *snapshot {
	at := s.now()
	checks := s.checks(cfg)
	outs := make([]CheckOut, len(checks))
	var wg sync.WaitGroup
	var stats []redisStats
	var statsUp bool
	if s.o.Redis != nil {
		// INFO is read in the same round, within the store check's timeout, so that a scrape costs
		// the store nothing more than /health does.
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, timeout := cfg.Limits("redis:responseTime")
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			stats, statsUp = readRedisStats(ctx, s.o.Redis, s.o.RedisMode)
		}()
	}
	for i, c := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			warnAfter, timeout := cfg.Limits(c.Name)
			outs[i] = s.run(c, warnAfter, timeout)
		}()
	}
	wg.Wait()
	results := make(map[string]CheckOut, len(checks))
	for i, c := range checks {
		results[c.Name] = outs[i]
	}
	resp := newResponse(s.o.Version, results)
	body, err := json.Marshal(resp)
	if err != nil { // cannot happen with these types; answer fail rather than panic
		body, resp.Status = []byte(`{"status":"fail"}`), Fail
	}
	code := http.StatusOK
	if resp.Status == Fail {
		code = http.StatusServiceUnavailable
	}
	return &snapshot{at: at, code: code, body: body, status: resp.Status, checks: results, redis: stats, redisUp: statsUp}
}

type outcome struct {
	value any
	unit  string
	err   error
}

// run measures one check within timeout. The check runs in its own goroutine so that one that ignores
// its context still cannot hold the round; while such a run is still out, the check is not started
// again (no pile-up of stuck goroutines) and reports fail.
func (s *Service) run(c Check, warnAfter, timeout time.Duration) CheckOut {
	start := time.Now()
	out := CheckOut{ComponentType: c.ComponentType}
	if !s.claim(c.Name) {
		out.Status, out.Output = Fail, "no answer: the previous check has not returned yet"
		out.ObservedValue, out.ObservedUnit = milliseconds(timeout), "ms"
		out.Time, out.duration = formatTime(start), timeout.Seconds()
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan outcome, 1)
	go func() {
		res := s.call(ctx, c)
		s.release(c.Name) // before the result is handed over, so the next round finds the check free
		done <- res
	}()
	var res outcome
	select {
	case res = <-done:
	case <-ctx.Done():
		// A check that honours its context returns at once now; give it that moment so that it is
		// free for the next round. One that ignores its context is left behind and stays claimed.
		select {
		case <-done:
		case <-time.After(cancelGrace):
		}
		res = outcome{err: context.DeadlineExceeded}
	}
	elapsed := time.Since(start)
	out.Time, out.duration = formatTime(start.Add(elapsed)), elapsed.Seconds()
	out.ObservedValue, out.ObservedUnit = res.value, res.unit
	if res.value == nil {
		out.ObservedValue, out.ObservedUnit = milliseconds(elapsed), "ms"
	}
	if res.err != nil {
		out.detail = res.err.Error()
	}
	switch {
	case res.err != nil && (isTimeout(res.err) || elapsed >= timeout):
		out.Status, out.Output = Fail, "no answer within "+timeout.String()
	case res.err != nil:
		out.Status, out.Output = Fail, output(res.err)
	case elapsed >= timeout:
		out.Status, out.Output = Fail, "answered after "+round(elapsed).String()+", over the "+timeout.String()+" timeout"
	case elapsed >= warnAfter:
		out.Status, out.Output = Warn, "slow: answered in "+round(elapsed).String()+" (warn after "+warnAfter.String()+")"
	default:
		out.Status = Pass
	}
	return out
}

// cancelGrace is how long a timed-out check gets to return after its context is cancelled.
const cancelGrace = 20 * time.Millisecond

// call runs the check, turning a panic into a failed check.
func (s *Service) call(ctx context.Context, c Check) (res outcome) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("health check panicked", "check", c.Name, "panic", p)
			res = outcome{err: safeError("check failed")}
		}
	}()
	v, unit, err := c.Run(ctx)
	return outcome{v, unit, err}
}

func (s *Service) claim(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running[name] {
		return false
	}
	s.running[name] = true
	return true
}

func (s *Service) release(name string) {
	s.mu.Lock()
	delete(s.running, name)
	s.mu.Unlock()
}

// logChanges logs a check's status when it changes, with the reason and the underlying error, so that
// the log tells the story of an outage without a line per request.
func (s *Service) logChanges(prev, cur *snapshot) {
	for name, c := range cur.checks {
		was := Status("")
		if prev != nil {
			was = prev.checks[name].Status
		}
		if was == c.Status {
			continue
		}
		level := slog.LevelInfo
		if c.Status != Pass {
			level = slog.LevelWarn
		}
		attrs := []any{"check", name, "from", string(was), "to", string(c.Status), "output", c.Output}
		if c.detail != "" {
			attrs = append(attrs, "err", c.detail) // the log is private; the body shows only output
		}
		s.log.Log(context.Background(), level, "health check changed", attrs...)
	}
}

func milliseconds(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}

// round shortens a duration for people: 512ms, 1.2s.
func round(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
