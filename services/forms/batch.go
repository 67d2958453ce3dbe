package forms

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// batcher stores submissions that arrive together with one script call: group commit. On Redis, a
// script call costs several times a plain command before it does anything (arguments into Lua, results
// out), so under load that fixed cost is shared instead of paid per submission. There is no waiting
// for a batch to fill: a submission that finds no call running is sent at once, alone if need be; only
// submissions that arrive while a call is out are gathered into the next one, so latency stays one
// round trip when idle and at most two under load. Each submission is still decided atomically and in order inside the script, its Redis work is
// still one round trip, and a Cluster is no obstacle: all keys of one endpoint share a hash slot.
type batcher struct {
	rdb    redis.UniversalClient
	script *redis.Script
	fixed  []string // keys every call passes after its run key
	runKey string   // prefix of a call's run key, which makes the call idempotent (see store.go)

	mu      sync.Mutex
	queue   []*storeOp
	running int // calls in flight (each run by a lead goroutine)
}

const (
	// maxInFlight calls per endpoint run at once. One is enough, and measured best: Redis runs scripts
	// one at a time anyway, and while a call is out the next batch gathers.
	maxInFlight = 1
	// maxBatch bounds one call's size (records are at most 16 KB each).
	maxBatch = 64
)

// storeOp is one submission waiting for its answer.
type storeOp struct {
	ctx  context.Context
	keys []string
	args []any
	done chan opResult
}

type opResult struct {
	n   int64
	err error
}

func newBatcher(rdb redis.UniversalClient, script *redis.Script, fixed []string, runKey string) *batcher {
	return &batcher{rdb: rdb, script: script, fixed: fixed, runKey: runKey}
}

// do queues one submission (its own keys and arguments, in the script's per-submission layout) and
// waits for its answer or for ctx to end.
func (b *batcher) do(ctx context.Context, keys []string, args []any) (int64, error) {
	op := &storeOp{ctx: ctx, keys: keys, args: args, done: make(chan opResult, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, op)
	lead := b.running < maxInFlight
	if lead {
		b.running++
	}
	b.mu.Unlock()
	if lead {
		go b.lead()
	}
	select {
	case r := <-op.done:
		return r.n, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// lead runs calls until the queue is empty.
func (b *batcher) lead() {
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.running--
			b.mu.Unlock()
			return
		}
		n := min(len(b.queue), maxBatch)
		batch := append([]*storeOp(nil), b.queue[:n]...)
		rest := copy(b.queue, b.queue[n:])
		clear(b.queue[rest:])
		b.queue = b.queue[:rest]
		b.mu.Unlock()
		b.run(batch)
	}
}

// run makes one script call for the submissions of batch whose callers still wait; those that gave up
// are left out, so nothing is stored for a request that was answered 502.
func (b *batcher) run(batch []*storeOp) {
	live := batch[:0]
	var deadline time.Time
	for _, op := range batch {
		if err := op.ctx.Err(); err != nil {
			op.done <- opResult{err: err}
			continue
		}
		if d, ok := op.ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
			deadline = d
		}
		live = append(live, op)
	}
	if len(live) == 0 {
		return
	}
	if deadline.IsZero() {
		deadline = time.Now().Add(2 * time.Second)
	}
	keys := make([]string, 0, 1+len(b.fixed)+len(live)*len(live[0].keys))
	keys = append(keys, b.runKey+randomHex(16))
	keys = append(keys, b.fixed...)
	args := make([]any, 0, len(live)*len(live[0].args))
	for _, op := range live {
		keys = append(keys, op.keys...)
		args = append(args, op.args...)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	res, err := b.script.Run(ctx, b.rdb, keys, args...).Int64Slice()
	cancel()
	for i, op := range live {
		switch {
		case err != nil:
			op.done <- opResult{err: err}
		case i >= len(res):
			op.done <- opResult{err: errShortAnswer}
		default:
			op.done <- opResult{n: res[i]}
		}
	}
}
