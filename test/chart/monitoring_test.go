package chart_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/formsservice/formsservice/test/internal/cluster"
)

// monitoredFormsService asks for ServiceMonitors; the operator runs its Redis, so no Secret is needed.
func monitoredFormsService(namespace string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"publicURL":      "https://id.shop.example.com",
			"allowedOrigins": []any{"https://shop.example.com"},
			"monitoring": map[string]any{"serviceMonitor": map[string]any{
				"enabled": true, "interval": "30s", "labels": map[string]any{"release": "kube-prometheus-stack"},
			}},
		},
	}}
	u.SetGroupVersionKind(formsServiceGVK)
	u.SetNamespace(namespace)
	u.SetName("shop")
	return u
}

// condition returns the FormsService's condition of that type, or nil.
func condition(t *testing.T, c *cluster.Cluster, namespace, name, typ string) *metav1.Condition {
	t.Helper()
	live := object(formsServiceGVK)
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, live); err != nil {
		t.Fatal(err)
	}
	raw, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
	var conds []metav1.Condition
	for _, r := range raw {
		m, _ := r.(map[string]any)
		conds = append(conds, metav1.Condition{Type: fmt.Sprint(m["type"]), Status: metav1.ConditionStatus(fmt.Sprint(m["status"])),
			Reason: fmt.Sprint(m["reason"]), Message: fmt.Sprint(m["message"])})
	}
	return meta.FindStatusCondition(conds, typ)
}

func noForbidden(t *testing.T, im *cluster.Impersonator) {
	t.Helper()
	if f := im.Forbidden(); len(f) > 0 {
		t.Fatalf("the API server forbade the manager's requests:\n%s", strings.Join(f, "\n"))
	}
}

// serviceMonitorsFollowTheFormsService runs with the manager as the chart's ServiceAccount in a cluster
// with the Prometheus Operator's CRDs (TestRBAC_ManagerRunsAsTheChartsServiceAccount starts both): the
// FormsService's ServiceMonitors are created, select the services' metrics ports, come back when deleted,
// and go away when turned off.
func serviceMonitorsFollowTheFormsService(t *testing.T, c *cluster.Cluster, im *cluster.Impersonator) {
	ctx := context.Background()
	c.CreateNamespace(t, "shop")
	fs := monitoredFormsService("shop")
	if err := c.Client.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}

	components := []string{"forms", "auth", "health"}
	cluster.Eventually(t, 60*time.Second, "three ServiceMonitors and Monitored=True", func() (bool, string) {
		noForbidden(t, im)
		for _, comp := range components {
			if !exists(t, c, object(serviceMonitorGVK), "shop", "shop-"+comp) {
				return false, "no ServiceMonitor shop-" + comp
			}
		}
		cond := condition(t, c, "shop", "shop", "Monitored")
		return cond != nil && cond.Status == metav1.ConditionTrue, fmt.Sprintf("Monitored = %+v", cond)
	})
	for _, comp := range components {
		sm := object(serviceMonitorGVK)
		exists(t, c, sm, "shop", "shop-"+comp)
		if ref := metav1.GetControllerOf(sm); ref == nil || ref.UID != fs.GetUID() {
			t.Errorf("ServiceMonitor shop-%s is not controlled by the FormsService: %v", comp, sm.GetOwnerReferences())
		}
		if sm.GetLabels()["release"] != "kube-prometheus-stack" {
			t.Errorf("ServiceMonitor shop-%s lacks the labels from spec: %v", comp, sm.GetLabels())
		}
		var svc corev1.Service
		exists(t, c, &svc, "shop", "shop-"+comp)
		selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		for k, v := range selector {
			if svc.Labels[k] != v {
				t.Errorf("ServiceMonitor shop-%s selects %s=%s, which Service shop-%s does not carry (%v)", comp, k, v, comp, svc.Labels)
			}
		}
		endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		if len(endpoints) != 1 {
			t.Fatalf("ServiceMonitor shop-%s endpoints = %v", comp, endpoints)
		}
		ep := endpoints[0].(map[string]any)
		var ports []string
		for _, p := range svc.Spec.Ports {
			ports = append(ports, p.Name)
		}
		if !reflect.DeepEqual(ep["port"], "metrics") || !strings.Contains(strings.Join(ports, ","), "metrics") || ep["interval"] != "30s" {
			t.Errorf("ServiceMonitor shop-%s endpoint %v does not scrape the Service's metrics port (ports %v) every 30s", comp, ep, ports)
		}
	}

	// A deleted ServiceMonitor comes back (the operator watches the ones it owns).
	gone := object(serviceMonitorGVK)
	exists(t, c, gone, "shop", "shop-auth")
	if err := c.Client.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 30*time.Second, "the deleted ServiceMonitor is recreated", func() (bool, string) {
		sm := object(serviceMonitorGVK)
		return exists(t, c, sm, "shop", "shop-auth") && sm.GetUID() != gone.GetUID(), "not yet"
	})

	// Turned off: the ServiceMonitors and the condition go away.
	// A merge patch: no resourceVersion to conflict with the operator's status writes.
	live := object(formsServiceGVK)
	exists(t, c, live, "shop", "shop")
	off := []byte(`{"spec":{"monitoring":{"serviceMonitor":{"enabled":false}}}}`)
	if err := c.Client.Patch(ctx, live, client.RawPatch(types.MergePatchType, off)); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 30*time.Second, "ServiceMonitors deleted after enabled=false", func() (bool, string) {
		for _, comp := range components {
			if exists(t, c, object(serviceMonitorGVK), "shop", "shop-"+comp) {
				return false, "ServiceMonitor shop-" + comp + " still there"
			}
		}
		cond := condition(t, c, "shop", "shop", "Monitored")
		return cond == nil, fmt.Sprintf("Monitored = %+v", cond)
	})
	noForbidden(t, im)
}

// TestServiceMonitors_PlatformRunsWithoutThePrometheusOperator asks for ServiceMonitors in a cluster that
// does not serve them: the platform is built all the same, nothing is Degraded, and the Monitored
// condition tells what is missing.
func TestServiceMonitors_PlatformRunsWithoutThePrometheusOperator(t *testing.T) {
	t.Parallel()
	c := cluster.Start(t)
	im, _ := startChartOperator(t, c)
	ctx := context.Background()
	c.CreateNamespace(t, "shop")
	if err := c.Client.Create(ctx, monitoredFormsService("shop")); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 60*time.Second, "the platform is built and Monitored says why there are no ServiceMonitors", func() (bool, string) {
		noForbidden(t, im)
		for _, comp := range []string{"forms", "auth", "health"} {
			if !exists(t, c, &appsv1.Deployment{}, "shop", "shop-"+comp) {
				return false, "no Deployment shop-" + comp
			}
		}
		cond := condition(t, c, "shop", "shop", "Monitored")
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == "PrometheusOperatorMissing",
			fmt.Sprintf("Monitored = %+v", cond)
	})
	if d := condition(t, c, "shop", "shop", "Degraded"); d == nil || d.Status == metav1.ConditionTrue {
		t.Errorf("Degraded = %+v: a missing Prometheus Operator must not degrade the platform", d)
	}
	noForbidden(t, im)
}
