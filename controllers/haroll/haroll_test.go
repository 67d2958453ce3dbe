package haroll

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// set is a simulated highly available Redis: three pods, their revisions and roles, and the sentinels'
// view. Its methods are the events of a roll as the cluster produces them.
type set struct {
	pods     []Pod
	primary  int
	failover bool
}

func newSet(primary int) *set {
	s := &set{primary: primary}
	for i := range 3 {
		s.pods = append(s.pods, Pod{Name: fmt.Sprintf("acme-redis-%d", i), Addr: fmt.Sprintf("acme-redis-%d.ns.svc:6379", i), Present: true, Ready: true})
	}
	s.settle()
	return s
}

// settle makes the roles what a healthy set has: the primary listing every other Ready pod as its
// linked replica.
func (s *set) settle() {
	p := &s.pods[s.primary]
	p.Role, p.Following, p.Linked, p.Replicas = "master", "", false, nil
	for i := range s.pods {
		if i == s.primary || !s.pods[i].Present || !s.pods[i].Ready {
			continue
		}
		r := &s.pods[i]
		r.Role, r.Following, r.Linked, r.Replicas = "slave", p.Addr, true, nil
		p.Replicas = append(p.Replicas, r.Addr)
	}
}

func (s *set) observed() Observed {
	return Observed{Pods: slices.Clone(s.pods), Primary: s.pods[s.primary].Addr, FailoverInProgress: s.failover}
}

func (s *set) ordinal(name string) int {
	for i, p := range s.pods {
		if p.Name == name {
			return i
		}
	}
	panic(name)
}

// The steps of a pod's restart after its deletion, as the roll sees them: gone, created but not ready,
// ready but not yet a linked replica, a synced replica.
func (s *set) deleted(i int) { s.pods[i] = Pod{Name: s.pods[i].Name, Addr: s.pods[i].Addr} }
func (s *set) created(i int) {
	s.pods[i].Present, s.pods[i].Updated = true, true
}

func (s *set) ready(i int) {
	s.pods[i].Ready = true
	s.pods[i].Role = "slave" // not linked to the primary yet
}

func (s *set) synced() { s.settle() }

// checkSafe fails unless a deletion happens in a set where every pod is Ready and every replica linked.
func checkSafe(t *testing.T, o Observed, d Decision) {
	t.Helper()
	if d.Step != DeletePod {
		return
	}
	for _, p := range o.Pods {
		if !p.Present || !p.Ready {
			t.Fatalf("deleted %s while %s is not Ready: %+v", d.Pod, p.Name, o)
		}
	}
}

// roll runs a roll to the end through every intermediate state of each restart, and returns the steps
// it took (waits left out). At every intermediate state the decision must be to wait.
func roll(t *testing.T, s *set) []string {
	t.Helper()
	var steps []string
	for range 20 {
		o := s.observed()
		d := Decide(o)
		checkSafe(t, o, d)
		switch d.Step {
		case Done:
			return steps
		case Wait:
			t.Fatalf("a settled set waits: %s", d.Message)
		case DeletePod:
			steps = append(steps, "delete "+d.Pod)
			i := s.ordinal(d.Pod)
			for _, event := range []func(int){s.deleted, s.created, s.ready} {
				event(i)
				if w := Decide(s.observed()); w.Step != Wait || w.Pod != d.Pod {
					t.Fatalf("after %s's deletion, mid-restart (%+v): %s %s, want a wait for it", d.Pod, s.pods[i], w.Step, w.Message)
				}
			}
			s.synced()
		case Switchover:
			steps = append(steps, "switchover "+d.Pod)
			if d.Pod != s.pods[s.primary].Name {
				t.Fatalf("switchover of %s, the primary is %s", d.Pod, s.pods[s.primary].Name)
			}
			// The sentinels promote an updated replica; the old primary follows it.
			s.failover = true
			if w := Decide(s.observed()); w.Step != Wait {
				t.Fatalf("during the failover: %s %s, want a wait", w.Step, w.Message)
			}
			s.failover = false
			for i, p := range s.pods {
				if i != s.primary && p.Updated {
					s.primary = i
					break
				}
			}
			s.settle()
		}
	}
	t.Fatalf("no end after 20 steps: %v", steps)
	return nil
}

func TestDecide_ReplicasOneAtATimeThenSwitchoverThenTheOldPrimary(t *testing.T) {
	want := map[int][]string{
		0: {"delete acme-redis-2", "delete acme-redis-1", "switchover acme-redis-0", "delete acme-redis-0"},
		1: {"delete acme-redis-2", "delete acme-redis-0", "switchover acme-redis-1", "delete acme-redis-1"},
		2: {"delete acme-redis-1", "delete acme-redis-0", "switchover acme-redis-2", "delete acme-redis-2"},
	}
	for primary := range 3 {
		t.Run(fmt.Sprintf("primary at %d", primary), func(t *testing.T) {
			got := roll(t, newSet(primary))
			if !slices.Equal(got, want[primary]) {
				t.Fatalf("steps %v, want %v", got, want[primary])
			}
		})
	}
}

// An operator restarted at any point of the roll decides from the set alone: every state a roll passes
// through, taken as the first thing a new operator sees, leads to the same end with no pod deleted
// twice and the primary handed over before its pod goes.
func TestDecide_ResumesFromEveryStateOfTheRoll(t *testing.T) {
	for primary := range 3 {
		for updated := range 1 << 3 {
			s := newSet(primary)
			for i := range 3 {
				s.pods[i].Updated = updated&(1<<i) != 0
			}
			name := fmt.Sprintf("primary %d, updated %03b", primary, updated)
			t.Run(name, func(t *testing.T) {
				steps := roll(t, s)
				deleted := map[string]int{}
				for _, st := range steps {
					if pod, ok := strings.CutPrefix(st, "delete "); ok {
						deleted[pod]++
						if deleted[pod] > 1 {
							t.Fatalf("%s deleted twice: %v", pod, steps)
						}
					}
					if pod, ok := strings.CutPrefix(st, "switchover "); ok && deleted[pod] > 0 {
						t.Fatalf("%s handed over after its deletion: %v", pod, steps)
					}
				}
				for i := range 3 {
					if (updated&(1<<i) == 0) != (deleted[s.pods[i].Name] == 1) {
						t.Fatalf("pod %d (updated at the start: %v) deleted %d times: %v", i, updated&(1<<i) != 0, deleted[s.pods[i].Name], steps)
					}
				}
				for _, p := range s.pods {
					if !p.Updated {
						t.Fatalf("%s not updated at the end", p.Name)
					}
				}
			})
		}
	}
}

// A pod that never becomes Ready, whichever it is and whatever revision the others run, holds the roll
// there for good: no other pod is deleted, no switchover asked, and the message names it.
func TestDecide_APodThatNeverBecomesReadyHoldsTheRoll(t *testing.T) {
	for primary := range 3 {
		for stuck := range 3 {
			for _, present := range []bool{true, false} {
				s := newSet(primary)
				for i := range 3 {
					s.pods[i].Updated = i == stuck
				}
				s.pods[stuck].Ready = false
				s.pods[stuck].Present = present
				s.settle()
				d := Decide(s.observed())
				if d.Step != Wait || d.Pod != s.pods[stuck].Name || !strings.Contains(d.Message, s.pods[stuck].Name) {
					t.Errorf("primary %d, %s stuck (present %v): %s %q, want a wait naming it", primary, s.pods[stuck].Name, present, d.Step, d.Message)
				}
			}
		}
	}
}

// A failover that does not finish: while a sentinel reports it under way, the roll waits; when it was
// given up (the old primary still the primary, nothing under way), the switchover is asked again, and
// the old primary's pod is never deleted while it is the primary.
func TestDecide_AFailoverThatDoesNotFinish(t *testing.T) {
	for primary := range 3 {
		s := newSet(primary)
		for i := range 3 {
			s.pods[i].Updated = i != primary
		}
		if d := Decide(s.observed()); d.Step != Switchover || d.Pod != s.pods[primary].Name {
			t.Fatalf("primary %d: %s %s, want its switchover", primary, d.Step, d.Message)
		}
		s.failover = true
		if d := Decide(s.observed()); d.Step != Wait || !strings.Contains(d.Message, "failover under way") {
			t.Fatalf("primary %d, failover under way: %s %s", primary, d.Step, d.Message)
		}
		s.failover = false // given up: the sentinels still name the old primary
		if d := Decide(s.observed()); d.Step != Switchover || d.Pod != s.pods[primary].Name {
			t.Fatalf("primary %d, failover given up: %s %s, want the switchover again", primary, d.Step, d.Message)
		}
	}
}

// Whatever the roll cannot confirm, it waits for: nothing is deleted on a guess.
func TestDecide_WaitsOnEveryDoubt(t *testing.T) {
	base := func() *set {
		s := newSet(0)
		s.pods[0].Updated, s.pods[1].Updated, s.pods[2].Updated = false, false, false
		return s
	}
	for _, tc := range []struct {
		name   string
		change func(s *set) Observed
		want   string
	}{
		{"no sentinel answers", func(s *set) Observed { o := s.observed(); o.Primary = ""; return o }, "no sentinel names the primary"},
		{"the sentinels name an unknown node", func(s *set) Observed { o := s.observed(); o.Primary = "10.0.0.9:6379"; return o }, "none of the pods"},
		{"the named primary answers nothing", func(s *set) Observed {
			o := s.observed()
			o.Pods[0].Role, o.Pods[0].Unreachable = "", "dial tcp: i/o timeout"
			return o
		}, "answers nothing (dial tcp: i/o timeout)"},
		{"the named primary is a replica", func(s *set) Observed { o := s.observed(); o.Pods[0].Role = "slave"; return o }, "answers ROLE slave"},
		{"two primaries", func(s *set) Observed { o := s.observed(); o.Pods[2].Role = "master"; return o }, "answers as a primary too"},
		{"a replica unreachable", func(s *set) Observed { o := s.observed(); o.Pods[1].Role = ""; return o }, "acme-redis-1 answers nothing"},
		{"the other replica's link down", func(s *set) Observed { o := s.observed(); o.Pods[1].Linked = false; return o }, "acme-redis-1 is not in sync"},
		{"a replica following another node", func(s *set) Observed { o := s.observed(); o.Pods[1].Following = "acme-redis-2.ns.svc:6379"; return o }, "acme-redis-1 is not in sync"},
		{"a replica the primary does not list", func(s *set) Observed { o := s.observed(); o.Pods[0].Replicas = o.Pods[0].Replicas[1:]; return o }, "acme-redis-1 is not in sync"},
	} {
		d := Decide(tc.change(base()))
		if d.Step != Wait || !strings.Contains(d.Message, tc.want) {
			t.Errorf("%s: %s %q, want a wait saying %q", tc.name, d.Step, d.Message, tc.want)
		}
	}
}

func TestDecide_DoneOnlyWhenEveryPodIsUpdatedAndReady(t *testing.T) {
	s := newSet(1)
	for i := range 3 {
		s.pods[i].Updated = true
	}
	s.pods[2].Ready = false // the last pod the roll restarted, not back yet
	if d := Decide(s.observed()); d.Step != Wait || d.Pod != "acme-redis-2" {
		t.Fatalf("%s %s", d.Step, d.Message)
	}
	s.pods[2].Ready = true
	s.settle()
	if d := Decide(s.observed()); d.Step != Done {
		t.Fatalf("%s %s", d.Step, d.Message)
	}
}

// The replica about to restart need not be in sync (a single Redis turned highly available is handed
// over and cannot follow the new primary without its password), but every other must be, and before a
// switchover both are.
func TestDecide_OnlyTheReplicaAboutToRestartMayBeOutOfSync(t *testing.T) {
	s := newSet(1)
	s.pods[0].Updated, s.pods[2].Updated = true, true // pod 1, the old primary, handed over to pod 2
	s.primary = 2
	s.settle()
	s.pods[1].Linked = false
	if d := Decide(s.observed()); d.Step != DeletePod || d.Pod != "acme-redis-1" {
		t.Fatalf("%s %s, want acme-redis-1 deleted", d.Step, d.Message)
	}
	s.settle()
	s.pods[0].Linked = false // the updated one out of sync: the old one waits
	if d := Decide(s.observed()); d.Step != Wait || d.Pod != "acme-redis-0" {
		t.Fatalf("%s %s, want a wait for acme-redis-0", d.Step, d.Message)
	}
	s = newSet(0)
	s.pods[1].Updated, s.pods[2].Updated = true, true
	s.pods[2].Linked = false
	if d := Decide(s.observed()); d.Step != Wait || d.Pod != "acme-redis-2" {
		t.Fatalf("%s %s, want a wait for acme-redis-2 before the switchover", d.Step, d.Message)
	}
}

// A failover of the sentinels' own in the middle of the roll (the primary lost, an old replica promoted)
// changes the order, not the rule: the new primary is handed over last, and every pod is deleted once.
func TestDecide_AFailoverOfItsOwnMidRoll(t *testing.T) {
	cases := 0
	for oldPrimary := range 3 {
		for promoted := range 3 {
			if promoted == oldPrimary {
				continue
			}
			s := newSet(oldPrimary)
			d := Decide(s.observed())
			if d.Step != DeletePod {
				t.Fatalf("first step %s %s", d.Step, d.Message)
			}
			first := s.ordinal(d.Pod)
			if first == promoted {
				continue // the promoted pod is the one restarting: covered by the restart's own states
			}
			s.deleted(first)
			s.created(first)
			s.ready(first)
			s.synced()
			// The sentinels fail over to promoted (still on the old revision).
			s.primary = promoted
			s.settle()
			steps := roll(t, s)
			if len(steps) == 0 || steps[len(steps)-1] != "delete "+s.pods[promoted].Name {
				t.Errorf("old primary %d, promoted %d mid-roll: steps %v, want the promoted pod restarted last", oldPrimary, promoted, steps)
			}
			if !slices.Contains(steps, "switchover "+s.pods[promoted].Name) {
				t.Errorf("old primary %d, promoted %d: steps %v, want it handed over", oldPrimary, promoted, steps)
			}
			cases++
		}
	}
	if cases < 3 {
		t.Fatalf("%d cases ran", cases)
	}
}
