package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Turning highAvailability on turns the single Redis's StatefulSet into three pods in place (same name,
// same claims), adds a headless Service per pod and a PodDisruptionBudget, opens the Redis policy to the
// sentinel port, and points the services at the sentinels with forms at durability primary.
func TestRedisHA_TurnedOn_RendersTheSetInPlace_ServicesThroughTheSentinels(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := createAndWait(t, sampleFS(ns))
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme-redis"), &appsv1.StatefulSet{}) })

	single := &appsv1.StatefulSet{}
	if err := k8s.Get(ctx, key(ns, "acme-redis"), single); err != nil {
		t.Fatal(err)
	}
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{HighAvailability: true}
	})
	// The single Redis's set was created OrderedReady, which the set cannot change to Parallel: it is
	// deleted with orphan propagation (its pod keeps running) and made again. Play the garbage
	// collector, which envtest does not run.
	eventuallyWhat(t, "the single Redis's StatefulSet deleted, its pod orphaned", func() error {
		s := &appsv1.StatefulSet{}
		if err := k8s.Get(ctx, key(ns, "acme-redis"), s); err != nil {
			return err
		}
		if s.DeletionTimestamp.IsZero() || !strings.Contains(fmt.Sprint(s.Finalizers), metav1.FinalizerOrphanDependents) {
			return fmt.Errorf("policy %s, deletionTimestamp %v, finalizers %v", s.Spec.PodManagementPolicy, s.DeletionTimestamp, s.Finalizers)
		}
		return nil
	})
	updateObject(t, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme-redis"}}, func(s *appsv1.StatefulSet) { s.Finalizers = nil })
	var sts appsv1.StatefulSet
	eventuallyWhat(t, "the Redis StatefulSet at 3 replicas with the sentinel", func() error {
		if err := k8s.Get(ctx, key(ns, "acme-redis"), &sts); err != nil {
			return err
		}
		if ptr.Deref(sts.Spec.Replicas, 0) != 3 || len(sts.Spec.Template.Spec.Containers) != 2 || len(sts.Spec.Template.Spec.InitContainers) != 1 {
			return fmt.Errorf("replicas %d, %d containers", ptr.Deref(sts.Spec.Replicas, 0), len(sts.Spec.Template.Spec.Containers))
		}
		return nil
	})
	if sts.UID == single.UID || sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("the highly available set: uid %s (the single one's %s), pod management %s; want a new set, Parallel", sts.UID, single.UID, sts.Spec.PodManagementPolicy)
	}
	if sts.Spec.ServiceName != "acme-redis" || sts.Spec.VolumeClaimTemplates[0].Name != "data" {
		t.Errorf("not the single Redis's set: service %s claims %v", sts.Spec.ServiceName, sts.Spec.VolumeClaimTemplates)
	}
	for i := range render.RedisHAReplicas {
		var svc corev1.Service
		name := fmt.Sprintf("acme-redis-%d", i)
		eventually(t, func() error { return k8s.Get(ctx, key(ns, name), &svc) })
		if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses || len(svc.OwnerReferences) != 1 {
			t.Errorf("Service %s: %+v", name, svc.Spec)
		}
	}
	var pdb policyv1.PodDisruptionBudget
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme-redis"), &pdb) })
	if pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PDB %+v", pdb.Spec)
	}
	var np networkingv1.NetworkPolicy
	if err := k8s.Get(ctx, key(ns, "acme-redis"), &np); err != nil {
		t.Fatal(err)
	}
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].Ports) != 2 || np.Spec.Ingress[0].Ports[1].Port.IntValue() != render.SentinelPort {
		t.Errorf("the Redis policy does not admit the sentinel port: %+v", np.Spec.Ingress)
	}
	eventuallyWhat(t, "forms configured through the sentinels at durability primary", func() error {
		c := configOf(t, ns, "acme", render.Forms)
		if c.Redis.MasterName != render.RedisHAMasterName || !slices.Equal(c.Redis.Addrs, render.RedisHASentinelAddrs(fs)) ||
			c.Forms.Durability != config.DurabilityPrimary || c.Redis.SentinelPasswordFile == "" {
			return fmt.Errorf("redis %+v, durability %q", c.Redis, c.Forms.Durability)
		}
		return nil
	})

	// Moving to your own Redis keeps the managed one, its per-pod Services and its budget until the
	// removal is acknowledged (D72); then they go with it.
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Spec.Redis = v1alpha1.RedisSpec{Addresses: []v1alpha1.HostPort{"redis.example.internal:6379"}}
	})
	waitCondition(t, fs, v1alpha1.ConditionManagedRedisRetained, metav1.ConditionTrue, "ExternalRedisInUse",
		"data-acme-redis-0, data-acme-redis-1, data-acme-redis-2")
	for _, name := range []string{"acme-redis-0", "acme-redis-1", "acme-redis-2"} {
		if err := k8s.Get(ctx, key(ns, name), &corev1.Service{}); err != nil {
			t.Errorf("the retained Redis's Service %s: %v", name, err)
		}
	}
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Annotations = map[string]string{v1alpha1.RemoveManagedRedisAnnotation: string(sts.UID)}
	})
	eventuallyWhat(t, "the managed Redis's HA objects removed", func() error {
		for _, o := range []client.Object{&corev1.Service{}, &policyv1.PodDisruptionBudget{}} {
			name := "acme-redis-0"
			if _, ok := o.(*policyv1.PodDisruptionBudget); ok {
				name = "acme-redis"
			}
			if err := k8s.Get(ctx, key(ns, name), o); err == nil {
				return fmt.Errorf("%T %s still there", o, name)
			}
		}
		return nil
	})
}

// Once on, highAvailability stays on: scaled back to one pod, pod 0 may be a replica by then.
func TestCRD_RedisHighAvailabilityCannotBeTurnedOff(t *testing.T) {
	ctx := context.Background()
	fs := sampleFS(newNamespace(t))
	fs.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{HighAvailability: true}
	if err := k8s.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*v1alpha1.FormsService){
		"set to false":    func(fs *v1alpha1.FormsService) { fs.Spec.Redis.Managed.HighAvailability = false },
		"managed removed": func(fs *v1alpha1.FormsService) { fs.Spec.Redis.Managed = nil },
		"other managed tune": func(fs *v1alpha1.FormsService) {
			fs.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{Image: "mirror.example/valkey:8"}
		},
	} {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(fs), fs); err != nil {
				return err
			}
			mutate(fs)
			return k8s.Update(ctx, fs)
		})
		if err == nil || !strings.Contains(err.Error(), "highAvailability cannot be turned off") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A change that keeps it on is accepted.
	updateFS(t, fs, func(fs *v1alpha1.FormsService) { fs.Spec.Redis.Managed.Image = "mirror.example/valkey:8" })
}

// podAntiAffinity is Preferred or Required (the CRD refuses anything else and fills in Preferred), and
// Required reaches the StatefulSet as a required anti-affinity on the node, beside the zone spread.
func TestCRD_RedisPodAntiAffinity_UnknownRefused_RequiredReachesTheStatefulSet(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	bad := sampleFS(ns)
	bad.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{HighAvailability: true, PodAntiAffinity: "Always"}
	err := k8s.Create(ctx, bad)
	if err == nil || !strings.Contains(err.Error(), "spec.redis.managed.podAntiAffinity") || !strings.Contains(err.Error(), `"Preferred", "Required"`) {
		t.Fatalf("an unknown podAntiAffinity: %v", err)
	}

	fs := sampleFS(ns)
	fs.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{HighAvailability: true}
	fs = createAndWait(t, fs)
	if got := fs.Spec.Redis.Managed.PodAntiAffinity; got != v1alpha1.RedisAntiAffinityPreferred {
		t.Errorf("podAntiAffinity defaulted to %q, want Preferred", got)
	}
	antiAffinity := func(s *appsv1.StatefulSet) *corev1.PodAntiAffinity {
		if a := s.Spec.Template.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
			return a.PodAntiAffinity
		}
		return &corev1.PodAntiAffinity{}
	}
	var sts appsv1.StatefulSet
	eventuallyWhat(t, "the Redis StatefulSet with a preferred anti-affinity", func() error {
		if err := k8s.Get(ctx, key(ns, "acme-redis"), &sts); err != nil {
			return err
		}
		if aa := antiAffinity(&sts); len(aa.PreferredDuringSchedulingIgnoredDuringExecution) != 1 || len(aa.RequiredDuringSchedulingIgnoredDuringExecution) != 0 {
			return fmt.Errorf("anti-affinity %+v", aa)
		}
		return nil
	})
	spread := sts.Spec.Template.Spec.TopologySpreadConstraints
	if len(spread) != 1 || spread[0].TopologyKey != render.ZoneTopologyKey || spread[0].WhenUnsatisfiable != corev1.ScheduleAnyway ||
		spread[0].MaxSkew != 1 || len(spread[0].MatchLabelKeys) != 0 {
		t.Errorf("zone spread %+v", spread)
	}

	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Spec.Redis.Managed.PodAntiAffinity = v1alpha1.RedisAntiAffinityRequired
	})
	eventuallyWhat(t, "the Redis StatefulSet with a required anti-affinity on the node", func() error {
		if err := k8s.Get(ctx, key(ns, "acme-redis"), &sts); err != nil {
			return err
		}
		aa := antiAffinity(&sts)
		if len(aa.RequiredDuringSchedulingIgnoredDuringExecution) != 1 || len(aa.PreferredDuringSchedulingIgnoredDuringExecution) != 0 {
			return fmt.Errorf("anti-affinity %+v", aa)
		}
		if term := aa.RequiredDuringSchedulingIgnoredDuringExecution[0]; term.TopologyKey != render.NodeTopologyKey ||
			term.LabelSelector.MatchLabels[render.LabelComponent] != render.Redis || term.LabelSelector.MatchLabels[render.LabelInstance] != "acme" {
			return fmt.Errorf("required term %+v", term)
		}
		return nil
	})
}
