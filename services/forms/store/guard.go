package store

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/formsservice/formsservice/services/platform/config"
)

// CheckEvery is how often the guard asks the store again (Guard.Run): a changed appendonly,
// appendfsync or eviction policy, or a replica lost, is seen within it.
const CheckEvery = 2 * time.Second

// checkTimeout bounds one check.
const checkTimeout = 2 * time.Second

// Guard keeps the durability promise honest: it reads from the store what each level needs
// (durability.go), at start and every CheckEvery, and refuses — before anything is written — every
// submission at a level the store cannot keep, so that no 201 is given that would not survive. It
// publishes the verdict for the configured level as metrics and logs each change with what to change.
type Guard struct {
	rdb   redis.UniversalClient
	cfg   config.Redis
	log   *slog.Logger
	level func() config.Durability // the configured level, for the metrics and the log
	off   bool

	state  atomic.Pointer[verdict]
	sf     singleflight.Group
	checks atomic.Int64

	mu     sync.Mutex // one report at a time
	logged string     // the last verdict logged for the configured level ("" for none yet)

	aofMu sync.Mutex
	// aofSettled holds the primaries seen with a complete append-only file (appendonly on, no rewrite
	// running or failed) since they were last seen with appendonly off: a rewrite on one of them is a
	// routine one, which the append-only file in use survives. Any other rewrite may be the first.
	aofSettled map[string]bool

	ok    prometheus.Gauge
	unmet [NumReasons]prometheus.Gauge
}

// verdict is one check's outcome: per level, nil or why it cannot be kept; and which primaries fsync
// before they answer (appendfsync always), so that the machine level needs no WAITAOF on them.
type verdict struct {
	unmet       [len(levels)]error
	fsyncAlways map[string]bool // by primary address
}

func newVerdict(nodes []nodeFacts) *verdict {
	v := &verdict{fsyncAlways: map[string]bool{}}
	for i, l := range levels {
		if u := judge(nodes, l); u != nil {
			v.unmet[i] = u
		}
	}
	for _, n := range nodes {
		v.fsyncAlways[n.addr] = n.appendOnly && n.appendFsync == "always"
	}
	return v
}

// Options configure the store: its guard's log, metrics and configured level.
type Options struct {
	Logger *slog.Logger
	// Registerer receives formsservice_forms_durability_ok and formsservice_forms_durability_unmet.
	Registerer prometheus.Registerer
	// Level is the configured level, which the metrics and the log speak of; default process.
	Level func() config.Durability
	// Off skips every check: the dev server's embedded in-memory store, which keeps nothing anyway
	// (and says so in the log).
	Off bool
	// Redis is the configuration the client was built from; it names a Sentinel-backed store's primary
	// in the guard's messages, which go-redis knows only as "FailoverClient".
	Redis config.Redis
}

// NewGuard returns a guard of its own, for a reader of the verdict outside the forms service (the
// health service's forms:readiness); the forms service's guard is its Store's.
func NewGuard(rdb redis.UniversalClient, o Options) (*Guard, error) { return newGuard(rdb, o) }

func newGuard(rdb redis.UniversalClient, o Options) (*Guard, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	if o.Level == nil {
		o.Level = func() config.Durability { return config.DurabilityProcess }
	}
	g := &Guard{rdb: rdb, cfg: o.Redis, log: o.Logger, level: o.Level, off: o.Off, aofSettled: map[string]bool{}}
	g.ok = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "formsservice_forms_durability_ok",
		Help: "1 when the store can keep the configured forms.durability (its settings checked every few seconds), 0 when not: submissions then answer 502.",
	})
	unmet := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "formsservice_forms_durability_unmet",
		Help: "1 for each reason the store cannot keep the configured forms.durability now: not_checked, appendonly_off, eviction_policy, no_fsync, no_replica, unverifiable, aof_starting, aof_write_failed, wait_refused.",
	}, []string{"reason"})
	unchecked := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "formsservice_forms_durability_unchecked",
		Help: "1 while forms.durability is unchecked: the store's settings are not checked and acknowledged submissions may be lost (the team chose it; FormsServiceDurabilityUnchecked says so).",
	}, func() float64 { return b2f(g.level() == config.DurabilityUnchecked) })
	for _, c := range []prometheus.Collector{g.ok, unmet, unchecked} {
		if err := o.Registerer.Register(c); err != nil {
			return nil, err
		}
	}
	for r := range NumReasons {
		g.unmet[r] = unmet.WithLabelValues(r.String())
	}
	if g.off {
		g.ok.Set(1)
	} else {
		g.unmet[ReasonNotChecked].Set(1)
	}
	return g, nil
}

// Allow returns nil when the store can keep level's promise, or an *Unmet saying why not. Before the
// first check has answered, it runs one (shared by every caller) within ctx.
func (g *Guard) Allow(ctx context.Context, level config.Durability) error {
	if g.off || level == config.DurabilityUnchecked {
		return nil // unchecked asks nothing of the store, not even to have answered a check
	}
	v := g.state.Load()
	if v == nil {
		ch := g.sf.DoChan("check", func() (any, error) {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkTimeout)
			defer cancel()
			return nil, g.Check(cctx)
		})
		select {
		case <-ch:
		case <-ctx.Done():
		}
		if v = g.state.Load(); v == nil {
			return &Unmet{Level: level, Reasons: []Reason{ReasonNotChecked},
				Fix: []string{"the store has not answered the durability check yet"}}
		}
	}
	return v.unmet[levelIndex(level)]
}

// fsyncAlways reports whether the primary at addr fsyncs before it answers, as last checked.
func (g *Guard) fsyncAlways(addr string) bool {
	v := g.state.Load()
	return v != nil && v.fsyncAlways[addr]
}

// Checks counts the completed checks, so that a test can wait for one after a change it made.
func (g *Guard) Checks() int64 { return g.checks.Load() }

// Run checks at once, then at every tick (a time.Ticker of CheckEvery in production; a test's channel
// drives it), until ctx ends.
func (g *Guard) Run(ctx context.Context, ticks <-chan time.Time) {
	if g.off {
		return
	}
	for {
		cctx, cancel := context.WithTimeout(ctx, checkTimeout)
		_ = g.Check(cctx) // no answer: the last verdict stands; the store's outage shows everywhere else
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
	}
}

// Check asks every primary that holds the forms' keys, keeps the verdict and reports it. When the store
// does not answer, the last verdict stands and the error is returned.
func (g *Guard) Check(ctx context.Context) error {
	if g.off {
		return nil
	}
	nodes, err := g.inspect(ctx)
	if err != nil {
		return err
	}
	v := newVerdict(nodes)
	g.state.Store(v)
	g.report(v)
	g.checks.Add(1)
	return nil
}

// inspect asks each primary of the forms' keys: one for a single Redis or Sentinel, the masters of the
// two endpoints' slots on a Cluster.
func (g *Guard) inspect(ctx context.Context) ([]nodeFacts, error) {
	var out []nodeFacts
	seen := map[string]bool{}
	for _, key := range []string{WaitlistEntries, ContactStream} {
		c, err := primaryFor(ctx, g.rdb, key)
		if err != nil {
			return nil, err
		}
		if seen[c.Options().Addr] {
			continue
		}
		seen[c.Options().Addr] = true
		n, err := inspectNode(ctx, c, g.cfg)
		if err != nil {
			return nil, err
		}
		g.settle(&n)
		out = append(out, n)
	}
	return out, nil
}

// settle decides whether n's append-only file may still be in its first rewrite. Redis reports
// aof_enabled:1 as soon as CONFIG SET appendonly yes is made, while the writes of the first rewrite go
// to a temporary file that a restart does not read (a kill in that window loses them); INFO does not
// tell that rewrite from a routine one, which is harmless. So a rewrite counts as the first unless this
// guard has seen the node's file complete since it last saw appendonly off. A guard that starts during
// a routine rewrite, or after one failed, waits for the next one to end: the safe side.
func (g *Guard) settle(n *nodeFacts) {
	if n.infoRefused {
		return
	}
	g.aofMu.Lock()
	defer g.aofMu.Unlock()
	switch {
	case !n.appendOnly:
		delete(g.aofSettled, n.addr)
	case !n.aofRewriting && !n.aofRewriteFailed:
		g.aofSettled[n.addr] = true
	}
	n.aofStarting = n.appendOnly && !g.aofSettled[n.addr]
}

// report sets the metrics for the configured level and logs a change of its verdict: an unmet level at
// error, with what to change; its recovery at info.
func (g *Guard) report(v *verdict) {
	level := g.level()
	err := v.unmet[levelIndex(level)]
	g.mu.Lock()
	defer g.mu.Unlock()
	var u *Unmet
	present := [NumReasons]bool{}
	if errors.As(err, &u) {
		for _, r := range u.Reasons {
			present[r] = true
		}
	}
	for r := range NumReasons {
		g.unmet[r].Set(b2f(present[r]))
	}
	g.ok.Set(b2f(err == nil))
	now := "ok " + string(level)
	if err != nil {
		now = err.Error()
	}
	if now == g.logged {
		return
	}
	first := g.logged == ""
	g.logged = now
	switch {
	case level == config.DurabilityUnchecked:
		g.log.Warn("forms.durability is unchecked: the store's settings are not checked, and an acknowledged submission may be lost (formsservice_forms_durability_unchecked)",
			"durability", string(level))
	case u != nil:
		g.log.Error("the store cannot keep the configured durability: submissions answer 502 until it can (checked every "+CheckEvery.String()+")",
			"durability", string(level), "reasons", u.Reason(), "fix", u.Error())
	case first:
		g.log.Info("the store keeps the configured durability", "durability", string(level))
	default:
		g.log.Info("the store keeps the configured durability again: submissions are taken", "durability", string(level))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
