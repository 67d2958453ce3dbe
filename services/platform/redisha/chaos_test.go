package redisha_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testwait"
)

// A chaos case: the set's primary at pod primary (moved there by a failover when it is not pod 0, the
// primary of a new set), the forms writing at durability primary through the sentinels, then what
// happens to the pods. Afterwards the set must be whole again with nothing done by hand, and every
// acknowledged submission on its primary.
type chaosCase struct {
	name    string
	primary int
	chaos   func(r *chaosRun)
}

// chaosRun is one case under way, and what it measured.
type chaosRun struct {
	t     *testing.T
	h     *haSet
	loads []*formsLoad // the last one is writing
	start time.Time    // when the pods were lost, or cut off
	// promoted is when a node other than the lost primary first answered as the primary.
	promoted *promotion
	notes    []string
}

func (r *chaosRun) load() *formsLoad { return r.loads[len(r.loads)-1] }

func (r *chaosRun) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// TestHA_Chaos_EveryLossRecoversWithoutAHuman_NoAcknowledgedLoss is the chaos matrix of the highly
// available Redis (docs/operator.md, "High availability"): real redis-server and Sentinel processes
// configured only by redisha.Write, with the primary at each ordinal, the loss of one pod and of two
// (each started again at once, as a StatefulSet with Parallel pod management does), the whole set
// restarted at once, and the primary cut off from everyone else by the network. Each must end with a
// primary, two synced replicas and three sentinels that agree and can authorise the next failover,
// without a hand on it, and with every submission acknowledged at durability primary on that primary.
func TestHA_Chaos_EveryLossRecoversWithoutAHuman_NoAcknowledgedLoss(t *testing.T) {
	cases := []chaosCase{
		// The longest first: the cases run a few at a time (main_test.go), in this order.
		{"partition/primary 2 cut off", 2, partition},
		{"one pod/primary 0 lost", 0, lose(0)},
		{"one pod/primary 1 lost", 1, lose(1)},
		{"one pod/replica 0 lost, primary 1", 1, lose(0)},
		{"one pod/replica 2 lost, primary 0", 0, lose(2)},
		{"two pods/primary 0 and 1", 0, lose(0, 1)},
		{"two pods/primary 0 and 2", 0, lose(0, 2)},
		{"two pods/primary 2 and 0", 2, lose(2, 0)},
		{"two pods/primary 2 and 1", 2, lose(2, 1)},
		{"whole set restarted, primary 1", 1, restartAll},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHASetOn(t, newNetwork())
			for i := range 3 {
				h.start(i)
			}
			// The set up goes faster with the sentinels reading the nodes' INFO every second; the chaos
			// meets them at their default, every 10 s.
			h.sentinelInfoPeriod(time.Second)
			h.waitWhole(30*time.Second, "the new set")
			h.makePrimary(c.primary)
			h.sentinelInfoPeriod(10 * time.Second)

			r := &chaosRun{t: t, h: h}
			r.loads = append(r.loads, startFormsLoad(t, h.sentinelStore(), "a", 2))
			r.load().waitAcked(50, 30*time.Second, "before the chaos")

			c.chaos(r)

			primary := h.waitWhole(90*time.Second, "the set after the chaos")
			whole := time.Since(r.start)
			r.load().waitAcked(50, 30*time.Second, "after the set is whole")
			var acked []string
			failed := 0
			for _, l := range r.loads {
				l.end()
				_, f := l.counts()
				acked, failed = append(acked, l.acknowledged()...), failed+f
			}
			lost := h.missing(h.nodes[primary], acked)
			promoted := "none"
			if at := r.promoted.at(); !at.IsZero() {
				promoted = at.Sub(r.start).Round(time.Millisecond).String()
			}
			t.Logf("primary %d before, %d after; promotion after %s; whole after %s; %d acknowledged, %d refused or failed, %d lost; %s",
				c.primary, primary, promoted, whole.Round(time.Millisecond), len(acked), failed, len(lost), strings.Join(r.notes, "; "))
			if len(lost) != 0 {
				t.Fatalf("%d of %d acknowledged submissions missing on the primary %s, want 0: %v", len(lost), len(acked), h.nodes[primary], lost)
			}
		})
	}
}

// lose kills pods at once (Redis and sentinel SIGKILLed) and starts them again at once.
func lose(pods ...int) func(r *chaosRun) {
	return func(r *chaosRun) {
		h := r.h
		old := h.primaryNow()
		r.promoted = h.watchPromotion(old)
		r.start = time.Now()
		for _, i := range pods {
			h.kill(i)
		}
		answers := h.startTogether(pods...)
		for _, i := range pods {
			r.note("pod %d's init step: %s from %s after %s", i, answers[i].Addr, answers[i].From, answers[i].at.Sub(r.start).Round(time.Millisecond))
		}
		if p := answers[old]; slices.Contains(pods, old) && p.Addr == h.nodes[old] {
			// The lost primary came back as the primary: allowed only as the init step's fallback when no
			// failover came within the failover timeout (two sentinels that start their elections at the
			// same moment can split the vote, and then wait twice the failover timeout before the next).
			// It holds every acknowledged write, having been the primary; no other node may have been
			// promoted meanwhile.
			if !strings.HasSuffix(p.From, "no failover within the failover timeout") || !r.promoted.at().IsZero() {
				r.t.Fatalf("the lost primary, pod %d, started as the primary again: %+v (a promotion seen at %v)", old, p, r.promoted.at())
			}
			r.note("no failover (a split vote?): pod %d back as the primary after the failover timeout", old)
		}
	}
}

// restartAll restarts the whole set at once (every sentinel gone). The primary of the last epoch, named
// by the sentinel.conf each sentinel left, starts as the primary again and the others wait for it. The
// load stops and the replicas catch up first, so that the check below is of the restart alone.
func restartAll(r *chaosRun) {
	h := r.h
	r.load().end()
	old := h.primaryNow()
	testwait.Until(r.t, 30*time.Second, "every replica to have every write", func() error {
		want := h.replication(h.nodes[old])["master_repl_offset"]
		for i := range 3 {
			if f := h.replication(h.nodes[i]); i != old && (f["slave_repl_offset"] != want || f["master_link_status"] != "up") {
				return fmt.Errorf("%s at %s, the primary at %s", h.nodes[i], f["slave_repl_offset"], want)
			}
		}
		return nil
	})
	r.start = time.Now()
	for i := range 3 {
		h.kill(i)
	}
	answers := h.startTogether(0, 1, 2)
	if p := answers[old]; p.Addr != h.nodes[old] || !strings.HasPrefix(p.From, "state ") {
		r.t.Fatalf("pod %d, the primary before, of a set restarted whole: %+v, want itself from its sentinel's state", old, p)
	}
	for i := range 3 {
		if p := answers[i]; p.Addr != h.nodes[old] {
			r.t.Fatalf("pod %d of a set restarted whole: %+v, want pod %d", i, p, old)
		}
	}
	r.note("pod %d, the primary before, started as the primary again after %s", old, answers[old].at.Sub(r.start).Round(time.Millisecond))
	r.loads = append(r.loads, startFormsLoad(r.t, h.sentinelStore(), "b", 2))
}

// partition cuts the primary off from the other pods and from the clients, as a network partition
// would: its links go silent (open, carrying nothing, so that neither end hears of it but by its own
// timeouts) and new ones are black-holed. The majority's sentinels promote a replica, which takes
// writes; the old primary, with no replica left, refuses them (min-replicas-to-write) once its
// replicas' last acknowledgement is older than min-replicas-max-lag, so a client still on its side has
// nothing acknowledged that the healed set drops. Once the network heals, the old primary rejoins as a
// replica of the promoted one.
//
// The forms' client through the sentinels is not required to write during the partition: when the
// sentinel it picked is the cut off one, it keeps asking that one (go-redis gives up on the sentinel
// it picked only on an error other than its context's end, and a dial's context ends first), and it
// writes again once the network heals. A client of the majority's side writes directly to the
// promoted replica instead.
func partition(r *chaosRun) {
	h := r.h
	old := h.primaryNow()
	r.promoted = h.watchPromotion(old)
	r.start = time.Now()
	h.net.partition(old)
	minority := startFormsLoad(r.t, h.direct(old), "m", 1) // a client on the old primary's side
	r.loads = append([]*formsLoad{minority}, r.loads...)

	ctx := context.Background()
	testwait.Until(r.t, 30*time.Second, "the cut off primary to refuse writes", func() error {
		err := h.direct(old).Set(ctx, "partition", "minority", 0).Err()
		if err == nil || !strings.Contains(err.Error(), "NOREPLICAS") {
			return fmt.Errorf("a write on the cut off primary: %v", err)
		}
		return nil
	})
	refused := time.Since(r.start)
	if refused > 15*time.Second || refused < 5*time.Second {
		r.t.Errorf("the cut off primary refused writes %s after the cut, want after min-replicas-max-lag (10 s) from its replicas' last acknowledgement, which comes every second", refused)
	}
	testwait.For(r.t, 30*time.Second, "the majority to promote a replica", func() bool { return !r.promoted.at().IsZero() })
	promoted := h.primaryOf(old)
	atPromotion, _ := r.load().counts()
	majority := startFormsLoad(r.t, h.direct(promoted), "j", 1)
	r.loads = append([]*formsLoad{majority}, r.loads...)
	majority.waitAcked(20, 30*time.Second, "on the majority's side during the partition")
	majority.end()
	minority.end()
	if a, _ := minority.counts(); a != 0 {
		r.t.Errorf("the cut off primary acknowledged %d submissions at durability primary, want 0 (no replica to confirm them)", a)
	}
	atHeal, _ := r.load().counts()
	h.net.heal()
	healed := time.Since(r.start)
	r.note("the cut off primary refused writes after %s; pod %d promoted, %d acknowledged on its side directly, %d through the sentinels between the promotion and the heal, %s after the cut",
		refused.Round(time.Millisecond), promoted, len(majority.acknowledged()), atHeal-atPromotion, healed.Round(time.Millisecond))
	testwait.Until(r.t, 60*time.Second, "the old primary to rejoin as a replica", func() error {
		if h.replication(h.nodes[old])["role"] != "slave" {
			return errors.New("still a primary")
		}
		return nil
	})
}

// direct is a client of pod i's Redis that reaches it wherever the network is cut: one on its side.
func (h *haSet) direct(i int) *redis.Client { return h.client(h.nodes[i]) }

// primaryOf is the pod other than old that answers as the primary.
func (h *haSet) primaryOf(old int) int {
	h.t.Helper()
	for i := range 3 {
		if i != old && h.replication(h.nodes[i])["role"] == "master" {
			return i
		}
	}
	h.t.Fatalf("no pod but %d answers as the primary", old)
	return -1
}

// promotion is when a node other than the primary before first answered as the primary.
type promotion struct {
	mu   sync.Mutex
	when time.Time
}

// at is the promotion's time, or zero (none seen, or nothing watched).
func (p *promotion) at() time.Time {
	if p == nil {
		return time.Time{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.when
}

// watchPromotion notes when a node other than pod old first answers as the primary, until the test
// ends. It measures; the waits are the test's.
func (h *haSet) watchPromotion(old int) *promotion {
	p := &promotion{}
	done := make(chan struct{})
	ended := make(chan struct{})
	h.t.Cleanup(func() { close(done); <-ended })
	go func() {
		defer close(ended)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			for i := range 3 {
				if i != old && h.replication(h.nodes[i])["role"] == "master" {
					p.mu.Lock()
					p.when = time.Now()
					p.mu.Unlock()
					return
				}
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// primaryNow is the pod whose Redis answers as the primary (the test fails unless exactly one does).
func (h *haSet) primaryNow() int {
	h.t.Helper()
	var primaries []int
	for i := range 3 {
		if h.replication(h.nodes[i])["role"] == "master" {
			primaries = append(primaries, i)
		}
	}
	if len(primaries) != 1 {
		h.t.Fatalf("the pods answering as the primary: %v, want one", primaries)
	}
	return primaries[0]
}

// whole says why the set is not whole, or nil, and returns its primary. Whole: one node answers as the
// primary, the two others are its synced replicas, and every sentinel names it with nothing down,
// knows the two replicas (up, linked to it) and the two other sentinels, and can authorise a failover
// (SENTINEL CKQUORUM: a dead sentinel still counted would raise the majority it needs).
func (h *haSet) whole() (int, error) {
	primary := -1
	for i := range 3 {
		if h.replication(h.nodes[i])["role"] == "master" {
			if primary >= 0 {
				return -1, fmt.Errorf("two primaries, %s and %s", h.nodes[primary], h.nodes[i])
			}
			primary = i
		}
	}
	if primary < 0 {
		return -1, errors.New("no primary")
	}
	for i := range 3 {
		if i != primary {
			if err := h.syncedReplicaOf(i, h.nodes[primary]); err != nil {
				return -1, err
			}
		}
	}
	host, port, _ := net.SplitHostPort(h.nodes[primary])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for i := range 3 {
		c := h.sentinelClient(i)
		m, err := c.Master(ctx, "formsservice").Result()
		if err != nil {
			return -1, fmt.Errorf("sentinel %s: %w", h.sentinels[i], err)
		}
		if m["ip"] != host || m["port"] != port || m["flags"] != "master" || m["num-slaves"] != "2" || m["num-other-sentinels"] != "2" {
			return -1, fmt.Errorf("sentinel %s, the primary %s: %v", h.sentinels[i], h.nodes[primary], m)
		}
		replicas, err := c.Replicas(ctx, "formsservice").Result()
		if err != nil {
			return -1, fmt.Errorf("sentinel %s: %w", h.sentinels[i], err)
		}
		for _, rep := range replicas {
			if rep["flags"] != "slave" || rep["master-link-status"] != "ok" || rep["master-host"] != host || rep["master-port"] != port {
				return -1, fmt.Errorf("sentinel %s's replica %s:%s: %v", h.sentinels[i], rep["ip"], rep["port"], rep)
			}
		}
		if err := c.CkQuorum(ctx, "formsservice").Err(); err != nil {
			return -1, fmt.Errorf("sentinel %s: %w", h.sentinels[i], err)
		}
	}
	return primary, nil
}

// waitWhole waits until the set is whole and returns its primary.
func (h *haSet) waitWhole(within time.Duration, what string) int {
	h.t.Helper()
	primary := -1
	testwait.Until(h.t, within, what+" whole", func() error {
		var err error
		primary, err = h.whole()
		return err
	})
	return primary
}

// makePrimary moves the primary to pod j by a failover (SENTINEL FAILOVER), the third pod's replica
// priority 0 meanwhile so that the sentinels pick j. The sentinels read a replica's priority in its
// INFO, so it waits until all of them have seen the priority, 0 and then back.
func (h *haSet) makePrimary(j int) {
	h.t.Helper()
	from := h.primaryNow()
	if from == j {
		return
	}
	other := 3 - from - j
	ctx := context.Background()
	seen := func(priority string) error {
		host, port, _ := net.SplitHostPort(h.nodes[other])
		for i := range 3 {
			replicas, err := h.sentinelClient(i).Replicas(ctx, "formsservice").Result()
			if err != nil {
				return err
			}
			for _, rep := range replicas {
				if rep["ip"] == host && rep["port"] == port && rep["slave-priority"] != priority {
					return fmt.Errorf("sentinel %s sees %s at priority %s", h.sentinels[i], h.nodes[other], rep["slave-priority"])
				}
			}
		}
		return nil
	}
	if err := h.client(h.nodes[other]).ConfigSet(ctx, "replica-priority", "0").Err(); err != nil {
		h.t.Fatal(err)
	}
	testwait.Until(h.t, 30*time.Second, "the sentinels to see the priority 0", func() error { return seen("0") })
	if err := h.sentinelClient(0).Failover(ctx, "formsservice").Err(); err != nil {
		h.t.Fatal(err)
	}
	if p := h.waitWhole(30*time.Second, fmt.Sprintf("the set, its primary moved from pod %d to pod %d,", from, j)); p != j {
		h.t.Fatalf("the failover promoted pod %d, want %d", p, j)
	}
	if err := h.client(h.nodes[other]).ConfigSet(ctx, "replica-priority", "100").Err(); err != nil {
		h.t.Fatal(err)
	}
	testwait.Until(h.t, 30*time.Second, "the sentinels to see the priority back", func() error { return seen("100") })
}

// sentinelInfoPeriod sets how often every sentinel asks the nodes for INFO (SENTINEL DEBUG; 10 s by
// default, and at each sentinel's start).
func (h *haSet) sentinelInfoPeriod(d time.Duration) {
	h.t.Helper()
	for i := range 3 {
		err := h.client(h.sentinels[i]).Do(context.Background(), "SENTINEL", "DEBUG", "info-period", d.Milliseconds()).Err()
		if err != nil {
			h.t.Fatal(err)
		}
	}
}

// podIP is pod i's own address on a network (all of 127.0.0.0/8 reaches loopback on Linux).
func podIP(i int) string { return fmt.Sprintf("127.0.1.%d", i+1) }

// podOf is the pod whose address a connection comes from, or -1 (a client: the test, the forms).
func podOf(a net.Addr) int {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return -1
	}
	for i := range 3 {
		if ap.Addr() == netip.MustParseAddr(podIP(i)) {
			return i
		}
	}
	return -1
}

// network is the traffic between the pods and to them: a proxy in front of each pod's Redis and
// sentinel, which carries every connection unless a partition cuts one pod off from everyone else
// (the other pods and the clients, who are on the majority's side).
type network struct {
	mu    sync.Mutex
	cut   int // the pod cut off, or -1
	links map[*link]bool
}

// link is one connection through a proxy, from pod from (or -1, a client) to pod to.
type link struct {
	from, to int
	in, out  net.Conn // out is nil until connected, and stays nil for a link opened across the partition
	held     bool     // across the partition: what is sent is dropped
	closed   bool
}

func newNetwork() *network { return &network{cut: -1, links: map[*link]bool{}} }

// crosses says whether traffic between from and to crosses the partition. n.mu is held.
func (n *network) crosses(from, to int) bool {
	return n.cut >= 0 && (from == n.cut) != (to == n.cut)
}

// proxy listens on addr, pod's address, and carries each connection to target, until the test ends.
func (n *network) proxy(t *testing.T, pod int, addr, target string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		n.mu.Lock()
		for l := range n.links {
			if l.to == pod {
				n.closeLocked(l)
			}
		}
		n.mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				n.carry(&link{from: podOf(c.RemoteAddr()), to: pod, in: c}, target)
			}()
		}
	}()
}

// carry forwards l both ways until either end closes it. A link across the partition is black-holed
// instead, as on a network that lost the route: what is sent is read and dropped and nothing comes
// back, and neither end is told (a refused or closed connection would tell them at once).
func (n *network) carry(l *link, target string) {
	n.mu.Lock()
	n.links[l] = true
	l.held = n.crosses(l.from, l.to)
	n.mu.Unlock()
	defer n.close(l)
	if l.held {
		_, _ = io.Copy(io.Discard, l.in) // until the partition heals and closes it
		return
	}
	out, err := net.Dial("tcp", target)
	if err != nil {
		return // the pod is down: the client sees its connection closed
	}
	n.mu.Lock()
	if l.closed {
		out.Close()
	} else {
		l.out = out
	}
	n.mu.Unlock()
	done := make(chan struct{})
	go func() {
		n.pipe(l, out, l.in)
		n.endUnlessHeld(l)
		close(done)
	}()
	n.pipe(l, l.in, out)
	n.endUnlessHeld(l)
	<-done
}

// endUnlessHeld closes l once one end has closed it, unless the partition holds it: the other end
// must not hear of it across the partition (heal closes it).
func (n *network) endUnlessHeld(l *link) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !l.held {
		n.closeLocked(l)
	}
}

// pipe copies src to dst until either ends, dropping what it reads while l is held.
func (n *network) pipe(l *link, dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		k, err := src.Read(buf)
		if k > 0 {
			n.mu.Lock()
			held := l.held
			n.mu.Unlock()
			if !held {
				if _, err := dst.Write(buf[:k]); err != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

func (n *network) close(l *link) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closeLocked(l)
}

func (n *network) closeLocked(l *link) {
	if l.closed {
		return
	}
	l.closed = true
	l.in.Close()
	if l.out != nil {
		l.out.Close()
	}
	delete(n.links, l)
}

// partition cuts pod off from everyone else: the links between it and the others go silent, and new
// ones are black-holed.
func (n *network) partition(pod int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut = pod
	for l := range n.links {
		if n.crosses(l.from, l.to) {
			l.held = true
		}
	}
}

// heal ends the partition. The links it held are closed (their streams lost bytes), so that both
// ends connect again, as they would after their own timeouts.
func (n *network) heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for l := range n.links {
		if l.held {
			n.closeLocked(l)
		}
	}
	n.cut = -1
}
