package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// The managed Redis's objects, by name, as the store phase keeps or removes them (D72).
func managedRedisObjectsIn(ns string) map[string]client.Object {
	return map[string]client.Object{
		"StatefulSet acme-redis":      &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme-redis"}},
		"Service acme-redis":          &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme-redis"}},
		"ConfigMap acme-redis-config": &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme-redis-config"}},
		"NetworkPolicy acme-redis":    &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme-redis"}},
		"ServiceAccount acme-redis":   &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme-redis"}},
	}
}

// uidsOf reads each object and returns its UID ("" for one that does not exist).
func uidsOf(t *testing.T, objs map[string]client.Object) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for name, o := range objs {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(o), o)
		switch {
		case apierrors.IsNotFound(err):
			out[name] = ""
		case err != nil:
			t.Fatal(err)
		default:
			out[name] = o.GetUID()
		}
	}
	return out
}

// hasWarning is hasEvent for a Warning whose note holds every fragment.
func hasWarning(ns, fsName, reason string, fragments ...string) error {
	var list eventsv1.EventList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, e := range list.Items {
		if e.Regarding.Name == fsName && e.Reason == reason && e.Type == corev1.EventTypeWarning &&
			!slices.ContainsFunc(fragments, func(f string) bool { return !strings.Contains(e.Note, f) }) {
			return nil
		}
	}
	return fmt.Errorf("no Warning %s with %q yet", reason, fragments)
}

// Setting spec.redis.addresses on a FormsService that runs the managed Redis moves the services to the
// named store, and keeps the managed Redis running, untouched, reported by ManagedRedisRetained (with
// a Warning) and not degrading anything; removing the addresses goes back to the same StatefulSet; an
// acknowledgement naming another StatefulSet does nothing; the one naming this StatefulSet's UID
// removes it (D72).
func TestExternalRedis_TheManagedRedisIsKeptUntilItsRemovalIsAcknowledged(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := createAndWait(t, sampleFS(ns))
	objs := managedRedisObjectsIn(ns)
	var before map[string]types.UID
	eventuallyWhat(t, "the managed Redis's objects created", func() error {
		before = uidsOf(t, objs)
		for name, uid := range before {
			if uid == "" {
				return fmt.Errorf("%s not created yet", name)
			}
		}
		return nil
	})
	var sts appsv1.StatefulSet
	if err := k8s.Get(ctx, key(ns, "acme-redis"), &sts); err != nil {
		t.Fatal(err)
	}
	managedAddrs := configOf(t, ns, "acme", render.Forms).Redis.Addrs
	const external = "redis.data.svc:6379"

	// The move: the services are configured for the external store, the managed one stays.
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Spec.Redis = v1alpha1.RedisSpec{Addresses: []v1alpha1.HostPort{external}}
	})
	acknowledge := fmt.Sprintf("kubectl annotate fs acme %s=%s", v1alpha1.RemoveManagedRedisAnnotation, sts.UID)
	waitCondition(t, fs, v1alpha1.ConditionManagedRedisRetained, metav1.ConditionTrue, "ExternalRedisInUse",
		"StatefulSet acme-redis", "data-acme-redis-0", "Remove spec.redis.addresses to go back", acknowledge)
	for _, c := range render.Components {
		if got := configOf(t, ns, "acme", c).Redis.Addrs; !slices.Equal(got, []string{external}) {
			t.Errorf("%s's configuration names Redis %v, want %s", c, got, external)
		}
	}
	waitReconciled(t, fs)
	if after := uidsOf(t, objs); !maps.Equal(after, before) {
		t.Errorf("the managed Redis's objects changed while retained: %v, were %v", after, before)
	}
	// Kept on purpose: nothing is degraded or stalled by it.
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected")
	var cur v1alpha1.FormsService
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(fs), &cur); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionStalled); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Stalled = %+v while the managed Redis is retained", c)
	}
	eventually(t, func() error {
		return hasWarning(ns, "acme", "ExternalRedisInUse", "ManagedRedisRetained=True", acknowledge)
	})

	// An acknowledgement that names another StatefulSet (another resource's, copied) removes nothing.
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Annotations = map[string]string{v1alpha1.RemoveManagedRedisAnnotation: "5b0f7c1e-0000-4000-8000-000000000000"}
	})
	waitCondition(t, fs, v1alpha1.ConditionManagedRedisRetained, metav1.ConditionTrue, "ExternalRedisInUse",
		"names another StatefulSet: nothing was removed", acknowledge)
	waitReconciled(t, fs)
	if after := uidsOf(t, objs); !maps.Equal(after, before) {
		t.Errorf("a wrong acknowledgement removed or replaced objects: %v, were %v", after, before)
	}

	// The way back: the addresses removed, the services return to the same store, which was not
	// written to (the same StatefulSet, at the same generation: its pod did not restart).
	updateFS(t, fs, func(fs *v1alpha1.FormsService) { fs.Spec.Redis = v1alpha1.RedisSpec{} })
	eventuallyWhat(t, "ManagedRedisRetained gone, forms back on the managed Redis", func() error {
		var cur v1alpha1.FormsService
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(fs), &cur); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionManagedRedisRetained); c != nil {
			return fmt.Errorf("still %s: %s", c.Status, c.Message)
		}
		if got := configOf(t, ns, "acme", render.Forms).Redis.Addrs; !slices.Equal(got, managedAddrs) {
			return fmt.Errorf("forms on %v, want %v", got, managedAddrs)
		}
		return nil
	})
	waitReconciled(t, fs)
	var back appsv1.StatefulSet
	if err := k8s.Get(ctx, key(ns, "acme-redis"), &back); err != nil {
		t.Fatal(err)
	}
	if back.UID != sts.UID || back.Generation != sts.Generation {
		t.Errorf("the managed Redis came back as UID %s generation %d, was %s generation %d", back.UID, back.Generation, sts.UID, sts.Generation)
	}
	if after := uidsOf(t, objs); !maps.Equal(after, before) {
		t.Errorf("the managed Redis's objects after the way back: %v, were %v", after, before)
	}

	// Moved again, with the acknowledgement naming this StatefulSet: the managed Redis is removed.
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Spec.Redis = v1alpha1.RedisSpec{Addresses: []v1alpha1.HostPort{external}}
		fs.Annotations = map[string]string{v1alpha1.RemoveManagedRedisAnnotation: string(sts.UID)}
	})
	eventuallyWhat(t, "the managed Redis's objects removed", func() error {
		for name, uid := range uidsOf(t, objs) {
			if uid != "" {
				return fmt.Errorf("%s still there", name)
			}
		}
		return nil
	})
	eventually(t, func() error { return hasEvent(ns, "acme", "ManagedRedisRemoved", string(sts.UID)) })
	eventually(t, func() error { return hasEvent(ns, "acme", "Deleted", "StatefulSet acme-redis") })
	waitReconciled(t, fs)
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(fs), &cur); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionManagedRedisRetained); c != nil {
		t.Errorf("ManagedRedisRetained after the removal: %s %s", c.Status, c.Message)
	}
	// The password Secret stays: the claims it protects stay too.
	if err := k8s.Get(ctx, key(ns, "acme-redis-password"), &corev1.Secret{}); err != nil {
		t.Errorf("the Redis password Secret: %v", err)
	}
}

// A retained managed Redis whose StatefulSet a person deletes stops being retained: what is left of it
// (its Service, ConfigMap, policy, account) serves nothing and is removed without an acknowledgement.
func TestExternalRedis_WhatIsLeftOfADeletedManagedRedisIsRemoved(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := createAndWait(t, sampleFS(ns))
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme-redis"), &appsv1.StatefulSet{}) })
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Spec.Redis = v1alpha1.RedisSpec{Addresses: []v1alpha1.HostPort{"redis.data.svc:6379"}}
	})
	waitCondition(t, fs, v1alpha1.ConditionManagedRedisRetained, metav1.ConditionTrue, "ExternalRedisInUse")
	if err := k8s.Delete(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme-redis"}}); err != nil {
		t.Fatal(err)
	}
	eventuallyWhat(t, "what is left of the managed Redis removed, ManagedRedisRetained gone", func() error {
		for name, uid := range uidsOf(t, managedRedisObjectsIn(ns)) {
			if uid != "" {
				return fmt.Errorf("%s still there", name)
			}
		}
		var cur v1alpha1.FormsService
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(fs), &cur); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionManagedRedisRetained); c != nil {
			return fmt.Errorf("ManagedRedisRetained still %s", c.Status)
		}
		return nil
	})
}
