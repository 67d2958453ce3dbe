package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/redisclient"
)

// Ready reports whether the store answers, and can keep the durability promise of level: at "machine"
// it must fsync before answering (appendfsync always) or on demand (WAITAOF, Redis 7.2 or later,
// appendonly yes), or every submission would be answered 502.
func Ready(ctx context.Context, rdb redis.UniversalClient, level config.Durability) error {
	if err := redisclient.Ping(ctx, rdb); err != nil {
		return err
	}
	if level != config.DurabilityMachine {
		return nil
	}
	c, err := primaryFor(ctx, rdb, ContactStream)
	if err != nil {
		return err
	}
	if always, err := appendfsyncAlways(ctx, c); err != nil || always {
		return err
	}
	if err := c.Do(ctx, "waitaof", 1, 0, 1).Err(); err != nil {
		return fmt.Errorf("forms.durability machine needs a store with appendonly yes and either appendfsync always or WAITAOF (Redis 7.2 or later): %w", err)
	}
	return nil
}

// fsyncProbe remembers, for a minute, whether the primary runs appendfsync always: it then fsyncs the
// append-only file before it answers any write, once per event-loop turn for every client's writes
// together (group commit), so the machine level needs no WAITAOF — which Redis before 7.2 lacks, and
// which with appendfsync everysec waits for the next once-a-second fsync.
type fsyncProbe struct {
	mu     sync.Mutex
	asked  time.Time
	answer bool
}

const fsyncProbeEvery = time.Minute

func (p *fsyncProbe) always(ctx context.Context, c *redis.Client) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.asked.IsZero() && time.Since(p.asked) < fsyncProbeEvery {
		return p.answer
	}
	always, err := appendfsyncAlways(ctx, c)
	if err == nil { // a store that did not answer (restarting) is asked again on the next call
		p.answer, p.asked = always, time.Now()
	}
	return always
}

func (p *fsyncProbe) forget() {
	p.mu.Lock()
	p.asked = time.Time{}
	p.mu.Unlock()
}

// appendfsyncAlways asks the store whether it has the append-only file on with appendfsync always. A
// store that refuses to say (CONFIG disabled, as on some managed services) is taken to not; err is set
// only when the store did not answer at all.
func appendfsyncAlways(ctx context.Context, c *redis.Client) (bool, error) {
	cfg, err := c.ConfigGet(ctx, "append*").Result()
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return false, nil // an answer: "not allowed"
	}
	if err != nil {
		return false, err
	}
	return cfg["appendonly"] == "yes" && cfg["appendfsync"] == "always", nil
}

// acknowledged reads the answer of WAITAOF (numlocal, numreplicas) or WAIT (replicas).
func acknowledged(level config.Durability, wait *redis.Cmd) bool {
	if level == config.DurabilityMachine {
		v, err := wait.Int64Slice()
		return err == nil && len(v) == 2 && v[0] >= 1
	}
	n, err := wait.Int64()
	return err == nil && n >= 1
}

// primaryFor is the client whose connections reach the primary that holds key: the wait must follow
// the write on the same connection. A Cluster client sends a keyless command to any node, so the
// shard's master is asked for directly.
func primaryFor(ctx context.Context, rdb redis.UniversalClient, key string) (*redis.Client, error) {
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return c.MasterForKey(ctx, key)
	case *redis.Client:
		return c, nil
	}
	return nil, fmt.Errorf("forms.durability machine and primary need a single Redis, Sentinel or Cluster client, not %T", rdb)
}

// stronger is the stricter of two durability levels.
func stronger(a, b config.Durability) config.Durability {
	rank := func(l config.Durability) int {
		switch l {
		case config.DurabilityPrimary:
			return 2
		case config.DurabilityMachine:
			return 1
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// NotDurableError: the write was made but not acknowledged at the level asked for within the bound.
type NotDurableError struct{ Level config.Durability }

func (e NotDurableError) Error() string {
	return "the write was not acknowledged at durability " + string(e.Level) + " in time"
}
