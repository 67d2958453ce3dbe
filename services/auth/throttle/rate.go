package throttle

import (
	"context"
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
	res, err := l.gate(ctx, l.now().UnixMilli(), []Rate{{kind, who, limit, window}}, nil, 0, 0)
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

// Pipelined sends what fn queues in one pipeline, loading the limiter's script first when Redis has not
// seen it (NOSCRIPT) and sending the pipeline again.
func (l *Limiter) Pipelined(ctx context.Context, fn func(p redis.Pipeliner) error) error {
	return l.evalShaRetry(ctx, gateScript, func() error {
		_, err := l.rdb.Pipelined(ctx, fn)
		return err
	})
}
