package controllers

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

func TestUpgradeWake_OnlyAChangeThatMayEndAnUpgradeWakes(t *testing.T) {
	base := func() *v1alpha1.FormsService {
		fs := &v1alpha1.FormsService{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x", Generation: 3}}
		fs.Status.OperandVersion = "img:1"
		fs.Status.Conditions = []metav1.Condition{
			{Type: v1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: "RollingOut"},
			{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionFalse, Reason: "AsExpected"},
			{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "RollingOut"},
		}
		return fs
	}
	cases := []struct {
		name   string
		change func(n *v1alpha1.FormsService)
		wakes  bool
	}{
		{"nothing", func(*v1alpha1.FormsService) {}, false},
		{"Ready alone", func(n *v1alpha1.FormsService) { n.Status.Conditions[2].Status = metav1.ConditionTrue }, false},
		{"a message alone", func(n *v1alpha1.FormsService) { n.Status.Conditions[0].Message = "2 of 3" }, false},
		{"the generation", func(n *v1alpha1.FormsService) { n.Generation++ }, false},
		{"the rollout finished", func(n *v1alpha1.FormsService) { n.Status.OperandVersion = "img:2" }, true},
		{"Progressing's reason", func(n *v1alpha1.FormsService) { n.Status.Conditions[0].Reason = "ProgressDeadlineExceeded" }, true},
		{"Stalled", func(n *v1alpha1.FormsService) { n.Status.Conditions[1].Status = metav1.ConditionTrue }, true},
		{"Progressing gone", func(n *v1alpha1.FormsService) { n.Status.Conditions = n.Status.Conditions[1:] }, true},
		{"an image of its own", func(n *v1alpha1.FormsService) { n.Spec.Image = "team:7" }, true},
		{"being deleted", func(n *v1alpha1.FormsService) { n.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }, true},
	}
	for _, c := range cases {
		o, n := base(), base()
		c.change(n)
		if got := mayFreeASlot(o, n); got != c.wakes {
			t.Errorf("%s: mayFreeASlot = %v, want %v", c.name, got, c.wakes)
		}
	}
}

func TestUpgradeWake_WakesTheFirstOfTheQueueInItsOrder(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) // a Monday
	fs := func(ns, name, pending string, edit ...func(*v1alpha1.FormsService)) v1alpha1.FormsService {
		f := v1alpha1.FormsService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		f.Status.PendingImage = pending
		for _, e := range edit {
			e(&f)
		}
		return f
	}
	manual := func(f *v1alpha1.FormsService) {
		f.Spec.UpdatePolicy = &v1alpha1.UpdatePolicy{Mode: v1alpha1.UpdateModeManual}
	}
	closedWindow := func(f *v1alpha1.FormsService) {
		f.Spec.UpdatePolicy = &v1alpha1.UpdatePolicy{MaintenanceWindows: []v1alpha1.MaintenanceWindow{"Sat:01:00-05:00"}}
	}
	pinned := func(f *v1alpha1.FormsService) { f.Spec.Image = "team:7" }
	deleting := func(f *v1alpha1.FormsService) { f.DeletionTimestamp = &metav1.Time{Time: now} }
	items := []v1alpha1.FormsService{
		fs("b", "one", "img:2"),
		fs("a", "two", "img:2"),
		fs("a", "approval", "img:2", manual),
		fs("a", "asleep", "img:2", closedWindow),
		fs("a", "own", "img:2", pinned),
		fs("a", "gone", "img:2", deleting),
		fs("a", "done", ""),
		fs("c", "three", "img:2"),
	}
	key := func(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	for n, want := range map[int][]types.NamespacedName{
		0: nil,
		1: {key("a", "two")},
		2: {key("a", "two"), key("b", "one")},
		5: {key("a", "two"), key("b", "one"), key("c", "three")},
	} {
		if got := firstInQueue(items, n, now); !slices.Equal(got, want) {
			t.Errorf("the first %d of the queue: %v, want %v", n, got, want)
		}
	}
}
