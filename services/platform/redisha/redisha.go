// Package redisha starts one pod of the operator's highly available Redis (docs/architecture.md, D41):
// it asks the sentinels which node is the primary now and writes the Redis and Sentinel configuration
// files for this node, as a replica of that primary or as the primary itself. The operator runs it as
// the init container of every Redis pod (`formsservice redis-ha-config`), so a pod that restarts
// rejoins whichever node was promoted meanwhile instead of coming up as a second primary.
package redisha

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of the Sentinel settings (docs/operator.md, "High availability").
const (
	// DownAfter is how long the primary may not answer before a sentinel takes it for down.
	DownAfter = 5 * time.Second
	// FailoverTimeout bounds one failover attempt (and the wait before another on the same primary).
	FailoverTimeout = 60 * time.Second
)

// The write guard of every node (RedisConf): the primary takes a write only with MinReplicasToWrite
// replicas that answered within MinReplicasMaxLag seconds.
const (
	MinReplicasToWrite = 1
	MinReplicasMaxLag  = 10
)

// Node is this pod's place in the set.
type Node struct {
	// Nodes are the data nodes' host:port, in ordinal order: Nodes[0] is the primary of a new set.
	Nodes []string
	// Sentinels are the sentinels' host:port, one beside each node, in the same order.
	Sentinels []string
	// Self is this pod's index in Nodes and Sentinels.
	Self int
	// MasterName is the name the sentinels monitor the primary under.
	MasterName string
	// Password is the data nodes' and the sentinels' password (requirepass, masterauth, auth-pass).
	Password string
	// Quorum is how many sentinels must agree the primary is down (default: a majority).
	Quorum int
	// DownAfter and FailoverTimeout default to the package's constants.
	DownAfter, FailoverTimeout time.Duration
	// Include is a Redis configuration file the generated one includes first (port, persistence,
	// memory), or "".
	Include string
	// Dir is the sentinel's working directory ("" leaves Redis's default).
	Dir string
	// LastPrimary is the primary this pod's sentinel monitored when it stopped, and LastEpoch and
	// LastCurrentEpoch its configuration and current epochs ("" and 0: none known). Write reads them
	// from the sentinel.conf the sentinel left (it rewrites the file as it learns), which the operator's
	// pods keep on their claim.
	LastPrimary                 string
	LastEpoch, LastCurrentEpoch int64
	// Dial, when set, connects to the nodes and sentinels (Observe, Switchover) instead of the network.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Validate says what is wrong with n.
func (n Node) Validate() error {
	switch {
	case len(n.Nodes) == 0 || len(n.Nodes) != len(n.Sentinels):
		return fmt.Errorf("want as many sentinels as nodes, and at least one (%d nodes, %d sentinels)", len(n.Nodes), len(n.Sentinels))
	case n.Self < 0 || n.Self >= len(n.Nodes):
		return fmt.Errorf("self %d is not the index of one of the %d nodes", n.Self, len(n.Nodes))
	case n.MasterName == "" || strings.ContainsAny(n.MasterName, " \t\r\n\""):
		return fmt.Errorf("master name %q: want a word", n.MasterName)
	case strings.ContainsAny(n.Password, " \t\r\n\"'\\"):
		return errors.New("the password holds a space, quote or backslash, which a configuration line cannot hold as is")
	}
	for _, a := range append(append([]string(nil), n.Nodes...), n.Sentinels...) {
		if _, _, err := splitHostPort(a); err != nil {
			return err
		}
	}
	return nil
}

func splitHostPort(a string) (string, int, error) {
	h, p, err := net.SplitHostPort(a)
	if err != nil || h == "" || strings.ContainsAny(h, " \t\r\n\"") {
		return "", 0, fmt.Errorf("address %q: want host:port", a)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("address %q: want host:port", a)
	}
	return h, port, nil
}

// Primary is what the start decided: the node this one replicates from, or itself.
type Primary struct {
	// Addr is the primary's host:port.
	Addr string
	// From says where the answer came from: "sentinel <addr> (epoch N)", "node <addr>" (it said it is a
	// primary; no sentinel answered) or "default" (a new set: nobody answered).
	From string
}

// FindPrimary asks the other nodes' sentinels which node is the primary now. Of the sentinels that
// answer it takes the answer of the highest configuration epoch (a sentinel cut off from the others
// during a failover still names the old primary, under the older epoch), and follows that answer only
// when the node answers as a primary, or no other node does (confirm). When they name this node
// itself, the primary is down — this runs before its Redis starts — and a pod restarted faster than
// the sentinels' down-after period would otherwise come back as the primary with no failover at all,
// so it waits for the failover (up to the failover timeout, then it starts as the primary after all:
// no replica could take over). When no sentinel answers, a node that says it is a primary is followed;
// when none does either, the set is new (or restarting whole) and Nodes[0] is the primary, which the
// other nodes wait for, up to the failover timeout.
func FindPrimary(ctx context.Context, n Node) (Primary, error) {
	if err := n.Validate(); err != nil {
		return Primary{}, err
	}
	deadline := time.Now().Add(orDefault(n.FailoverTimeout, FailoverTimeout))
	for {
		p, ok := askSentinels(ctx, n)
		if !ok {
			if p, ok := askNodes(ctx, n); ok {
				return p, nil
			}
			// Nobody answers: the whole set is restarting, or new. The primary of the last epoch this
			// pod's sentinel knew keeps its place: that node starts as the primary at once, the others
			// wait for it. Without that (a new set, a lost claim), Nodes[0] is the primary.
			last := slices.Index(n.Nodes, n.LastPrimary)
			if last >= 0 && last == n.Self {
				return Primary{Addr: n.LastPrimary, From: fmt.Sprintf("state (the primary at epoch %d when this pod stopped)", n.LastEpoch)}, nil
			}
			if (last < 0 && n.Self == 0) || time.Now().After(deadline) {
				return Primary{Addr: n.Nodes[0], From: "default"}, nil
			}
			// Nobody answers: a new set, or the whole set restarting, with every pod starting at once
			// (Parallel). The others wait for Nodes[0] to answer: a sentinel started before it would take
			// it for down, try a failover no replica can take, and then hold off sentinel's next try
			// (twice the failover timeout) when the primary really fails.
			if err := pause(ctx); err != nil {
				return Primary{}, err
			}
			continue
		}
		if p.Addr != n.Nodes[n.Self] {
			return confirm(ctx, n, p), nil
		}
		if time.Now().After(deadline) {
			p.From += ", no failover within the failover timeout"
			return p, nil
		}
		if err := pause(ctx); err != nil {
			return Primary{}, err
		}
	}
}

// confirm checks the sentinels' answer p (another node) against the node itself. A primary that answers
// ROLE master is followed. One that does not while another node does is a stale answer: the sentinels
// that answered missed a failover (cut off from the others, or the only ones left with an older view), and
// following it would start this node as a replica of a replica or of a dead node. The node that says it is
// the primary is followed instead, and the sentinel beside this one learns the new epoch from the others.
// When no node answers as a primary, p is down or being replaced: it is followed all the same, so that
// this pod's sentinel starts and adds its vote to the failover that re-points this node (waiting here
// would withhold the vote that a majority may need).
func confirm(ctx context.Context, n Node, p Primary) Primary {
	if isPrimary(ctx, n, p.Addr) {
		return p
	}
	if q, ok := askNodes(ctx, n); ok && q.Addr != p.Addr {
		q.From += fmt.Sprintf(" (ROLE master; %s named %s, which is not a primary now)", p.From, p.Addr)
		return q
	}
	return p
}

// pause is the wait between two rounds of questions.
func pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(500 * time.Millisecond):
		return nil
	}
}

// askSentinels is one round of SENTINEL MASTER to every sentinel but this node's own (which is not
// running yet), and the answer of the highest configuration epoch.
func askSentinels(ctx context.Context, n Node) (p Primary, ok bool) {
	best := int64(-1)
	for i, s := range n.Sentinels {
		if i == n.Self {
			continue
		}
		c := redis.NewSentinelClient(&redis.Options{Addr: s, Password: n.Password, DialTimeout: time.Second,
			ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1})
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		m, err := c.Master(actx, n.MasterName).Result()
		cancel()
		_ = c.Close()
		if err != nil || m["ip"] == "" || m["port"] == "" {
			continue
		}
		epoch, _ := strconv.ParseInt(m["config-epoch"], 10, 64)
		if epoch <= best {
			continue
		}
		best, ok = epoch, true
		p = Primary{Addr: net.JoinHostPort(m["ip"], m["port"]), From: fmt.Sprintf("sentinel %s (epoch %d)", s, epoch)}
	}
	return p, ok
}

// askNodes asks the other data nodes for their ROLE and returns the first primary.
func askNodes(ctx context.Context, n Node) (Primary, bool) {
	for i, a := range n.Nodes {
		if i != n.Self && isPrimary(ctx, n, a) {
			return Primary{Addr: a, From: "node " + a}, true
		}
	}
	return Primary{}, false
}

// isPrimary says whether the data node at addr answers ROLE with master.
func isPrimary(ctx context.Context, n Node, addr string) bool {
	c := redis.NewClient(&redis.Options{Addr: addr, Password: n.Password, DialTimeout: time.Second,
		ReadTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	actx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	role, err := c.Do(actx, "ROLE").Slice()
	return err == nil && len(role) > 0 && role[0] == "master"
}

// RedisConf is this node's redis.conf: the included base, the password towards the primary, the
// address it announces (its stable name, not the pod's address of the moment), and replicaof unless
// it is the primary. Sentinel rewrites the file (CONFIG REWRITE) when it promotes or re-points the node.
func RedisConf(n Node, primary string) string {
	var b strings.Builder
	b.WriteString("# Written by formsservice redis-ha-config at the pod's start.\n")
	if n.Include != "" {
		fmt.Fprintf(&b, "include %s\n", n.Include)
	}
	host, port, _ := splitHostPort(n.Nodes[n.Self])
	fmt.Fprintf(&b, "port %d\n", port)
	if n.Password != "" {
		fmt.Fprintf(&b, "masterauth %s\n", n.Password)
	}
	fmt.Fprintf(&b, "replica-announce-ip %s\nreplica-announce-port %d\n", host, port)
	if len(n.Nodes) > 1 {
		// A primary with no replica that answered in the last 10 s refuses writes: a primary cut off from
		// the others (a partition, or the last one standing) acknowledges nothing that a failover on the
		// other side would lose. Replicas ignore it; the forms' durability primary waits for a replica anyway.
		fmt.Fprintf(&b, "min-replicas-to-write %d\nmin-replicas-max-lag %d\n", MinReplicasToWrite, MinReplicasMaxLag)
	}
	if primary != n.Nodes[n.Self] {
		ph, pp, _ := splitHostPort(primary)
		fmt.Fprintf(&b, "replicaof %s %d\n", ph, pp)
	}
	return b.String()
}

// SentinelConf is this node's sentinel.conf, monitoring primary, with the other nodes as its known
// replicas. The sentinels know each other and the nodes by name (resolve-hostnames,
// announce-hostnames): a pod's address changes when it restarts, its name does not, so no sentinel
// keeps a dead address that would count against the majority.
func SentinelConf(n Node, primary string) string {
	host, port, _ := splitHostPort(n.Sentinels[n.Self])
	ph, pp, _ := splitHostPort(primary)
	quorum := n.Quorum
	if quorum <= 0 {
		quorum = len(n.Sentinels)/2 + 1
	}
	var b strings.Builder
	b.WriteString("# Written by formsservice redis-ha-config at the pod's start; Sentinel rewrites it.\n")
	fmt.Fprintf(&b, "port %d\n", port)
	if n.Dir != "" {
		fmt.Fprintf(&b, "dir %s\n", n.Dir)
	}
	b.WriteString("sentinel resolve-hostnames yes\nsentinel announce-hostnames yes\n")
	fmt.Fprintf(&b, "sentinel announce-ip %s\nsentinel announce-port %d\n", host, port)
	fmt.Fprintf(&b, "sentinel monitor %s %s %d %d\n", n.MasterName, ph, pp, quorum)
	if primary == n.LastPrimary && n.LastEpoch > 0 {
		// The epochs it had: after a whole-set restart, two nodes that each think they were the primary
		// (one of them from before a failover it missed) are told apart by the sentinels by epoch, and
		// the older one is turned into a replica. Restarted at epoch 0, they would tie.
		fmt.Fprintf(&b, "sentinel config-epoch %s %d\nsentinel current-epoch %d\n", n.MasterName, n.LastEpoch, max(n.LastEpoch, n.LastCurrentEpoch))
	}
	fmt.Fprintf(&b, "sentinel down-after-milliseconds %s %d\n", n.MasterName, orDefault(n.DownAfter, DownAfter).Milliseconds())
	fmt.Fprintf(&b, "sentinel failover-timeout %s %d\n", n.MasterName, orDefault(n.FailoverTimeout, FailoverTimeout).Milliseconds())
	fmt.Fprintf(&b, "sentinel parallel-syncs %s 1\n", n.MasterName)
	// Every other node is a known replica from the start. A sentinel learns the replicas from the
	// primary's INFO, and a sentinel that starts while the primary is down (its pod lost together with
	// the primary's) would know none: elected to fail over, it would abort for want of a replica, and the
	// sentinels that voted would wait twice the failover timeout before the next try. A name that does
	// not resolve yet is kept and tried again (Sentinel 7.0 and later, Valkey).
	for i, a := range n.Nodes {
		if a == primary {
			continue
		}
		h, p, _ := splitHostPort(n.Nodes[i])
		fmt.Fprintf(&b, "sentinel known-replica %s %s %d\n", n.MasterName, h, p)
	}
	if n.Password != "" {
		fmt.Fprintf(&b, "sentinel auth-pass %s %s\nrequirepass %s\nsentinel sentinel-pass %s\n", n.MasterName, n.Password, n.Password, n.Password)
	}
	return b.String()
}

// Write finds the primary and writes redis.conf and sentinel.conf into dir (mode 0600: they hold the
// password). The sentinel.conf of the last run there, if any, tells it the primary this pod's sentinel
// knew (ReadLast). It returns the primary.
func Write(ctx context.Context, n Node, dir string) (Primary, error) {
	sentinelConf := filepath.Join(dir, "sentinel.conf")
	if prev, err := os.ReadFile(sentinelConf); err == nil {
		n.LastPrimary, n.LastEpoch, n.LastCurrentEpoch = ReadLast(string(prev), n.MasterName)
	} else if !errors.Is(err, os.ErrNotExist) {
		return Primary{}, err
	}
	p, err := FindPrimary(ctx, n)
	if err != nil {
		return Primary{}, err
	}
	// Sentinel refuses to start when the name it is to monitor does not resolve, and a pod's name (its
	// headless Service's) resolves only once the pod has an address in the Service's endpoints.
	if err := waitResolvable(ctx, p.Addr); err != nil {
		return Primary{}, err
	}
	for path, content := range map[string]string{filepath.Join(dir, "redis.conf"): RedisConf(n, p.Addr), sentinelConf: SentinelConf(n, p.Addr)} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return Primary{}, err
		}
	}
	return p, nil
}

// ReadLast reads a sentinel.conf as Sentinel left it (it rewrites the file as it learns): the primary it
// monitored under name (host:port), that primary's configuration epoch and the sentinel's current epoch.
// A file without a monitor line gives "".
func ReadLast(conf, name string) (primary string, epoch, current int64) {
	for _, line := range strings.Split(conf, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && f[0] == "sentinel" && f[1] == "monitor" && f[2] == name:
			primary = net.JoinHostPort(f[3], f[4])
		case len(f) == 4 && f[0] == "sentinel" && f[1] == "config-epoch" && f[2] == name:
			epoch, _ = strconv.ParseInt(f[3], 10, 64)
		case len(f) == 3 && f[0] == "sentinel" && f[1] == "current-epoch":
			current, _ = strconv.ParseInt(f[2], 10, 64)
		}
	}
	return primary, epoch, current
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// waitResolvable waits until the host of addr resolves, or ctx ends.
func waitResolvable(ctx context.Context, addr string) error {
	host, _, _ := splitHostPort(addr)
	for {
		_, err := net.DefaultResolver.LookupHost(ctx, host)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s does not resolve: %w", host, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
