package throttle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Allow counts a request of kind ("authorize-ip", "token-user", …) by who against limit per window,
// shared by every replica through Redis (the gate's script, gate.go: one call). It returns 0 when the
// request may go ahead, or how long to wait. limit <= 0 allows everything. Over the limit nothing more
// is counted, so the key never outlives its window.
func (l *Limiter) Allow(ctx context.Context, kind, who string, limit int, window time.Duration) (time.Duration, error) {
	if limit <= 0 || who == "" {
		return 0, nil
	}
	res, err := l.gate(ctx, l.now().UnixMilli(), []Rate{{kind, who, limit, window}}, nil, 0, 0, nil)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return res.rateWait, nil
}

// Queued is a rate limit counted in a pipeline the caller sends (with reads of its own: one round trip
// for both, D38). Queue it in Pipelined's function; after Pipelined, Wait answers as Allow would.
type Queued struct {
	cmd  *redis.Cmd
	rate Rate
}

// Queue adds the rate limit r to p. A limit that counts nothing (Limit <= 0, Who == "") queues nothing.
func (l *Limiter) Queue(ctx context.Context, p redis.Pipeliner, r Rate) *Queued {
	q := &Queued{rate: r}
	if r.Limit > 0 && r.Who != "" {
		q.cmd = gateScript.EvalSha(ctx, p, []string{r.key()}, 1, l.now().UnixMilli(), r.Limit, r.Window.Milliseconds())
	}
	return q
}

// Wait is 0 when the request may go ahead, or how long to wait.
func (q *Queued) Wait() (time.Duration, error) {
	if q.cmd == nil {
		return 0, nil
	}
	res, err := q.cmd.Slice()
	if err != nil || len(res) != 1 {
		return 0, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if e := ints(res[0]); len(e) == 2 && e[0] == 0 {
		return roundUp(max(time.Duration(e[1])*time.Millisecond, time.Millisecond)), nil
	}
	return 0, nil
}

// Pipelined sends what fn queues (rate limits, settled reservations, the caller's own commands) in one
// pipeline. A script call that Redis answers NOSCRIPT (it has not seen the script: a restart, a
// failover, a new Cluster node) is sent again, alone, once the limiter's scripts are loaded; the
// pipeline's other commands ran already and are not repeated (a counter is never counted twice). Each
// command carries its own answer; the error is the first command's that failed.
func (l *Limiter) Pipelined(ctx context.Context, fn func(p redis.Pipeliner) error) error {
	cmds, err := l.rdb.Pipelined(ctx, fn)
	var again []redis.Cmder
	for _, c := range cmds {
		if e := c.Err(); e != nil && redis.HasErrorPrefix(e, "NOSCRIPT") {
			again = append(again, c)
		}
	}
	if len(again) == 0 {
		return err
	}
	for _, s := range []*redis.Script{gateScript, releaseScript} {
		if err := s.Load(ctx, l.rdb).Err(); err != nil {
			return err
		}
	}
	_, _ = l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range again {
			_ = p.Process(ctx, c)
		}
		return nil
	})
	for _, c := range cmds {
		if e := c.Err(); e != nil && !errors.Is(e, redis.Nil) {
			return e
		}
	}
	return nil
}
