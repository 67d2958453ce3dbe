package redisha

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The operator's side of a planned restart (docs/operator.md, "Rolling the highly available Redis"):
// what the nodes and sentinels say now (Observe), and the hand-over of the primary to a replica before
// its pod restarts (Switchover). Both are asked by the operator from its reconcile, over the network,
// as the services reach the set: the per-pod names and the one password.

// NodeState is what one data node says of itself (ROLE).
type NodeState struct {
	// Addr is the node's host:port, as in Node.Nodes.
	Addr string
	// Err is why the node did not answer ("" when it did).
	Err string
	// Role is "master" or "slave" (Redis's words), "" when it did not answer.
	Role string
	// Offset is a primary's replication offset, or the offset a replica has processed.
	Offset int64
	// Following is a replica's primary (host:port), and Linked whether its link to it is up.
	Following string
	Linked    bool
	// Replicas are a primary's connected replicas (host:port) and the offset each acknowledged.
	Replicas map[string]int64
}

// SetState is what the set says about itself at one moment.
type SetState struct {
	// Nodes are the data nodes' answers, in the order of Node.Nodes.
	Nodes []NodeState
	// Primary is the node the answering sentinels name (the answer of the highest configuration
	// epoch), "" when none answered.
	Primary string
	// FailoverInProgress says that a sentinel reports a failover of the primary under way.
	FailoverInProgress bool
	// Sentinels is how many sentinels answered.
	Sentinels int
}

// Observe asks every node its ROLE and every sentinel its primary. It never fails: what did not answer
// is recorded as such, and the caller decides what that allows.
func Observe(ctx context.Context, n Node) SetState {
	st := SetState{Nodes: make([]NodeState, len(n.Nodes))}
	masters := make([]map[string]string, len(n.Sentinels))
	// Every question at once: a set the operator cannot reach costs one timeout, not six.
	var wg sync.WaitGroup
	for i, a := range n.Nodes {
		wg.Go(func() { st.Nodes[i] = nodeState(ctx, n, a) })
	}
	for i, s := range n.Sentinels {
		wg.Go(func() {
			c := redis.NewSentinelClient(&redis.Options{Addr: s, Password: n.Password, DialTimeout: time.Second,
				ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1, Dialer: n.Dial})
			defer c.Close()
			actx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			if m, err := c.Master(actx, n.MasterName).Result(); err == nil && m["ip"] != "" && m["port"] != "" {
				masters[i] = m
			}
		})
	}
	wg.Wait()
	best := int64(-1)
	for _, m := range masters {
		if m == nil {
			continue
		}
		st.Sentinels++
		if strings.Contains(m["flags"], "failover_in_progress") {
			st.FailoverInProgress = true
		}
		epoch, _ := strconv.ParseInt(m["config-epoch"], 10, 64)
		if epoch > best {
			best, st.Primary = epoch, net.JoinHostPort(m["ip"], m["port"])
		}
	}
	return st
}

// nodeState is one node's ROLE, read into a NodeState.
func nodeState(ctx context.Context, n Node, addr string) NodeState {
	ns := NodeState{Addr: addr}
	c := nodeClient(n, addr)
	defer c.Close()
	actx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	role, err := c.Do(actx, "ROLE").Slice()
	if err != nil || len(role) == 0 {
		ns.Err = fmt.Sprint(cmpErr(err, errors.New("an empty ROLE")))
		return ns
	}
	ns.Role, _ = role[0].(string)
	switch ns.Role {
	case "master":
		if len(role) >= 3 {
			ns.Offset = asInt(role[1])
			ns.Replicas = map[string]int64{}
			if rs, ok := role[2].([]any); ok {
				for _, r := range rs {
					f, ok := r.([]any)
					if !ok || len(f) < 3 {
						continue
					}
					host, _ := f[0].(string)
					port, _ := f[1].(string)
					ns.Replicas[net.JoinHostPort(host, port)] = asInt(f[2])
				}
			}
		}
	case "slave":
		if len(role) >= 5 {
			host, _ := role[1].(string)
			ns.Following = net.JoinHostPort(host, strconv.FormatInt(asInt(role[2]), 10))
			state, _ := role[3].(string)
			ns.Linked = state == "connected"
			ns.Offset = asInt(role[4])
		}
	}
	return ns
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// asInt reads an integer RESP reply, which ROLE gives as a number or as a string.
func asInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		i, _ := strconv.ParseInt(x, 10, 64)
		return i
	}
	return 0
}

func nodeClient(n Node, addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, Password: n.Password, DialTimeout: time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: time.Second, MaxRetries: -1, Dialer: n.Dial})
}

// Times of a switchover.
const (
	// SwitchoverPause is how long the primary holds writes while it hands over: its replicas catch up
	// with it, the sentinels promote one, and the old primary follows it. Sentinel's down-after (5 s)
	// is longer: its pings to the paused primary wait behind its own PUBLISH, and must not take it for
	// down meanwhile.
	SwitchoverPause = 4 * time.Second
	// catchUp bounds the wait for the replicas to have every write of the paused primary.
	catchUp = time.Second
)

// Switchover hands the primary at primary over to a replica, so that its pod can restart without a
// failover: it pauses the writes on the primary (CLIENT PAUSE WRITE: a writer waits, nothing is
// refused), waits until every connected replica has the primary's last write, asks a sentinel
// for a failover (SENTINEL FAILOVER), waits until the replica the sentinel chose answers as a primary,
// and makes the old primary its replica at once (REPLICAOF; Sentinel would do it some seconds later, and meanwhile
// the old primary would take writes its remaining replica could acknowledge and then drop), before it
// lifts the pause. A writer that waited then gets READONLY from the old primary and retries through the
// sentinels: no write is acknowledged that the new primary lacks. It returns the promoted node.
//
// On an error before the failover was asked for, the pause is lifted and nothing changed. When the
// sentinel promotes no replica within the pause, the pause is lifted (or ends by itself) and the error
// says so; the caller observes the set again before it does anything else (the sentinels may still
// finish the failover: the old primary then becomes a replica when they reconfigure it).
func Switchover(ctx context.Context, n Node, primary string) (string, error) {
	pc := nodeClient(n, primary)
	defer pc.Close()
	if err := pc.Do(ctx, "CLIENT", "PAUSE", SwitchoverPause.Milliseconds(), "WRITE").Err(); err != nil {
		return "", fmt.Errorf("pausing the writes on %s: %w", primary, err)
	}
	unpause := func() { _ = pc.Do(context.WithoutCancel(ctx), "CLIENT", "UNPAUSE").Err() }
	deadline := time.Now().Add(SwitchoverPause - 500*time.Millisecond)

	// Every connected replica has every write: whichever the sentinels promote lacks none.
	caughtUp := time.Now().Add(catchUp)
	for {
		ns := nodeState(ctx, n, primary)
		if ns.Role != "master" {
			unpause()
			return "", fmt.Errorf("%s is no longer the primary (%s%s)", primary, ns.Role, ns.Err)
		}
		behind := ""
		for r, acked := range ns.Replicas {
			// The primary learns a replica's offset from its acknowledgement, once a second; the
			// replica's own ROLE says at once what it has processed.
			if off := max(acked, nodeState(ctx, n, r).Offset); off < ns.Offset {
				behind = fmt.Sprintf("%s at offset %d of %d", r, off, ns.Offset)
			}
		}
		if len(ns.Replicas) > 0 && behind == "" {
			break
		}
		if time.Now().After(caughtUp) {
			unpause()
			if behind == "" {
				return "", fmt.Errorf("%s has no connected replica", primary)
			}
			return "", fmt.Errorf("the replicas did not catch up with %s within %s: %s", primary, catchUp, behind)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			unpause()
			return "", err
		}
	}

	if err := askFailover(ctx, n); err != nil {
		unpause()
		return "", err
	}
	// The sentinel's REPLICAOF NO ONE makes the replica it chose a primary at once; the sentinels name it
	// only once they reconfigured the other replica too. The old primary follows it as soon as it is one.
	for {
		for _, a := range n.Nodes {
			if a == primary || nodeState(ctx, n, a).Role != "master" {
				continue
			}
			host, port, _ := net.SplitHostPort(a)
			if err := pc.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
				unpause()
				return a, fmt.Errorf("%s promoted; making %s its replica: %w", a, primary, err)
			}
			// The writers keep waiting until the sentinels name the new primary (their +switch-master
			// moves the services' clients there), within the pause: lifted earlier, each would write to
			// the old primary once more and be refused (READONLY).
			for time.Now().Before(deadline) && Observe(ctx, n).Primary != a {
				if err := sleep(ctx, 50*time.Millisecond); err != nil {
					break
				}
			}
			unpause()
			return a, nil
		}
		if time.Now().After(deadline) {
			unpause()
			return "", fmt.Errorf("no replica was promoted within %s of the failover request", SwitchoverPause)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			unpause()
			return "", err
		}
	}
}

// askFailover asks the first sentinel that takes it for a failover of the primary.
func askFailover(ctx context.Context, n Node) error {
	var errs []error
	for _, s := range n.Sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: s, Password: n.Password, DialTimeout: time.Second,
			ReadTimeout: 2 * time.Second, WriteTimeout: time.Second, MaxRetries: -1, Dialer: n.Dial})
		err := c.Failover(ctx, n.MasterName).Err()
		_ = c.Close()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("sentinel %s: %w", s, err))
	}
	return fmt.Errorf("no sentinel took the failover: %w", errors.Join(errs...))
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
