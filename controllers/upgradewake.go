package controllers

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

// A slot that frees wakes the upgrades first in the queue at once (upgrades.go), instead of their next
// recheck: with fifty platforms and two slots, the fleet upgrade otherwise loses up to a recheck at
// every turn, and the recheck of every waiting platform lists the whole fleet. The wake is a watch of
// FormsServices, so it runs once the cache holds the change: the woken reconciles count the freed
// slot, where a wake sent from the reconcile that freed it could still read the cache from before.

// upgradeWake enqueues the waiting upgrades that may take a slot when a FormsService's change may have
// freed one: the first limit() of the queue in reader, at now().
func upgradeWake(reader client.Reader, limit func() int, now func() time.Time) handler.Funcs {
	wake := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		n := limit()
		if n <= 0 {
			return
		}
		var list v1alpha1.FormsServiceList
		if err := reader.List(ctx, &list); err != nil {
			return // the recheck of each waiting one asks again
		}
		for _, key := range firstInQueue(list.Items, n, now()) {
			q.Add(reconcile.Request{NamespacedName: key})
		}
	}
	return handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			o, okOld := e.ObjectOld.(*v1alpha1.FormsService)
			n, okNew := e.ObjectNew.(*v1alpha1.FormsService)
			if okOld && okNew && mayFreeASlot(o, n) {
				wake(ctx, q)
			}
		},
		DeleteFunc: func(ctx context.Context, _ event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			wake(ctx, q)
		},
	}
}

// mayFreeASlot says whether a FormsService's change from o to n may end the upgrade it holds a slot for
// (upgradeUnderWay): its rollout finished (status.operandVersion), it failed (a Deployment's failure
// shows in Progressing and Stalled), it took an image of its own (spec.image), or it is being deleted.
func mayFreeASlot(o, n *v1alpha1.FormsService) bool {
	if o.Status.OperandVersion != n.Status.OperandVersion || o.Spec.Image != n.Spec.Image ||
		o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero() {
		return true
	}
	for _, t := range []string{v1alpha1.ConditionProgressing, v1alpha1.ConditionStalled} {
		a, b := meta.FindStatusCondition(o.Status.Conditions, t), meta.FindStatusCondition(n.Status.Conditions, t)
		if (a == nil) != (b == nil) || (a != nil && (a.Status != b.Status || a.Reason != b.Reason)) {
			return true
		}
	}
	return false
}

// firstInQueue are the keys of the first n FormsServices waiting for a slot, in the queue's order
// (namespace/name; admitUpgrade): only these can take a freed one. One waiting for its team's approval
// or its window is not in the queue.
func firstInQueue(items []v1alpha1.FormsService, n int, now time.Time) []types.NamespacedName {
	var waiting []types.NamespacedName
	for i := range items {
		fs := &items[i]
		if fs.Spec.Image == "" && fs.Status.PendingImage != "" && fs.DeletionTimestamp.IsZero() && !heldByPolicy(fs, now) {
			waiting = append(waiting, client.ObjectKeyFromObject(fs))
		}
	}
	slices.SortFunc(waiting, func(a, b types.NamespacedName) int {
		switch {
		case lessKey(a, b):
			return -1
		case lessKey(b, a):
			return 1
		}
		return 0
	})
	return waiting[:min(n, len(waiting))]
}
