package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// The highly available Redis's StatefulSet is OnDelete (D85): its controller restarts no pod by
// itself, the operator does, in its order. Here no Redis answers (envtest runs no pods): with pods on
// an old revision, the operator reports the roll (Progressing and Reconciling, RedisHARolling, the
// reason named) and deletes nothing, since it cannot tell the primary; a pod that is not Ready is named
// first, whatever else is wrong. The StatefulSet controller and the kubelet are played by hand.
func TestRedisHARoll_OnDelete_NothingDeletedWhileThePrimaryCannotBeTold(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := sampleFS(ns)
	fs.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{HighAvailability: true}
	fs = createAndWait(t, fs)

	sts := &appsv1.StatefulSet{}
	eventuallyWhat(t, "the highly available StatefulSet", func() error {
		if err := k8s.Get(ctx, key(ns, "acme-redis"), sts); err != nil {
			return err
		}
		if sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType || sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
			return fmt.Errorf("update strategy %q, pod management %q", sts.Spec.UpdateStrategy.Type, sts.Spec.PodManagementPolicy)
		}
		return nil
	})

	// The StatefulSet controller's part: three pods on the old revision, Ready, and a status that says
	// the update revision is another.
	for i := range render.RedisHAReplicas {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("acme-redis-%d", i), Labels: render.SelectorLabels(fs, render.Redis)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "redis", Image: "redis"}}}}
		pod.Labels[appsv1.ControllerRevisionHashLabelKey] = "acme-redis-old"
		if err := k8s.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		updateStatusOf(t, pod, func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		})
	}
	updateStatusOf(t, sts, func(s *appsv1.StatefulSet) {
		s.Status = appsv1.StatefulSetStatus{ObservedGeneration: s.Generation, Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
			CurrentReplicas: 3, UpdatedReplicas: 0, CurrentRevision: "acme-redis-old", UpdateRevision: "acme-redis-new"}
	})

	rolling := func(want string) {
		t.Helper()
		eventuallyWhat(t, "Progressing: RedisHARolling, "+want, func() error {
			got := &v1alpha1.FormsService{}
			if err := k8s.Get(ctx, key(ns, "acme"), got); err != nil {
				return err
			}
			for _, typ := range []string{v1alpha1.ConditionProgressing, v1alpha1.ConditionReconciling} {
				c := meta.FindStatusCondition(got.Status.Conditions, typ)
				if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "RedisHARolling" || !strings.Contains(c.Message, want) {
					return fmt.Errorf("%s: %+v", typ, c)
				}
			}
			return nil
		})
	}
	rolling("0 of 3 Redis pods on the current revision; waiting: no sentinel names the primary")

	// A pod that is not Ready is what the roll names.
	updateStatusOf(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme-redis-1"}}, func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Now()}}
	})
	rolling("acme-redis-1 is not Ready; no pod is deleted while another is not Ready")

	// Ready again: the roll looks again with every pod Ready, and still cannot tell the primary.
	updateStatusOf(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme-redis-1"}}, func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	})
	rolling("waiting: no sentinel names the primary")
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if !p.DeletionTimestamp.IsZero() {
			t.Errorf("pod %s deleted while the primary could not be told", p.Name)
		}
	}
	if len(pods.Items) != 3 {
		t.Errorf("%d pods, want all 3", len(pods.Items))
	}
}

// A highly available set made by an operator before D85 has the default RollingUpdate strategy (with
// the API server's defaulted rollingUpdate.partition): the operator's apply turns it to OnDelete.
func TestRedisHARoll_ASetMadeRollingUpdateTurnsOnDelete(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := sampleFS(ns)
	fs.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{HighAvailability: true}
	fs = createAndWait(t, fs)
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme-redis"}}
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme-redis"), sts) })
	// What the older operator left: RollingUpdate, written by another manager as the defaults were.
	updateObject(t, sts, func(s *appsv1.StatefulSet) {
		s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)}}
	})
	updateFS(t, fs, func(fs *v1alpha1.FormsService) { fs.Annotations = map[string]string{"touch": "1"} })
	eventuallyWhat(t, "the set turned OnDelete", func() error {
		if err := k8s.Get(ctx, key(ns, "acme-redis"), sts); err != nil {
			return err
		}
		if sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
			return fmt.Errorf("update strategy %+v", sts.Spec.UpdateStrategy)
		}
		return nil
	})
}
