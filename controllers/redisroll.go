package controllers

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/haroll"
	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/services/platform/redisha"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;delete

// The highly available Redis's roll (D85): its StatefulSet updates a pod only when the pod is deleted
// (OnDelete), and this phase deletes them in haroll's order, handing the primary over first. Everything
// it decides from is read now — the pods from the API server, the roles from the nodes and sentinels —
// so a restarted operator, or a new leader, takes the roll up where it stands.

// redisRollRecheck is how soon a FormsService whose Redis roll waits is looked at again: nothing else
// tells the operator that a pod became Ready or a replica caught up (it does not watch pods).
const redisRollRecheck = 5 * time.Second

// switchoverRetry is how soon a hand-over that failed is tried again.
const switchoverRetry = 30 * time.Second

// redisRollReason is Progressing's and Reconciling's reason while the roll is under way, and its Events'.
const redisRollReason = "RedisHARolling"

// rollRedisHA takes the next step of the highly available Redis's roll, if one is under way: a pod of
// the StatefulSet on an old revision.
func (run *reconcileRun) rollRedisHA(ctx context.Context) {
	fs := run.fs
	sts := &appsv1.StatefulSet{}
	if err := run.r.Client.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: render.NamesOf(fs).Redis}, sts); err != nil {
		if !apierrors.IsNotFound(err) {
			run.fail("ReadFailed", fmt.Errorf("StatefulSet %s: %w", render.NamesOf(fs).Redis, err))
		}
		return
	}
	// Only a set the StatefulSet controller has seen as it is, with pods short of the update revision.
	if sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType || sts.Status.ObservedGeneration < sts.Generation ||
		sts.Status.UpdateRevision == "" || sts.Status.UpdatedReplicas >= ptr.Deref(sts.Spec.Replicas, 1) {
		return
	}
	var list corev1.PodList
	if err := run.r.APIReader.List(ctx, &list, client.InNamespace(fs.Namespace), client.MatchingLabels(render.SelectorLabels(fs, render.Redis))); err != nil {
		run.fail("ReadFailed", fmt.Errorf("the Redis pods: %w", err))
		return
	}
	pods := map[string]*corev1.Pod{}
	for i := range list.Items {
		pods[list.Items[i].Name] = &list.Items[i]
	}
	o := haroll.Observed{}
	old := false
	reach := run.r.haReach()
	addrs, _ := reach.addrsOf(fs)
	for i := range render.RedisHAReplicas {
		name := render.RedisHANodeName(fs, i)
		p := haroll.Pod{Name: name, Addr: addrs[i]}
		if pod := pods[name]; pod != nil && pod.DeletionTimestamp.IsZero() {
			p.Present = true
			p.Ready = podReady(pod)
			p.Updated = pod.Labels[appsv1.ControllerRevisionHashLabelKey] == sts.Status.UpdateRevision
			old = old || !p.Updated
		}
		o.Pods = append(o.Pods, p)
	}
	run.requeueAfter = minPositive(run.requeueAfter, redisRollRecheck)
	if !old {
		return // the last pod restarted is on its way back; the StatefulSet's status says so
	}
	node, err := reach.node(ctx, fs)
	if err != nil {
		run.fail("RedisPasswordUnavailable", err)
		return
	}
	o = haroll.WithRoles(o.Pods, redisha.Observe(ctx, node))
	d := haroll.Decide(o)
	run.RedisRoll = d.Message
	switch d.Step {
	case haroll.DeletePod:
		pod := pods[d.Pod]
		err := run.r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID, ResourceVersion: &pod.ResourceVersion})
		switch {
		case err == nil:
			run.r.eventAbout(fs, pod, corev1.EventTypeNormal, redisRollReason, "Deleted Redis pod %s to restart it on revision %s: %s", pod.Name, sts.Status.UpdateRevision, d.Message)
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			// Changed since it was read: the next look decides again.
		default:
			run.fail("RedisPodDeleteFailed", fmt.Errorf("deleting Redis pod %s: %w", pod.Name, err))
		}
	case haroll.Switchover:
		primary := addrs[podOrdinal(o, d.Pod)]
		promoted, err := redisha.Switchover(ctx, node, primary)
		if err != nil {
			// Not a problem to report as Degraded: the roll waits, observes again and asks again.
			run.RedisRoll = fmt.Sprintf("%s The switchover did not finish: %v.", d.Message, err)
			run.r.eventAbout(fs, pods[d.Pod], corev1.EventTypeWarning, "RedisHASwitchoverFailed", "Handing the primary %s over: %v", d.Pod, err)
			// Each try may hold the writes for up to SwitchoverPause: not every 5 s while it keeps failing.
			run.requeueAfter = switchoverRetry
			return
		}
		run.r.eventAbout(fs, pods[d.Pod], corev1.EventTypeNormal, "RedisHASwitchover", "Handed the primary %s over to %s before restarting its pod", d.Pod, strings.Split(promoted, ".")[0])
	}
}

// toOnDelete turns a highly available set made with the default RollingUpdate strategy (by an operator
// before D85) to OnDelete, and says whether the StatefulSet may be applied. An apply of type OnDelete
// alone is refused while the API server's defaulted rollingUpdate stays (no field manager owns it), so
// a merge patch sets the type and drops rollingUpdate first.
func (run *reconcileRun) toOnDelete(ctx context.Context) bool {
	fs := run.fs
	if !render.RedisHA(fs) {
		return true
	}
	sts := &appsv1.StatefulSet{}
	if err := run.r.Client.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: render.NamesOf(fs).Redis}, sts); err != nil {
		return true // none yet (created OnDelete), or the apply reports the error
	}
	if sts.Spec.UpdateStrategy.Type == render.RedisHAUpdateStrategy || !controlledBy(sts, fs) {
		return true
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"updateStrategy":{"type":"`+string(render.RedisHAUpdateStrategy)+`","rollingUpdate":null}}}`))
	if err := run.r.Client.Patch(ctx, sts, patch); err != nil {
		run.fail("ApplyFailed", fmt.Errorf("StatefulSet %s: turning its update strategy to %s: %w", sts.Name, render.RedisHAUpdateStrategy, err))
		return false
	}
	run.r.eventAbout(fs, sts, corev1.EventTypeNormal, "Updated", "StatefulSet %s: update strategy %s (the operator restarts the Redis pods in its order, D85)", sts.Name, render.RedisHAUpdateStrategy)
	return true
}

// podOrdinal is the index of the pod named name in o.
func podOrdinal(o haroll.Observed, name string) int {
	for i, p := range o.Pods {
		if p.Name == name {
			return i
		}
	}
	return -1
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// haReach is how the operator reaches a FormsService's highly available Redis over the network: the
// pods' names and the password from its Secret, or what the reconciler's test hooks (RedisHAAddrs,
// RedisHADial) say. It holds only those, not the reconciler.
type haReach struct {
	reader client.Reader
	addrs  func(fs *v1alpha1.FormsService) (nodes, sentinels []string)
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (r *FormsServiceReconciler) haReach() haReach {
	return haReach{reader: r.APIReader, addrs: r.RedisHAAddrs, dial: r.RedisHADial}
}

// node is the set as the operator reaches it: its nodes, its sentinels and its password.
func (h haReach) node(ctx context.Context, fs *v1alpha1.FormsService) (redisha.Node, error) {
	name := render.NamesOf(fs).RedisPassword
	sec := &corev1.Secret{}
	if err := h.reader.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: name}, sec); err != nil {
		return redisha.Node{}, fmt.Errorf("redis password Secret %s: %w", name, err)
	}
	nodes, sentinels := h.addrsOf(fs)
	return redisha.Node{
		Nodes: nodes, Sentinels: sentinels, Dial: h.dial,
		MasterName: render.RedisHAMasterName, Password: string(sec.Data[render.RedisPasswordKey]),
	}, nil
}

// addrsOf are the set's nodes and sentinels: the pods' names, or what the addrs hook says when it names
// three of each.
func (h haReach) addrsOf(fs *v1alpha1.FormsService) (nodes, sentinels []string) {
	if h.addrs != nil {
		if nodes, sentinels := h.addrs(fs); len(nodes) == render.RedisHAReplicas && len(sentinels) == render.RedisHAReplicas {
			return nodes, sentinels
		}
	}
	return render.RedisHANodeAddrs(fs), render.RedisHASentinelAddrs(fs)
}
