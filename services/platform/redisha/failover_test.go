package redisha_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/redisclient"
	"github.com/formsservice/formsservice/services/platform/redisha"
)

const password = "s3cret-ha-password"

// haSet is three "pods" on loopback, each a redis-server and a sentinel started from the files
// redisha.Write wrote for it, as the operator's init container does.
type haSet struct {
	t         *testing.T
	nodes     []string
	sentinels []string
	dirs      []string
	redis     []*testproc.Process
	sentinel  []*testproc.Process
	// listen is where each address of nodes and sentinels is served: itself, or with a network, the
	// pod's own loopback port behind the network's proxy.
	listen map[string]string
	// net is the network between the pods, or nil: they talk directly.
	net *network
	// clients are the test's own connections, one per address (any goroutine).
	mu       sync.Mutex
	clients  map[string]*redis.Client
	sclients map[int]*redis.SentinelClient
}

func newHASet(t *testing.T) *haSet {
	return newHASetOn(t, nil)
}

// newHASetOn is a set whose pods are known (Nodes, Sentinels) by their addresses on net, when net is
// not nil: pod i by 127.0.1.(i+1), in front of its Redis and sentinel on 127.0.0.1 at the same ports
// (RedisConf writes the port of Nodes[self]), and its outgoing connections come from that address too
// (bind-source-addr, which Redis 7 uses for replication and Sentinel for every link), so the network
// knows whose traffic it carries.
func newHASetOn(t *testing.T, n *network) *haSet {
	testproc.SkipShort(t, "three Redis pods and their sentinels")
	h := &haSet{t: t, redis: make([]*testproc.Process, 3), sentinel: make([]*testproc.Process, 3), listen: map[string]string{}, net: n,
		clients: map[string]*redis.Client{}, sclients: map[int]*redis.SentinelClient{}}
	for i := range 3 {
		host, source := "127.0.0.1", ""
		if n != nil {
			host = podIP(i)
			source = "bind-source-addr " + host + "\n"
		}
		for _, addrs := range []*[]string{&h.nodes, &h.sentinels} {
			port := strconv.Itoa(testredis.FreePort(t))
			a := net.JoinHostPort(host, port)
			*addrs = append(*addrs, a)
			h.listen[a] = net.JoinHostPort("127.0.0.1", port)
			if n != nil {
				n.proxy(t, i, a, h.listen[a])
			}
		}
		dir := t.TempDir()
		h.dirs = append(h.dirs, dir)
		// What the operator's redis.conf holds, on loopback (persistence, fsync before the answer).
		base := fmt.Sprintf("bind 127.0.0.1\n%sdir %s\nappendonly yes\nappendfsync always\nsave \"\"\nrequirepass %s\n"+
			"repl-diskless-sync-delay 0\nlogfile \"\"\n", source, dir, password)
		if err := os.WriteFile(filepath.Join(dir, "base.conf"), []byte(base), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "ha"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func (h *haSet) node(i int) redisha.Node {
	return redisha.Node{Nodes: h.nodes, Sentinels: h.sentinels, Self: i, MasterName: "formsservice", Password: password,
		DownAfter: 3 * time.Second, FailoverTimeout: 20 * time.Second,
		Include: filepath.Join(h.dirs[i], "base.conf"), Dir: filepath.Join(h.dirs[i], "ha")}
}

// start is one pod's start: the init step, then Redis and its sentinel. It returns the init's answer.
func (h *haSet) start(i int) redisha.Primary {
	h.t.Helper()
	return h.startTogether(i)[i].Primary
}

// podStart is a pod's init step's answer, and when it came.
type podStart struct {
	redisha.Primary
	at time.Time
}

// startTogether starts pods at once, as a StatefulSet with Parallel pod management does: their init
// steps run concurrently, and each pod's Redis and sentinel start as soon as its own init step is done
// (another pod's init step may be waiting for them). It returns the init steps' answers.
func (h *haSet) startTogether(pods ...int) map[int]podStart {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type done struct {
		i   int
		p   redisha.Primary
		err error
	}
	inits := make(chan done, len(pods))
	for _, i := range pods {
		go func() {
			p, err := redisha.Write(ctx, h.node(i), filepath.Join(h.dirs[i], "ha"))
			inits <- done{i, p, err}
		}()
	}
	answers := map[int]podStart{}
	for range pods {
		d := <-inits
		if d.err != nil {
			h.t.Fatalf("pod %d's init step: %v", d.i, d.err)
		}
		answers[d.i] = podStart{d.p, time.Now()}
		h.run(d.i)
	}
	return answers
}

// run starts pod i's Redis and sentinel from the files its init step wrote.
func (h *haSet) run(i int) {
	h.t.Helper()
	dir := filepath.Join(h.dirs[i], "ha")
	if h.net != nil {
		// The sentinel listens where the pod's Redis does, and its links leave from the pod's address.
		f, err := os.OpenFile(filepath.Join(dir, "sentinel.conf"), os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			_, err = fmt.Fprintf(f, "bind 127.0.0.1\nbind-source-addr %s\n", podIP(i))
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			h.t.Fatal(err)
		}
	}
	bin := testredis.Binary(h.t)
	h.redis[i] = testproc.Start(h.t, nil, bin, filepath.Join(dir, "redis.conf"))
	h.sentinel[i] = testproc.Start(h.t, nil, bin, filepath.Join(dir, "sentinel.conf"), "--sentinel")
	for _, a := range []string{h.nodes[i], h.sentinels[i]} {
		c := redis.NewClient(&redis.Options{Addr: h.listen[a], Password: password, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
		testwait.Until(h.t, 20*time.Second, a+" to answer PING", func() error { return c.Ping(context.Background()).Err() })
		c.Close()
	}
}

// kill is a pod's end: Redis and its sentinel SIGKILLed together.
func (h *haSet) kill(i int) {
	h.redis[i].Kill()
	h.sentinel[i].Kill()
}

// client talks to the node or sentinel known as addr where it listens: the test watches the pods from
// outside any network between them.
func (h *haSet) client(addr string) *redis.Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.clients[addr]; ok {
		return c
	}
	c := redis.NewClient(&redis.Options{Addr: h.listen[addr], Password: password, MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: time.Second})
	h.t.Cleanup(func() { c.Close() })
	h.clients[addr] = c
	return c
}

// sentinelClient is the test's connection to pod i's sentinel.
func (h *haSet) sentinelClient(i int) *redis.SentinelClient {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.sclients[i]; ok {
		return c
	}
	c := redis.NewSentinelClient(&redis.Options{Addr: h.listen[h.sentinels[i]], Password: password, MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: time.Second})
	h.t.Cleanup(func() { c.Close() })
	h.sclients[i] = c
	return c
}

// replication is a node's INFO replication as fields.
func (h *haSet) replication(addr string) map[string]string {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	s, _ := h.client(addr).Info(ctx, "replication").Result()
	f := map[string]string{}
	for _, line := range strings.Split(s, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			f[k] = v
		}
	}
	return f
}

// syncedReplicaOf says why node i is not a replica of primary with its first sync done, or nil.
func (h *haSet) syncedReplicaOf(i int, primary string) error {
	host, port, _ := net.SplitHostPort(primary)
	f := h.replication(h.nodes[i])
	if f["role"] != "slave" || f["master_host"] != host || f["master_port"] != port || f["master_link_status"] != "up" || f["master_sync_in_progress"] != "0" {
		return fmt.Errorf("%s: %v", h.nodes[i], f)
	}
	return nil
}

// waitSyncedReplicaOf waits until node i replicates primary with its first sync done.
func (h *haSet) waitSyncedReplicaOf(i int, primary string) {
	h.t.Helper()
	testwait.Until(h.t, 30*time.Second, h.nodes[i]+" a synced replica of "+primary, func() error { return h.syncedReplicaOf(i, primary) })
}

// waitSentinelsKnow waits until every running sentinel sees replicas replicas and others other sentinels.
func (h *haSet) waitSentinelsKnow(running []int, replicas, others int) {
	h.t.Helper()
	testwait.Until(h.t, 30*time.Second, "the sentinels to know each other and the replicas", func() error {
		for _, i := range running {
			m, err := h.sentinelClient(i).Master(context.Background(), "formsservice").Result()
			if err != nil || m["num-slaves"] != strconv.Itoa(replicas) || m["num-other-sentinels"] != strconv.Itoa(others) {
				return fmt.Errorf("sentinel %s: %v %v", h.sentinels[i], m, err)
			}
		}
		return nil
	})
}

// formsLoad is the forms store writing contact messages at durability primary from several writers,
// noting each acknowledged submission.
type formsLoad struct {
	t         *testing.T
	cancel    context.CancelFunc
	guardDone chan struct{}
	stop      chan struct{}
	wg        sync.WaitGroup // the writers

	mu       sync.Mutex
	acked    []string
	failures int
}

// startFormsLoad starts writers writing through rdb (the sentinels, as the services connect), each
// submission named by prefix, writer and number. Stop it with end.
func startFormsLoad(t *testing.T, rdb redis.UniversalClient, prefix string, writers int) *formsLoad {
	t.Helper()
	st, err := store.New(rdb, store.Options{Level: func() config.Durability { return config.DurabilityPrimary }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &formsLoad{t: t, cancel: cancel, guardDone: make(chan struct{}), stop: make(chan struct{})}
	ticker := time.NewTicker(time.Second) // the guard notices the lost and regained replicas as the service's does
	go func() {
		defer close(l.guardDone)
		defer ticker.Stop()
		st.Guard().Run(ctx, ticker.C)
	}()
	for w := range writers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for n := 0; ; n++ {
				select {
				case <-l.stop:
					return
				default:
				}
				rec := fmt.Sprintf("%s%d-%d", prefix, w, n)
				rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
				r, err := st.AddContact(rctx, netip.MustParseAddr("127.0.0.1"), 0, store.Idempotency{}, []byte(rec), config.DurabilityPrimary)
				rcancel()
				l.mu.Lock()
				if err == nil && r.Outcome == store.Stored {
					l.acked = append(l.acked, rec)
				} else {
					l.failures++
					if err == nil {
						t.Errorf("%s: outcome %v", rec, r.Outcome)
					}
				}
				l.mu.Unlock()
				if err != nil {
					// The retries' pace against a store that is down, not a wait for a condition; it ends
					// with the traffic.
					select {
					case <-l.stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			}
		}()
	}
	t.Cleanup(l.end)
	return l
}

// sentinelStore is a store client as the services have it: through the sentinels.
func (h *haSet) sentinelStore() redis.UniversalClient {
	h.t.Helper()
	env := map[string]string{"REDIS_PASSWORD": password, "REDIS_SENTINEL_PASSWORD": password}
	rdb, err := redisclient.New(config.Redis{Addrs: h.sentinels, MasterName: "formsservice"}, func(k string) string { return env[k] })
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { rdb.Close() })
	return rdb
}

// counts is how many submissions were acknowledged and how many failed so far.
func (l *formsLoad) counts() (acked, failed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked), l.failures
}

// waitAcked waits for n more acknowledged submissions than there are now.
func (l *formsLoad) waitAcked(n int, within time.Duration, what string) {
	l.t.Helper()
	before, _ := l.counts()
	testwait.For(l.t, within, fmt.Sprintf("%d acknowledged submissions %s", n, what), func() bool {
		now, _ := l.counts()
		return now >= before+n
	})
}

// acknowledged is every acknowledged submission so far.
func (l *formsLoad) acknowledged() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.acked...)
}

// end stops the writers, lets the submissions under way finish, and waits for them.
func (l *formsLoad) end() {
	select {
	case <-l.stop:
		return
	default:
	}
	close(l.stop)
	l.wg.Wait()
	l.cancel()
	<-l.guardDone
}

// missing lists the acknowledged submissions that primary's contact stream lacks.
func (h *haSet) missing(primary string, acked []string) []string {
	h.t.Helper()
	stream, err := h.client(primary).XRange(context.Background(), store.ContactStream, "-", "+").Result()
	if err != nil {
		h.t.Fatal(err)
	}
	have := map[string]bool{}
	for _, m := range stream {
		if s, ok := m.Values["m"].(string); ok {
			have[s] = true
		}
	}
	var lost []string
	for _, a := range acked {
		if !have[a] {
			lost = append(lost, a)
		}
	}
	return lost
}

// TestHA_PrimaryKilledUnderFormsLoad_ReplicaPromoted_RestartedPodFollowsIt_NoAcknowledgedLoss is the
// operator's highly available Redis outside Kubernetes: three nodes and three sentinels configured only
// by redisha.Write, the forms store writing at durability primary through the sentinels. The primary
// and its sentinel are SIGKILLed under load (a pod killed) and started again at once, as a StatefulSet
// does; its init step waits for the sentinels to promote a replica, and it comes up as that one's
// replica, not as the primary again. Every acknowledged submission is on the new primary.
func TestHA_PrimaryKilledUnderFormsLoad_ReplicaPromoted_RestartedPodFollowsIt_NoAcknowledgedLoss(t *testing.T) {
	t.Parallel()
	h := newHASet(t)
	if p := h.start(0); p.Addr != h.nodes[0] || p.From != "default" {
		t.Fatalf("a new set's pod 0: %+v, want itself as the primary by default", p)
	}
	for i := 1; i < 3; i++ {
		if p := h.start(i); p.Addr != h.nodes[0] || !strings.HasPrefix(p.From, "sentinel ") {
			t.Fatalf("pod %d: %+v, want %s from a sentinel", i, p, h.nodes[0])
		}
	}
	h.waitSyncedReplicaOf(1, h.nodes[0])
	h.waitSyncedReplicaOf(2, h.nodes[0])
	h.waitSentinelsKnow([]int{0, 1, 2}, 2, 2)

	load := startFormsLoad(t, h.sentinelStore(), "w", 4)
	load.waitAcked(100, 30*time.Second, "before the kill")

	killedAt := time.Now()
	h.kill(0)
	// The pod restarts at once, as a deleted pod of a StatefulSet does, faster than the sentinels'
	// down-after period: its init step must wait for the failover, not start it as the primary again.
	p := h.start(0)
	promoted := p.Addr
	promotedAt := time.Now()
	if promoted == h.nodes[0] || !strings.HasPrefix(p.From, "sentinel ") {
		t.Fatalf("the restarted pod 0 follows %+v, want a promoted replica named by a sentinel", p)
	}
	if f := h.replication(promoted); f["role"] != "master" {
		t.Fatalf("the sentinels named %s, which is a %s", promoted, f["role"])
	}
	h.waitSyncedReplicaOf(0, promoted)
	if f := h.replication(h.nodes[0]); f["role"] != "slave" {
		t.Fatalf("the restarted pod 0 is a %s", f["role"])
	}
	rejoinedAt := time.Now()
	load.waitAcked(100, 60*time.Second, "after the failover")
	load.end()

	// Every acknowledged submission is on the primary the sentinels name now.
	acked := load.acknowledged()
	_, failures := load.counts()
	lost := h.missing(promoted, acked)
	t.Logf("%d acknowledged, %d refused or failed; primary killed, %s promoted after %s, the restarted pod a synced replica after %s",
		len(acked), failures, promoted, promotedAt.Sub(killedAt).Round(time.Millisecond), rejoinedAt.Sub(killedAt).Round(time.Millisecond))
	if len(lost) != 0 {
		t.Fatalf("%d of %d acknowledged submissions missing after the failover, want 0: %v", len(lost), len(acked), lost)
	}
	if failures == 0 {
		t.Error("no submission failed: the kill did not hit the load")
	}
}

// A primary left without replicas refuses writes (min-replicas-to-write): cut off from the others, it
// acknowledges nothing that a failover on their side would lose. A replica back, it takes writes again.
func TestHA_PrimaryWithoutReplicas_RefusesWrites_UntilOneIsBack(t *testing.T) {
	t.Parallel()
	h := newHASet(t)
	for i := range 3 {
		h.start(i)
	}
	h.waitSyncedReplicaOf(1, h.nodes[0])
	h.waitSyncedReplicaOf(2, h.nodes[0])
	primary := h.client(h.nodes[0])
	ctx := context.Background()
	if err := primary.Set(ctx, "k", "with replicas", 0).Err(); err != nil {
		t.Fatalf("a write with two replicas: %v", err)
	}
	h.kill(1)
	h.kill(2)
	testwait.Until(t, 30*time.Second, "the primary to refuse writes without a replica", func() error {
		err := primary.Set(ctx, "k", "alone", 0).Err()
		if err == nil || !strings.Contains(err.Error(), "NOREPLICAS") {
			return fmt.Errorf("a write with no replica: %v", err)
		}
		return nil
	})
	if v := primary.Get(ctx, "k").Val(); v != "with replicas" {
		t.Errorf("a refused write changed the value to %q", v)
	}
	h.start(1)
	h.waitSyncedReplicaOf(1, h.nodes[0])
	testwait.Until(t, 30*time.Second, "the primary to take writes with a replica back", func() error {
		return primary.Set(ctx, "k", "one replica back", 0).Err()
	})
}

// Every pod of a new set starting at once (Parallel): pod 1's init step, finding no sentinel and no
// primary, waits for pod 0 instead of starting a sentinel that would take pod 0 for down, try a
// failover no replica could take, and then hold off the next one for twice the failover timeout.
func TestHA_AllPodsStartingAtOnce_TheOthersWaitForPod0(t *testing.T) {
	t.Parallel()
	h := newHASet(t)
	type answer struct {
		p   redisha.Primary
		err error
	}
	first := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		p, err := redisha.Write(ctx, h.node(1), filepath.Join(h.dirs[1], "ha"))
		first <- answer{p, err}
	}()
	if p := h.start(0); p.Addr != h.nodes[0] || p.From != "default" {
		t.Fatalf("pod 0 of a new set: %+v, want itself by default", p)
	}
	a := <-first
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.p.Addr != h.nodes[0] || a.p.From == "default" {
		t.Fatalf("pod 1 started with pod 0: %+v, want pod 0 as a primary that answered, not the default", a.p)
	}
}

// The sentinels' answer is followed only when that node answers ROLE master. A sentinel that missed a
// failover (the one left of a partition, or the only one standing) names a primary that is gone: the
// init step follows the node that says it is the primary instead. With no primary anywhere it follows
// the sentinels' answer after all, so that its own sentinel starts and can vote for the failover.
func TestFindPrimary_FollowsTheSentinelsAnswerOnlyWhenItIsAPrimary(t *testing.T) {
	t.Parallel()
	h := newHASet(t)
	bin := testredis.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Pod 1's sentinel alone, still monitoring pod 0, where nothing answers any more.
	sentinelConf := filepath.Join(h.dirs[1], "ha", "sentinel.conf")
	if err := os.WriteFile(sentinelConf, []byte(redisha.SentinelConf(h.node(1), h.nodes[0])), 0o600); err != nil {
		t.Fatal(err)
	}
	testproc.Start(t, nil, bin, sentinelConf, "--sentinel")
	c := h.sentinelClient(1)
	testwait.Until(t, 20*time.Second, "pod 1's sentinel to answer", func() error { return c.Ping(ctx).Err() })

	p, err := redisha.FindPrimary(ctx, h.node(2))
	if err != nil {
		t.Fatal(err)
	}
	if p.Addr != h.nodes[0] || !strings.HasPrefix(p.From, "sentinel ") {
		t.Fatalf("no node a primary: %+v, want the sentinels' answer %s (so that this pod's sentinel can vote)", p, h.nodes[0])
	}

	// Pod 1's Redis up as a primary (a failover the sentinel missed).
	redisConf := filepath.Join(h.dirs[1], "ha", "redis.conf")
	if err := os.WriteFile(redisConf, []byte(redisha.RedisConf(h.node(1), h.nodes[1])), 0o600); err != nil {
		t.Fatal(err)
	}
	testproc.Start(t, nil, bin, redisConf)
	testwait.Until(t, 20*time.Second, "pod 1's Redis to answer", func() error { return h.client(h.nodes[1]).Ping(ctx).Err() })

	p, err = redisha.FindPrimary(ctx, h.node(2))
	if err != nil {
		t.Fatal(err)
	}
	if p.Addr != h.nodes[1] || !strings.Contains(p.From, "not a primary now") {
		t.Fatalf("the sentinel names a gone primary, pod 1 is one: %+v, want pod 1 (%s)", p, h.nodes[1])
	}

	// Once the sentinel names the primary that answers, its answer is followed as is.
	if err := c.Remove(ctx, "formsservice").Err(); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(h.nodes[1])
	if err := c.Monitor(ctx, "formsservice", host, port, "2").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "formsservice", "auth-pass", password).Err(); err != nil {
		t.Fatal(err)
	}
	p, err = redisha.FindPrimary(ctx, h.node(2))
	if err != nil {
		t.Fatal(err)
	}
	if p.Addr != h.nodes[1] || !strings.HasPrefix(p.From, "sentinel ") || strings.Contains(p.From, "not a primary") {
		t.Fatalf("the sentinel names pod 1, a primary: %+v, want its answer as is", p)
	}
}

// A whole-set restart keeps the primary where it was: each pod's sentinel.conf (on its claim in the
// operator's pods) names the primary of the last epoch it knew, so the node that was the primary starts
// as the primary at once and the others wait for it — not pod 0 by default, which here is a replica, and
// could have been one a little behind.
func TestHA_WholeSetRestart_ThePrimaryOfTheLastEpochStaysThePrimary(t *testing.T) {
	t.Parallel()
	h := newHASet(t)
	for i := range 3 {
		h.start(i)
	}
	h.waitSyncedReplicaOf(1, h.nodes[0])
	h.waitSyncedReplicaOf(2, h.nodes[0])
	h.waitSentinelsKnow([]int{0, 1, 2}, 2, 2)
	ctx := context.Background()
	s := redis.NewSentinelClient(&redis.Options{Addr: h.sentinels[0], Password: password, MaxRetries: -1})
	defer s.Close()
	if err := s.Failover(ctx, "formsservice").Err(); err != nil {
		t.Fatal(err)
	}
	// Every sentinel has written the new primary, under its new epoch, into its file.
	primary := -1
	testwait.Until(t, 30*time.Second, "every sentinel.conf to name the promoted replica", func() error {
		named := map[string]bool{}
		for i := range 3 {
			b, err := os.ReadFile(filepath.Join(h.dirs[i], "ha", "sentinel.conf"))
			if err != nil {
				return err
			}
			p, epoch, _ := redisha.ReadLast(string(b), "formsservice")
			if epoch == 0 {
				return fmt.Errorf("sentinel %d: %s at epoch 0", i, p)
			}
			named[p] = true
		}
		if len(named) != 1 || named[h.nodes[0]] {
			return fmt.Errorf("the sentinels' files name %v", named)
		}
		for p := range named {
			primary = slices.Index(h.nodes, p)
		}
		return nil
	})
	other := 3 - primary // the replica that is not pod 0
	h.waitSyncedReplicaOf(0, h.nodes[primary])
	h.waitSyncedReplicaOf(other, h.nodes[primary])
	if err := h.client(h.nodes[primary]).Set(ctx, "k", "before the restart", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := h.client(h.nodes[primary]).Do(ctx, "WAIT", 2, 5000).Int(); err != nil || n != 2 {
		t.Fatalf("WAIT 2: %d replicas, %v", n, err)
	}

	for i := range 3 {
		h.kill(i)
	}
	// All three start at once (Parallel): the replicas' init steps wait, the primary's does not.
	answers := h.startTogether(0, 1, 2)
	if p := answers[primary]; p.Addr != h.nodes[primary] || !strings.HasPrefix(p.From, "state ") {
		t.Fatalf("pod %d, the primary before the restart: %+v, want itself from its sentinel's state", primary, p)
	}
	for i, p := range answers {
		if p.Addr != h.nodes[primary] {
			t.Fatalf("pod %d after the restart: %+v, want a replica of pod %d", i, p, primary)
		}
	}
	h.waitSyncedReplicaOf(0, h.nodes[primary])
	h.waitSyncedReplicaOf(other, h.nodes[primary])
	if v := h.client(h.nodes[primary]).Get(ctx, "k").Val(); v != "before the restart" {
		t.Errorf("after the restart the primary holds %q", v)
	}
}
