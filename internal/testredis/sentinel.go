package testredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/redis/go-redis/v9"
)

// MasterName is the name the sentinels of StartReplicated monitor their master under.
const MasterName = "mymaster"

// SentinelBinary finds redis-sentinel: $REDIS_SENTINEL, the repository's bin/, or PATH.
func SentinelBinary(tb testing.TB) string {
	return find(tb, "REDIS_SENTINEL", "redis-sentinel")
}

// Sentinel is a replicated Redis watched by real redis-sentinel processes, all on loopback: the
// bring-your-own HA set-up a Redis operator or a cloud service provides.
type Sentinel struct {
	tb testing.TB
	// Nodes are the data nodes; Nodes[0] starts as the master, the others as its replicas.
	Nodes []*Server
	// Sentinels watch Nodes[0] under MasterName with a quorum of a majority.
	Sentinels []*Server

	password, sentinelPassword string // of the data nodes and of the sentinels, when set
}

// sentinelClient talks to one sentinel.
func (st *Sentinel) sentinelClient(s *Server) *redis.SentinelClient {
	return redis.NewSentinelClient(&redis.Options{Addr: s.Addr(), Password: st.sentinelPassword, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
}

// StartReplicated starts a master, replicas replicas of it and sentinels sentinels (quorum: a majority)
// that declare the master down after downAfter without an answer. It returns once every replica has
// synced and every sentinel knows the replicas and the other sentinels, so that a failover can start
// at once.
func StartReplicated(tb testing.TB, replicas, sentinels int, downAfter time.Duration) *Sentinel {
	tb.Helper()
	return StartReplicatedWith(tb, Replication{Replicas: replicas, Sentinels: sentinels, DownAfter: downAfter})
}

// Replication describes a replicated Redis watched by sentinels (StartReplicatedWith).
type Replication struct {
	Replicas, Sentinels int
	// DownAfter is how long a master may not answer before the sentinels declare it down.
	DownAfter time.Duration
	// Node are the data nodes' options (persistence, a password); Unix and TLS are not for them.
	Node Options
	// SentinelPassword, when set, is required of the sentinels' clients (requirepass in sentinel.conf),
	// and the sentinels use it towards each other (sentinel sentinel-pass).
	SentinelPassword string
}

// StartReplicatedWith is StartReplicated with the nodes' and the sentinels' options. A Node.Password is
// given to the sentinels too (sentinel auth-pass), so that they can watch the master. Under `go test
// -short` (make test-fast) it skips the test: replication and failover are no unit test.
func StartReplicatedWith(tb testing.TB, r Replication) *Sentinel {
	tb.Helper()
	if testing.Short() {
		tb.Skip("needs a replicated Redis with Sentinels: not run under -short (make test-fast); make test runs it")
	}
	// Replicas sync at once instead of after Redis' default 5 s delay.
	node := r.Node
	node.Args = append([]string{"--repl-diskless-sync-delay", "0"}, node.Args...)
	st := &Sentinel{tb: tb, password: r.Node.Password, sentinelPassword: r.SentinelPassword}
	master := Start(tb, node)
	st.Nodes = append(st.Nodes, master)
	host, port, _ := net.SplitHostPort(master.Addr())
	for range r.Replicas {
		replica := node
		replica.Args = append([]string{"--replicaof", host, port}, node.Args...)
		st.Nodes = append(st.Nodes, Start(tb, replica))
	}
	bin := SentinelBinary(tb)
	quorum := r.Sentinels/2 + 1
	for range r.Sentinels {
		s := &Server{tb: tb, bin: bin, dir: tb.TempDir(), opts: Options{Password: r.SentinelPassword}}
		s.conf = filepath.Join(s.dir, "sentinel.conf")
		s.sentinel = "sentinel monitor " + MasterName + " " + host + " " + port + " " + strconv.Itoa(quorum) + "\n" +
			"sentinel down-after-milliseconds " + MasterName + " " + strconv.FormatInt(r.DownAfter.Milliseconds(), 10) + "\n" +
			"sentinel failover-timeout " + MasterName + " 10000\n" +
			"sentinel parallel-syncs " + MasterName + " 1\n"
		if p := r.Node.Password; p != "" {
			s.sentinel += "sentinel auth-pass " + MasterName + " " + p + "\n"
		}
		if p := r.SentinelPassword; p != "" {
			s.sentinel += "requirepass " + p + "\nsentinel sentinel-pass " + p + "\n"
		}
		s.ready = []string{"+monitor master " + MasterName}
		s.startRetrying()
		st.Sentinels = append(st.Sentinels, s)
	}
	st.waitReady(r.Replicas, r.Sentinels-1, 30*time.Second)
	return st
}

// Addrs lists the sentinels' host:port (what a client is configured with).
func (st *Sentinel) Addrs() []string {
	var out []string
	for _, s := range st.Sentinels {
		out = append(out, s.Addr())
	}
	return out
}

// Master asks the sentinels which node is the master now (the first that answers).
func (st *Sentinel) Master() *Server {
	st.tb.Helper()
	addr, err := st.masterAddr()
	if err != nil {
		st.tb.Fatalf("sentinel get-master-addr-by-name: %v", err)
	}
	for _, n := range st.Nodes {
		if n.Addr() == addr {
			return n
		}
	}
	st.tb.Fatalf("the sentinels name %s, which is none of the nodes", addr)
	return nil
}

func (st *Sentinel) masterAddr() (string, error) {
	var last error
	for _, s := range st.Sentinels {
		c := st.sentinelClient(s)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		hp, err := c.GetMasterAddrByName(ctx, MasterName).Result()
		cancel()
		c.Close()
		if err == nil && len(hp) == 2 {
			return net.JoinHostPort(hp[0], hp[1]), nil
		}
		last = err
	}
	return "", fmt.Errorf("no sentinel named the master: %v", last)
}

// WaitFailover waits until every sentinel names a master other than old and that node says it is the
// master, and returns the new master and when that was first seen.
func (st *Sentinel) WaitFailover(old *Server, within time.Duration) (*Server, time.Time) {
	st.tb.Helper()
	var promoted *Server
	testwait.Until(st.tb, within, "a failover away from "+old.Addr(), func() error {
		agreed := ""
		for _, s := range st.Sentinels {
			c := st.sentinelClient(s)
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			hp, err := c.GetMasterAddrByName(ctx, MasterName).Result()
			cancel()
			c.Close()
			if err != nil || len(hp) != 2 {
				agreed = ""
				break
			}
			a := net.JoinHostPort(hp[0], hp[1])
			if agreed != "" && a != agreed {
				agreed = ""
				break
			}
			agreed = a
		}
		if agreed == "" || agreed == old.Addr() {
			return fmt.Errorf("the sentinels agree on %q", agreed)
		}
		for _, n := range st.Nodes {
			if n.Addr() == agreed && role(n) == "master" {
				promoted = n
				return nil
			}
		}
		return fmt.Errorf("the sentinels name %s, which is not a master yet", agreed)
	})
	return promoted, time.Now()
}

// WaitReplicaOf waits until n is a replica of master with its link up and its first sync done.
func (st *Sentinel) WaitReplicaOf(n, master *Server, within time.Duration) {
	st.tb.Helper()
	testwait.Until(st.tb, within, n.Addr()+" a synced replica of "+master.Addr(), func() error {
		if ok, info := isSyncedReplicaOf(n, master); !ok {
			return errors.New(info)
		}
		return nil
	})
}

// WaitReplicated waits until the node the sentinels name as master says it is the master and has at
// least n synced replicas among the nodes, and returns it. Whichever node the sentinels name counts: on
// a busy machine a sentinel can miss a down-after period and fail over again, which a client must take
// as it comes (and the durability tests then judge by what was acknowledged).
func (st *Sentinel) WaitReplicated(n int, within time.Duration) *Server {
	st.tb.Helper()
	var master *Server
	testwait.Until(st.tb, within, fmt.Sprintf("a master with %d synced replicas", n), func() error {
		addr, err := st.masterAddr()
		if err != nil {
			return err
		}
		for _, m := range st.Nodes {
			if m.Addr() != addr {
				continue
			}
			synced := 0
			for _, r := range st.Nodes {
				if ok, _ := isSyncedReplicaOf(r, m); r != m && ok {
					synced++
				}
			}
			if role(m) == "master" && synced >= n {
				master = m
				return nil
			}
			return fmt.Errorf("the sentinels name %s (role %q) with %d synced replicas", addr, role(m), synced)
		}
		return fmt.Errorf("the sentinels name %s, not one of the nodes", addr)
	})
	return master
}

// isSyncedReplicaOf reports whether n is a replica of master with its link up and its first sync done,
// and n's replication INFO.
func isSyncedReplicaOf(n, master *Server) (bool, string) {
	_, port, _ := net.SplitHostPort(master.Addr())
	info := info(n, "replication")
	return strings.Contains(info, "role:slave") && strings.Contains(info, "master_port:"+port+"\r") &&
		strings.Contains(info, "master_link_status:up") && strings.Contains(info, "master_sync_in_progress:0"), info
}

// waitReady waits until the replicas have synced and every sentinel sees them and the other sentinels.
func (st *Sentinel) waitReady(replicas, otherSentinels int, within time.Duration) {
	st.tb.Helper()
	for _, n := range st.Nodes[1:] {
		st.WaitReplicaOf(n, st.Nodes[0], within)
	}
	what := fmt.Sprintf("every sentinel to see %d replicas and %d other sentinels", replicas, otherSentinels)
	testwait.Until(st.tb, within, what, func() error {
		for _, s := range st.Sentinels {
			c := st.sentinelClient(s)
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			m, err := c.Master(ctx, MasterName).Result()
			cancel()
			c.Close()
			if err != nil || m["num-slaves"] != strconv.Itoa(replicas) || m["num-other-sentinels"] != strconv.Itoa(otherSentinels) {
				return fmt.Errorf("sentinel %s: %v %v", s.Addr(), m, err)
			}
		}
		return nil
	})
}

// role is the node's INFO role, or "" when it does not answer.
func role(n *Server) string {
	for _, line := range strings.Split(info(n, "replication"), "\n") {
		if r, ok := strings.CutPrefix(strings.TrimSpace(line), "role:"); ok {
			return r
		}
	}
	return ""
}

func info(n *Server, section string) string {
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), Password: n.opts.Password, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	s, _ := c.Info(ctx, section).Result()
	return s
}
