// Package haroll decides the next step of rolling the highly available Redis's pods to a new revision
// (docs/operator.md, "Rolling the highly available Redis", D85): the StatefulSet updates its pods only
// when they are deleted (OnDelete), and the operator deletes them in this order: the replicas first,
// one at a time, each only once every pod is Ready and every replica in sync with the primary; then
// the primary is handed over to an updated replica (a switchover), and its pod, a replica by then, is
// deleted last. Decide is a pure function of what the cluster and the set say now, so a restarted
// operator resumes where the roll stands, with nothing remembered.
package haroll

import (
	"fmt"
	"slices"
	"strings"

	"github.com/formsservice/formsservice/services/platform/redisha"
)

// Pod is what the API server and the set say about one Redis pod.
type Pod struct {
	// Name is the pod's name; Addr its data node's host:port, as the set knows it (the sentinels'
	// answers and a primary's replicas use it).
	Name, Addr string
	// Present: the pod exists and is not being deleted.
	Present bool
	// Ready: its Ready condition is True (Redis and its sentinel answer their probes).
	Ready bool
	// Updated: it runs the StatefulSet's update revision.
	Updated bool
	// Role is "master" or "slave" as the node answers ROLE, "" when it did not answer.
	Role string
	// Following is the primary a replica follows (host:port) and Linked whether its link is up.
	Following string
	Linked    bool
	// Replicas are the replicas a primary lists as connected.
	Replicas []string
	// Unreachable is why the node did not answer, for the message.
	Unreachable string
}

// Observed is one moment of the set.
type Observed struct {
	// Pods are the set's pods, one per ordinal, in ordinal order (a missing pod: Present false).
	Pods []Pod
	// Primary is the data node (host:port) the sentinels name, "" when none answered.
	Primary string
	// FailoverInProgress: a sentinel reports a failover of the primary under way.
	FailoverInProgress bool
}

// WithRoles is pods, as the API server has them (Name, Addr, Present, Ready, Updated, in the order of
// the set's nodes), with what the nodes and sentinels said (redisha.Observe over the same nodes).
func WithRoles(pods []Pod, st redisha.SetState) Observed {
	o := Observed{Pods: slices.Clone(pods), Primary: st.Primary, FailoverInProgress: st.FailoverInProgress}
	for i := range o.Pods {
		if i >= len(st.Nodes) {
			break
		}
		ns, p := st.Nodes[i], &o.Pods[i]
		p.Role, p.Following, p.Linked, p.Unreachable = ns.Role, ns.Following, ns.Linked, ns.Err
		p.Replicas = slices.Sorted(func(yield func(string) bool) {
			for r := range ns.Replicas {
				if !yield(r) {
					return
				}
			}
		})
	}
	return o
}

// Step is what to do now.
type Step int

const (
	// Done: every pod runs the update revision, is Ready, and the replicas are in sync; nothing to roll.
	Done Step = iota
	// Wait: something must settle first (Message says what); nothing is deleted.
	Wait
	// DeletePod: delete Pod (a replica on an old revision); the StatefulSet creates it on the new one.
	DeletePod
	// Switchover: hand the primary (Pod) over to a replica before its pod is deleted.
	Switchover
)

func (s Step) String() string {
	return [...]string{"Done", "Wait", "DeletePod", "Switchover"}[s]
}

// Decision is the next step and what the status says about it.
type Decision struct {
	Step Step
	// Pod is the pod the step is about: the one to delete, the primary to hand over, or the one
	// waited for ("" for Done, and for a wait on the set as a whole).
	Pod string
	// Message says where the roll stands, naming the pod.
	Message string
}

// Decide is the next step of the roll. It deletes a pod only when every pod is Ready, the sentinels and
// the node they name agree on the primary, no failover is under way, and every replica is linked to the
// primary and listed by it: the set then keeps a primary with a replica that confirms writes while the
// pod restarts. The replicas on an old revision go first, the highest ordinal first; the primary, once
// it is the last on an old revision, is handed over (to a replica on the new revision, since every
// replica is by then), and then deleted as the replica it has become.
func Decide(o Observed) Decision {
	var old []Pod
	for _, p := range o.Pods {
		if p.Present && !p.Updated {
			old = append(old, p)
		}
	}
	updated := 0
	for _, p := range o.Pods {
		if p.Present && p.Updated {
			updated++
		}
	}
	progress := fmt.Sprintf("%d of %d Redis pods on the current revision", updated, len(o.Pods))
	wait := func(pod, why string) Decision {
		return Decision{Step: Wait, Pod: pod, Message: fmt.Sprintf("%s; waiting: %s.", progress, why)}
	}
	// The roll ends when the last pod it restarted is back and in sync; a pod missing or not Ready holds it.
	for _, p := range o.Pods {
		switch {
		case !p.Present:
			return wait(p.Name, p.Name+" is being created; no pod is deleted while another is missing")
		case !p.Ready:
			return wait(p.Name, p.Name+" is not Ready; no pod is deleted while another is not Ready")
		}
	}
	if o.FailoverInProgress {
		return wait("", "the sentinels report a failover under way")
	}
	if o.Primary == "" {
		return wait("", "no sentinel names the primary")
	}
	primary := -1
	for i, p := range o.Pods {
		if p.Addr == o.Primary {
			primary = i
		}
	}
	if primary < 0 {
		return wait("", fmt.Sprintf("the sentinels name %s, which is none of the pods", o.Primary))
	}
	pp := o.Pods[primary]
	if pp.Role != "master" {
		return wait(pp.Name, fmt.Sprintf("the sentinels name %s the primary, but it answers %s", pp.Name, roleOf(pp)))
	}
	inSync := func(p Pod) bool {
		return p.Role == "slave" && p.Following == pp.Addr && p.Linked && slices.Contains(pp.Replicas, p.Addr)
	}
	for i, p := range o.Pods {
		switch {
		case i == primary:
		case p.Role == "master":
			return wait(p.Name, fmt.Sprintf("%s answers as a primary too, beside %s", p.Name, pp.Name))
		case p.Role != "slave":
			return wait(p.Name, fmt.Sprintf("%s answers %s", p.Name, roleOf(p)))
		}
	}
	// The next replica to restart: on an old revision, the highest ordinal first, as a StatefulSet rolls.
	next := -1
	for i := len(o.Pods) - 1; i >= 0 && next < 0; i-- {
		if i != primary && !o.Pods[i].Updated {
			next = i
		}
	}
	// Every other replica must be in sync: the primary keeps a replica that confirms writes while the
	// pod restarts, and the replica restarted last is caught up before the next goes. The one about to
	// restart need not be (it adds nothing the restart takes away: a single Redis turned highly
	// available is such a replica once handed over, unable to follow the new primary).
	for i, p := range o.Pods {
		if i != primary && i != next && !inSync(p) {
			return wait(p.Name, fmt.Sprintf("%s is not in sync with the primary %s", p.Name, pp.Name))
		}
	}
	if next >= 0 {
		p := o.Pods[next]
		return Decision{Step: DeletePod, Pod: p.Name,
			Message: fmt.Sprintf("%s; deleting %s (a replica of %s) to restart it on the current revision.", progress, p.Name, pp.Name)}
	}
	if len(old) == 0 {
		return Decision{Step: Done, Message: "Every Redis pod runs the current revision."}
	}
	return Decision{Step: Switchover, Pod: pp.Name,
		Message: fmt.Sprintf("%s; handing the primary %s over to a replica on the current revision before its pod restarts.", progress, pp.Name)}
}

func roleOf(p Pod) string {
	if p.Role == "" {
		return "nothing (" + strings.TrimSpace(p.Unreachable) + ")"
	}
	return "ROLE " + p.Role
}
