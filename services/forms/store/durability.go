package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/platform/config"
)

// What each durability level needs from the store (docs/forms.md, "Durability"; D55), read from every
// primary that holds the forms' keys:
//
//   - every level but unchecked: no eviction (maxmemory 0, or maxmemory-policy noeviction: a full store
//     refuses writes instead of dropping stored submissions);
//   - process: appendonly yes (a 201 survives a kill of the Redis process: the write reached the
//     append-only file before Redis answered), and an append-only file that is complete: not the first
//     rewrite after appendonly was turned on (until it ends, writes go to a temporary file that a
//     restart does not read), and no failed write to it;
//   - machine: that, and appendfsync always (Redis fsyncs before it answers), or WAITAOF (Redis 7.2 or
//     later) to wait for the fsync after the write;
//   - primary: process's, and a replica online, which WAIT 1 waits for. The primary's own append-only
//     file stays required: a primary that restarts empty faster than a failover makes its replicas
//     empty too (Redis's replication docs, "Safety of replication when master has persistence turned
//     off");
//   - replicated: a replica online (WAIT 1), and no append-only file: it relies on the platform failing
//     over to a replica rather than restarting the primary empty, as managed services with replicas do;
//   - unchecked: nothing. The team accepts the loss; the guard's gauge and an info alert say so.
//
// INFO gives appendonly (aof_enabled), the rewrite's state, maxmemory, maxmemory-policy and the
// replicas; only appendfsync needs CONFIG GET. A managed Redis that refuses CONFIG (most do) leaves
// appendfsync unknown: machine then relies on WAITAOF. One that refuses INFO cannot be judged at all,
// and no level but unchecked is kept.

// Reason is why the store cannot keep a level's promise: a closed set, the label values of
// formsservice_forms_durability_unmet.
type Reason int

const (
	ReasonNotChecked     Reason = iota // the store has not answered the check since the service started
	ReasonAppendOnlyOff                // appendonly no
	ReasonEviction                     // maxmemory set with a policy that evicts keys
	ReasonNoFsync                      // machine: neither appendfsync always nor WAITAOF
	ReasonNoReplica                    // primary: no replica online
	ReasonUnverifiable                 // the store refuses INFO
	ReasonAOFStarting                  // the first rewrite after appendonly yes has not completed
	ReasonAOFWriteFailed               // the last write to the append-only file failed
	ReasonWaitRefused                  // primary, replicated: the store refuses WAIT
	NumReasons
)

var reasonNames = [NumReasons]string{"not_checked", "appendonly_off", "eviction_policy", "no_fsync", "no_replica", "unverifiable", "aof_starting", "aof_write_failed", "wait_refused"}

func (r Reason) String() string { return reasonNames[r] }

// Unmet says that the store cannot keep the promise of Level, why, and what to change. Submissions at
// that level are answered 502 with it (nothing is written), and readiness fails with it.
type Unmet struct {
	Level   config.Durability
	Reasons []Reason
	// Fix says, per problem, what to change where.
	Fix []string
}

func (u *Unmet) Error() string {
	return "the store cannot keep forms.durability " + string(u.Level) + ": " + strings.Join(u.Fix, "; ")
}

// Reason is the short form for /readyz, which may be reachable by anyone: no address, no setting's value.
func (u *Unmet) Reason() string {
	names := make([]string, len(u.Reasons))
	for i, r := range u.Reasons {
		names[i] = r.String()
	}
	return "durability " + string(u.Level) + ": " + strings.Join(names, ", ")
}

func (u *Unmet) add(r Reason, fix string) {
	for _, have := range u.Reasons {
		if have == r {
			u.Fix = append(u.Fix, fix)
			return
		}
	}
	u.Reasons = append(u.Reasons, r)
	u.Fix = append(u.Fix, fix)
}

// nodeFacts is what one primary said about itself.
type nodeFacts struct {
	addr         string // the client's address for the node: the verdict's key
	name         string // the node as the messages name it (nodeName)
	infoRefused  bool
	appendOnly   bool
	appendFsync  string // "" when CONFIG GET was refused
	waitAOF      bool   // the server knows WAITAOF
	maxmemory    int64
	policy       string
	replicasUp   int // replicas with state=online
	configDenied bool
	// The append-only file's state (INFO persistence). aofStarting is the guard's reading of it
	// (Guard.settle): a rewrite that may be the first since appendonly was turned on.
	aofRewriting     bool // aof_rewrite_in_progress or aof_rewrite_scheduled
	aofRewriteFailed bool // aof_last_bgrewrite_status:err
	aofWriteFailed   bool // aof_last_write_status:err
	aofStarting      bool
	waitRefused      bool // WAIT is refused (some Redis-compatible services have none)
}

func (n nodeFacts) evicts() bool { return n.maxmemory > 0 && n.policy != "noeviction" }

// inspectNode asks one primary what the levels need. err is set only when the store did not answer; a
// refusal (an error reply) is a fact.
func inspectNode(ctx context.Context, c *redis.Client, rc config.Redis) (nodeFacts, error) {
	n := nodeFacts{addr: c.Options().Addr, name: nodeName(ctx, c, rc)}
	info, err := c.Info(ctx).Result() // the default sections: server, memory, persistence, replication, …
	if isReply(err) {
		n.infoRefused = true
		return n, nil
	}
	if err != nil {
		return n, err
	}
	f := infoFields(info)
	n.appendOnly = f["aof_enabled"] == "1"
	n.aofRewriting = f["aof_rewrite_in_progress"] == "1" || f["aof_rewrite_scheduled"] == "1"
	n.aofRewriteFailed = f["aof_last_bgrewrite_status"] == "err"
	n.aofWriteFailed = f["aof_last_write_status"] == "err"
	n.maxmemory, _ = strconv.ParseInt(f["maxmemory"], 10, 64)
	n.policy = f["maxmemory_policy"]
	for k, v := range f {
		if isReplicaLine(k) && strings.Contains(","+v+",", ",state=online,") {
			n.replicasUp++
		}
	}
	cfg, err := c.ConfigGet(ctx, "appendfsync").Result()
	switch {
	case isReply(err):
		n.configDenied = true
	case err != nil:
		return n, err
	default:
		n.appendFsync = cfg["appendfsync"]
	}
	// WAIT for no replica is satisfied at once: this only asks whether the command is allowed.
	if err := c.Do(ctx, "wait", 0, 1).Err(); isReply(err) {
		n.waitRefused = true
	} else if err != nil {
		return n, err
	}
	if n.appendOnly && n.appendFsync != "always" {
		// numlocal 0 and numreplicas 0: satisfied at once, so this only asks whether the command exists.
		err := c.Do(ctx, "waitaof", 0, 0, 1).Err()
		if err != nil && !isReply(err) {
			return n, err
		}
		n.waitAOF = err == nil
	}
	return n, nil
}

// nodeName names a primary for a person who must change its settings. A Sentinel-backed client's
// address is go-redis's placeholder "FailoverClient", so such a primary is named by the configured
// master name and sentinels, and by the address it is at now (CLIENT INFO's laddr, Redis 6.2 and later):
// a failover moves it.
func nodeName(ctx context.Context, c *redis.Client, cfg config.Redis) string {
	if cfg.MasterName == "" {
		return c.Options().Addr
	}
	at := ""
	if ci, err := c.ClientInfo(ctx).Result(); err == nil && ci.LAddr != "" {
		at = ci.LAddr + " now; "
	}
	return fmt.Sprintf("Sentinel master %q (%ssentinels %s)", cfg.MasterName, at, strings.Join(cfg.Addrs, ", "))
}

// isReply reports an error reply of the server (a refusal), as opposed to no answer.
func isReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// isReplicaLine reports INFO replication's "slave<n>" keys, one per connected replica.
func isReplicaLine(k string) bool {
	n, ok := strings.CutPrefix(k, "slave")
	_, err := strconv.Atoi(n)
	return ok && n != "" && err == nil
}

// infoFields reads INFO's "key:value" lines.
func infoFields(info string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(k, "#") {
			out[k] = v
		}
	}
	return out
}

// judge says whether nodes can keep level's promise, and if not, why and what to change.
func judge(nodes []nodeFacts, level config.Durability) *Unmet {
	if level == config.DurabilityUnchecked {
		return nil
	}
	u := &Unmet{Level: level}
	needsAOF := level != config.DurabilityReplicated
	for _, n := range nodes {
		if n.infoRefused {
			u.add(ReasonUnverifiable, fmt.Sprintf("Redis %s refuses INFO, so the service cannot see whether it keeps what it stores: allow INFO (and CONFIG GET) to the service's Redis user", n.name))
			continue
		}
		if needsAOF && !n.appendOnly {
			u.add(ReasonAppendOnlyOff, fmt.Sprintf("Redis %s has appendonly no, so an acknowledged submission would not survive a restart of Redis: set appendonly yes (CONFIG SET appendonly yes, and in redis.conf so that a restart keeps it), or choose forms.durability replicated on a store with replicas and failover", n.name))
		}
		if needsAOF && n.appendOnly && n.aofStarting {
			u.add(ReasonAOFStarting, fmt.Sprintf("Redis %s is writing its first append-only file since appendonly was turned on (aof_rewrite_in_progress, aof_last_bgrewrite_status), and a restart before it ends loses what is written meanwhile: wait for the rewrite to end (INFO persistence), or find why it fails in Redis's log", n.name))
		}
		if needsAOF && n.appendOnly && n.aofWriteFailed {
			u.add(ReasonAOFWriteFailed, fmt.Sprintf("Redis %s failed its last write to the append-only file (aof_last_write_status:err): check its disk (space, permissions) in Redis's log", n.name))
		}
		if n.evicts() {
			u.add(ReasonEviction, fmt.Sprintf("Redis %s may evict keys (maxmemory %d with maxmemory-policy %s), dropping stored submissions: set maxmemory-policy noeviction (a full store then refuses writes, answered 502)", n.name, n.maxmemory, n.policy))
		}
		if level == config.DurabilityMachine && n.appendOnly && n.appendFsync != "always" && !n.waitAOF {
			if n.configDenied {
				u.add(ReasonNoFsync, fmt.Sprintf("Redis %s refuses CONFIG GET, so its appendfsync is unknown, and it has no WAITAOF (Redis 7.2 or later): run Redis 7.2 or later, or allow CONFIG GET and set appendfsync always", n.name))
			} else {
				u.add(ReasonNoFsync, fmt.Sprintf("Redis %s fsyncs its append-only file with appendfsync %s and has no WAITAOF (Redis 7.2 or later) to wait for it: set appendfsync always, or run Redis 7.2 or later", n.name, n.appendFsync))
			}
		}
		if waitsForReplica(level) && n.waitRefused {
			u.add(ReasonWaitRefused, fmt.Sprintf("Redis %s refuses WAIT, which forms.durability %s sends after every write to wait for a replica: allow WAIT to the service's Redis user, or choose a level that does not wait for a replica", n.name, level))
		}
		if waitsForReplica(level) && n.replicasUp == 0 {
			u.add(ReasonNoReplica, fmt.Sprintf("Redis %s has no replica online, which forms.durability %s waits for (WAIT 1): add a replica (Sentinel, Cluster, or REPLICAOF on a second server) or choose a lower level", n.name, level))
		}
	}
	if len(u.Reasons) == 0 {
		return nil
	}
	return u
}

// waitsForReplica reports the levels whose answer waits for a replica (WAIT 1).
func waitsForReplica(l config.Durability) bool {
	return l == config.DurabilityPrimary || l == config.DurabilityReplicated
}

// waitsForFsync reports the level whose answer waits for the primary's fsync (WAITAOF 1 0).
func waitsForFsync(l config.Durability) bool { return l == config.DurabilityMachine }

// answerWaits reports the levels whose answer waits after the write (an Idempotency-Key is then in
// flight until it is decided).
func answerWaits(l config.Durability) bool { return waitsForFsync(l) || waitsForReplica(l) }

// fsynced reads the answer of WAITAOF (numlocal, numreplicas): the primary fsynced.
func fsynced(wait *redis.Cmd) bool {
	v, err := wait.Int64Slice()
	return err == nil && len(v) == 2 && v[0] >= 1
}

// replicated reads the answer of WAIT: a replica has the write.
func replicated(wait *redis.Cmd) bool {
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
	return nil, fmt.Errorf("forms.durability needs a single Redis, Sentinel or Cluster client, not %T", rdb)
}

// levels are the durability levels from weakest to strongest (a batch that mixes them during a reload
// waits as its strongest asks, and for an fsync too when one of them is machine: see batcher.run).
var levels = [...]config.Durability{config.DurabilityUnchecked, config.DurabilityProcess, config.DurabilityMachine,
	config.DurabilityReplicated, config.DurabilityPrimary}

// levelIndex is l's place in levels; an unknown level (the configuration refuses it) is process's.
func levelIndex(l config.Durability) int {
	for i, have := range levels {
		if have == l {
			return i
		}
	}
	return 1
}

// stronger is the stricter of two durability levels.
func stronger(a, b config.Durability) config.Durability {
	if levelIndex(b) > levelIndex(a) {
		return b
	}
	return a
}

// NotDurableError: the write was made but not acknowledged at the level asked for within the bound.
type NotDurableError struct{ Level config.Durability }

func (e NotDurableError) Error() string {
	return "the write was not acknowledged at durability " + string(e.Level) + " in time"
}
