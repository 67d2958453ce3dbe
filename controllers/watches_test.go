package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

func TestAppliedFieldsChanged_StatusAloneDoesNotReconcile(t *testing.T) {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "acme-forms", Generation: 3,
		Labels: map[string]string{"a": "1"}, OwnerReferences: []metav1.OwnerReference{{UID: "u1"}}}}
	p := AppliedFieldsChanged()
	for _, tc := range []struct {
		name   string
		change func(*autoscalingv2.HorizontalPodAutoscaler)
		want   bool
	}{
		{"the autoscaler's status (every sync)", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Status.CurrentReplicas, h.Status.DesiredReplicas = 4, 5
			h.ResourceVersion = "99"
		}, false},
		{"the spec (a new generation)", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Generation = 4 }, true},
		{"a label", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Labels = map[string]string{"a": "2"} }, true},
		{"an annotation", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Annotations = map[string]string{"x": "y"} }, true},
		{"the owners", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.OwnerReferences = nil }, true},
		{"deletion", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.DeletionTimestamp = ptr.To(metav1.Now()) }, true},
	} {
		n := hpa.DeepCopy()
		tc.change(n)
		if got := p.Update(event.UpdateEvent{ObjectOld: hpa, ObjectNew: n}); got != tc.want {
			t.Errorf("%s: reconcile = %v, want %v", tc.name, got, tc.want)
		}
	}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	churned := pdb.DeepCopy()
	churned.Status.DisruptionsAllowed, churned.Status.CurrentHealthy = 1, 3
	if p.Update(event.UpdateEvent{ObjectOld: pdb, ObjectNew: churned}) {
		t.Error("a PodDisruptionBudget's status change reconciles")
	}
	if !p.Create(event.CreateEvent{Object: pdb}) || !p.Delete(event.DeleteEvent{Object: pdb}) {
		t.Error("creates and deletes must reconcile")
	}
}

func TestWorkloadStatusChanged_OnlyWhatTheStatusReports(t *testing.T) {
	d := &appsv1.Deployment{Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2, ReadyReplicas: 2}}
	p := WorkloadStatusChanged()
	same := d.DeepCopy()
	same.Status.CollisionCount = ptr.To[int32](1)
	same.Status.TerminatingReplicas = ptr.To[int32](0)
	if p.Update(event.UpdateEvent{ObjectOld: d, ObjectNew: same}) {
		t.Error("a status field the FormsService does not report reconciles")
	}
	fewer := d.DeepCopy()
	fewer.Status.AvailableReplicas = 1
	if !p.Update(event.UpdateEvent{ObjectOld: d, ObjectNew: fewer}) {
		t.Error("a lost replica does not reconcile")
	}
	stalled := d.DeepCopy()
	stalled.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: "False", Reason: "ProgressDeadlineExceeded"}}
	if !p.Update(event.UpdateEvent{ObjectOld: d, ObjectNew: stalled}) {
		t.Error("a stalled rollout does not reconcile")
	}
}

// The optional kinds are looked up once: a kind the cluster serves (HTTPRoute: the suite installs the
// Gateway API) is never asked for again; a missing one (ServiceMonitor) only when a FormsService needs it,
// and then at most once per Recheck.
func TestServedKinds_DiscoveryOnceThenOnlyForAMissingKindAFormsServiceNeeds(t *testing.T) {
	dc, err := discovery.NewDiscoveryClientForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewServedKinds(dc)
	if err != nil {
		t.Fatal(err)
	}
	// The injected clock starts where the start-up lookups stamped their time, and moves only when told.
	now := time.Now()
	k.Now = func() time.Time { return now }
	if k.Lookups() != len(OptionalKinds) {
		t.Fatalf("%d lookups at start, want one per optional kind", k.Lookups())
	}
	for range 10 {
		if ok, err := k.Serves(HTTPRouteGVK, true); !ok || err != nil {
			t.Fatalf("HTTPRoutes served = %v, %v", ok, err)
		}
		if ok, err := k.Serves(ServiceMonitorGVK, false); ok || err != nil {
			t.Fatalf("ServiceMonitors served = %v, %v", ok, err)
		}
	}
	if k.Lookups() != len(OptionalKinds) {
		t.Errorf("%d lookups after asking about a served kind and an unwanted missing one, want none", k.Lookups()-len(OptionalKinds))
	}
	for range 10 {
		_, _ = k.Serves(ServiceMonitorGVK, true)
	}
	if k.Lookups() != len(OptionalKinds) {
		t.Errorf("a wanted missing kind was looked up again within the recheck interval")
	}
	now = now.Add(DefaultKindRecheck)
	_, _ = k.Serves(ServiceMonitorGVK, true)
	_, _ = k.Serves(ServiceMonitorGVK, true)
	if k.Lookups() != len(OptionalKinds)+1 {
		t.Errorf("%d lookups after the recheck interval, want exactly one more", k.Lookups()-len(OptionalKinds))
	}
}

// Reconciles of a FormsService that asks for ServiceMonitors in a cluster without them send no discovery
// request (before, each one asked for the monitoring.coreos.com group again and got a 404).
func TestReconcile_AMissingKindCostsNoDiscoveryRequest(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := sampleFS(ns)
	fs.Spec.Monitoring = &v1alpha1.MonitoringSpec{ServiceMonitor: &v1alpha1.ServiceMonitorSpec{Enabled: true}}
	fs = createAndWait(t, fs)
	waitCondition(t, fs, v1alpha1.ConditionMonitored, metav1.ConditionFalse, "PrometheusOperatorMissing")
	from := opRequests.Len()
	for range 5 {
		if _, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(fs)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range opRequests.Since(from) {
		if strings.HasPrefix(r.Path, "/apis/monitoring.coreos.com") || r.Path == "/apis" || r.Path == "/api" {
			t.Errorf("a reconcile asked discovery: %s", r)
		}
	}
	if fmt.Sprint(reconciler.Kinds.Served(ServiceMonitorGVK)) != "false" {
		t.Error("the suite's cluster serves ServiceMonitors: this test proves nothing there")
	}
}
