package redisha

import (
	"context"
	"strings"
	"testing"
	"time"
)

func testNode(self int) Node {
	return Node{
		Nodes:      []string{"fs-redis-0.shop.svc:6379", "fs-redis-1.shop.svc:6379", "fs-redis-2.shop.svc:6379"},
		Sentinels:  []string{"fs-redis-0.shop.svc:26379", "fs-redis-1.shop.svc:26379", "fs-redis-2.shop.svc:26379"},
		Self:       self,
		MasterName: "formsservice",
		Password:   "pw",
		Include:    "/etc/redis/redis.conf",
		Dir:        "/ha",
	}
}

func TestRedisConf_ReplicaOfTheOtherPrimary_NoneForThePrimaryItself(t *testing.T) {
	n := testNode(1)
	got := RedisConf(n, "fs-redis-2.shop.svc:6379")
	for _, want := range []string{"include /etc/redis/redis.conf\n", "masterauth pw\n", "replica-announce-ip fs-redis-1.shop.svc\n",
		"replica-announce-port 6379\n", "replicaof fs-redis-2.shop.svc 6379\n", "min-replicas-to-write 1\n", "min-replicas-max-lag 10\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("redis.conf lacks %q:\n%s", want, got)
		}
	}
	if !strings.HasPrefix(strings.SplitN(got, "\n", 3)[1], "include ") {
		t.Errorf("the include is not first, so it could override what follows:\n%s", got)
	}
	if got := RedisConf(n, n.Nodes[1]); strings.Contains(got, "replicaof") {
		t.Errorf("the primary's redis.conf has replicaof:\n%s", got)
	}
}

func TestSentinelConf_NamesByHostnameQuorumMajorityPasswordEverywhere(t *testing.T) {
	got := SentinelConf(testNode(2), "fs-redis-0.shop.svc:6379")
	for _, want := range []string{"port 26379\n", "dir /ha\n", "sentinel announce-ip fs-redis-2.shop.svc\n", "sentinel announce-port 26379\n",
		"sentinel monitor formsservice fs-redis-0.shop.svc 6379 2\n", "sentinel down-after-milliseconds formsservice 5000\n",
		"sentinel failover-timeout formsservice 60000\n", "sentinel auth-pass formsservice pw\n", "requirepass pw\n", "sentinel sentinel-pass pw\n",
		"sentinel known-replica formsservice fs-redis-1.shop.svc 6379\n", "sentinel known-replica formsservice fs-redis-2.shop.svc 6379\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("sentinel.conf lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "known-replica formsservice fs-redis-0.shop.svc") {
		t.Errorf("the primary is among the known replicas:\n%s", got)
	}
	// Sentinel refuses a host name in "sentinel monitor" unless resolve-hostnames comes before it, and a
	// known replica before the monitor line that names its primary.
	if strings.Index(got, "sentinel known-replica") < strings.Index(got, "sentinel monitor") {
		t.Errorf("a known replica before the monitor line:\n%s", got)
	}
	if r, m := strings.Index(got, "sentinel resolve-hostnames yes"), strings.Index(got, "sentinel monitor"); r < 0 || r > m {
		t.Errorf("resolve-hostnames missing or after monitor:\n%s", got)
	}
}

func TestValidate_RefusesWhatAConfigurationLineCannotHold(t *testing.T) {
	for name, mutate := range map[string]func(*Node){
		"no nodes":            func(n *Node) { n.Nodes, n.Sentinels = nil, nil },
		"fewer sentinels":     func(n *Node) { n.Sentinels = n.Sentinels[:2] },
		"self out of range":   func(n *Node) { n.Self = 3 },
		"negative self":       func(n *Node) { n.Self = -1 },
		"master name spaced":  func(n *Node) { n.MasterName = "a b" },
		"no master name":      func(n *Node) { n.MasterName = "" },
		"password with space": func(n *Node) { n.Password = "a b" },
		"password newline":    func(n *Node) { n.Password = "a\nrequirepass x" },
		"address no port":     func(n *Node) { n.Nodes[0] = "fs-redis-0" },
		"address port 0":      func(n *Node) { n.Sentinels[1] = "h:0" },
		"address newline":     func(n *Node) { n.Nodes[2] = "h\nx:1" },
	} {
		n := testNode(0)
		n.Nodes = append([]string(nil), n.Nodes...)
		n.Sentinels = append([]string(nil), n.Sentinels...)
		mutate(&n)
		if err := n.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := testNode(0).Validate(); err != nil {
		t.Errorf("a valid node: %v", err)
	}
}

func TestWaitResolvable_AnIPAtOnce_ANameThatNeverResolvesUntilTheDeadline(t *testing.T) {
	if err := waitResolvable(t.Context(), "127.0.0.1:6379"); err != nil {
		t.Errorf("an address: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if err := waitResolvable(ctx, "no-such-pod.invalid:6379"); err == nil || !strings.Contains(err.Error(), "does not resolve") {
		t.Errorf("a name in .invalid (RFC 6761): %v", err)
	}
}
