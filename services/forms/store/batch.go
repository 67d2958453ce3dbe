package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/platform/config"
)

// batcher stores submissions that arrive together with one script call: group commit
// (docs/architecture.md, D13). On Redis, a script call costs several times a plain command before it
// does anything (arguments into Lua, results out), so under load that fixed cost is shared instead of
// paid per submission. There is no waiting for a batch to fill: a submission that finds no call running
// is sent at once, alone if need be; only submissions that arrive while a call is out are gathered into
// the next one, so latency stays one round trip when idle and at most two under load. Each submission is
// still decided atomically and in order inside the script, its Redis work is still one round trip, and a
// Cluster is no obstacle: all keys of one endpoint share a hash slot.
type batcher struct {
	rdb    redis.UniversalClient
	script *redis.Script
	src    string   // the script's source, for SCRIPT LOAD
	fixed  []string // keys every call passes after its run key
	runKey string   // prefix of a call's run key, which makes the call idempotent (see store.go)

	mu      sync.Mutex
	queue   []*storeOp
	running int // calls in flight (each run by a lead goroutine)
	// loaded says the scripts are known to be in the store's script cache (runAndWait cannot fall back
	// from EVALSHA to EVAL inside its pipeline without waiting twice).
	loaded atomic.Bool
	guard  *Guard // knows which primaries fsync before they answer
}

const (
	// maxInFlight calls per endpoint run at once. One is enough, and measured best: Redis runs scripts
	// one at a time anyway, and while a call is out the next batch gathers.
	maxInFlight = 1
	// maxBatch bounds one call's size (records are at most 16 KB each).
	maxBatch = 64
)

// storeOp is one submission waiting for its answer: its keys and arguments in the script's
// per-submission layout, the durability its answer waits for, and the in-flight key (if any) that the
// call settles once the answer is decided.
type storeOp struct {
	ctx    context.Context
	keys   []string
	args   []any
	level  config.Durability
	settle string
	done   chan opResult
}

type opResult struct {
	n   int64
	err error
}

func newBatcher(rdb redis.UniversalClient, g *Guard, src string, fixed []string, runKey string) *batcher {
	return &batcher{rdb: rdb, guard: g, script: redis.NewScript(src), src: src, fixed: fixed, runKey: runKey}
}

// do queues one submission and waits for its answer or for ctx to end.
func (b *batcher) do(ctx context.Context, o storeOp) (int64, error) {
	op := &o
	op.ctx, op.done = ctx, make(chan opResult, 1)
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
	level := config.DurabilityUnchecked
	fsync, replica := false, false // what the answer waits for: every live op's level, ORed
	var settle []string
	for _, op := range batch {
		if err := op.ctx.Err(); err != nil {
			op.done <- opResult{err: err}
			continue
		}
		if d, ok := op.ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
			deadline = d
		}
		level = stronger(level, op.level)
		fsync = fsync || waitsForFsync(op.level)
		replica = replica || waitsForReplica(op.level)
		if op.settle != "" {
			settle = append(settle, op.settle)
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
	var res []int64
	var err error
	durable := true
	if !fsync && !replica {
		res, err = b.script.Run(ctx, b.rdb, keys, args...).Int64Slice()
	} else {
		res, durable, err = b.runAndWait(ctx, level, fsync, replica, keys, args, settle)
	}
	cancel()
	for i, op := range live {
		switch {
		case err != nil:
			op.done <- opResult{err: err}
		case i >= len(res):
			op.done <- opResult{err: errShortAnswer}
		case !durable && (res[i] >= 1 && res[i] <= 3 || res[i] == 6):
			// Stored, or found stored (duplicate, replay), but not yet as durable as promised: the client
			// is told to retry, and a retry with its Idempotency-Key gets the first answer.
			op.done <- opResult{err: NotDurableError{Level: level}}
		default:
			op.done <- opResult{n: res[i]}
		}
	}
}

// settleScript ends the in-flight state that this call (ARGV[1], its run key) set: KEYS are in-flight
// keys; one set by another call is left alone.
const settleLua = `
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then redis.call('DEL', KEYS[i]) end
end
return 0`

var settleScript = redis.NewScript(settleLua)

var errShortAnswer = fmt.Errorf("script: fewer answers than submissions")

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// waitMargin is left of a call's deadline after the durability wait, for the answer to come back.
const waitMargin = 100 * time.Millisecond

// runAndWait makes the script call and then waits, on the same connection, until the write is as
// durable as the call's levels ask: WAITAOF 1 0 when fsync (the primary fsynced its append-only file),
// WAIT 1 when replica (a replica acknowledged it), both when a reload mixed the levels. Both wait for every earlier write of the connection, so a duplicate or a replay
// (whose script wrote its run key) is also answered only once what it found is durable; and one wait
// covers every submission of the call: group commit. Then the call settles the in-flight keys it set.
// The whole pipeline may be sent twice by the client: each part is idempotent.
func (b *batcher) runAndWait(ctx context.Context, level config.Durability, fsync, replica bool, keys []string, args []any, settle []string) ([]int64, bool, error) {
	c, err := primaryFor(ctx, b.rdb, keys[1])
	if err != nil {
		return nil, false, err
	}
	// The wait ends before the call's deadline and before the client's read timeout, so that its answer
	// (acknowledged or not) is read rather than lost to a timeout.
	deadline, _ := ctx.Deadline()
	budget := time.Until(deadline)
	if rt := c.Options().ReadTimeout; rt > 0 {
		budget = min(budget, rt)
	}
	waitMS := max(budget-waitMargin, time.Millisecond).Milliseconds()
	pipe := c.Pipeline()
	if !b.loaded.Load() {
		pipe.ScriptLoad(ctx, b.src)
		pipe.ScriptLoad(ctx, settleLua)
	}
	stored := pipe.EvalSha(ctx, b.script.Hash(), keys, args...)
	// A primary that fsyncs before it answers (appendfsync always) needs no WAITAOF: the script's
	// answer is the proof.
	var fsyncWait, replicaWait *redis.Cmd
	if fsync && !b.guard.fsyncAlways(c.Options().Addr) {
		fsyncWait = pipe.Do(ctx, "waitaof", 1, 0, waitMS)
	}
	if replica {
		replicaWait = pipe.Do(ctx, "wait", 1, waitMS)
	}
	if len(settle) > 0 {
		pipe.EvalSha(ctx, settleScript.Hash(), settle, keys[0])
	}
	_, _ = pipe.Exec(ctx) // each command's own error is read below
	res, err := stored.Int64Slice()
	if err != nil {
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			b.loaded.Store(false) // a restarted Redis: the next call loads the scripts again
		}
		return nil, false, err
	}
	b.loaded.Store(true)
	durable := true
	for _, w := range []struct {
		cmd *redis.Cmd
		ok  func(*redis.Cmd) bool
	}{{fsyncWait, fsynced}, {replicaWait, replicated}} {
		if w.cmd == nil {
			continue
		}
		if err := w.cmd.Err(); err != nil {
			return nil, false, fmt.Errorf("durability %s: %w", level, err)
		}
		durable = durable && w.ok(w.cmd)
	}
	return res, durable, nil
}
