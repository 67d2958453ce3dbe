package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

func TestServiceMonitor_SelectsTheComponentsMetricsPort(t *testing.T) {
	fs := &v1alpha1.FormsService{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "acme"}}
	fs.Spec.Monitoring = &v1alpha1.MonitoringSpec{ServiceMonitor: &v1alpha1.ServiceMonitorSpec{
		Enabled: true, Interval: "15s", ScrapeTimeout: "10s",
		Labels: map[string]string{"release": "prom", render.LabelComponent: "spoofed"},
	}}
	for _, c := range render.Components {
		sm := ServiceMonitor(fs, c)
		if sm.GetName() != "acme-"+c || sm.GetNamespace() != "shop" || sm.GroupVersionKind() != ServiceMonitorGVK {
			t.Fatalf("%s: %s %s/%s", c, sm.GroupVersionKind(), sm.GetNamespace(), sm.GetName())
		}
		if sm.GetLabels()["release"] != "prom" || sm.GetLabels()[render.LabelComponent] != c {
			t.Errorf("%s: labels %v: want the spec's labels, with the operator's own winning", c, sm.GetLabels())
		}
		sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		svc := render.Service(fs, c)
		for k, v := range sel {
			if svc.Labels[k] != v {
				t.Errorf("%s: selects %s=%s, which the Service does not carry", c, k, v)
			}
		}
		if len(sel) == 0 {
			t.Errorf("%s: empty selector would select every Service in the namespace", c)
		}
		eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		ep := eps[0].(map[string]any)
		found := false
		for _, p := range svc.Spec.Ports {
			found = found || ptr.Deref(p.Name, "") == ep["port"]
		}
		if !found || ep["path"] != "/metrics" || ep["interval"] != "15s" || ep["scrapeTimeout"] != "10s" {
			t.Errorf("%s: endpoint %v does not scrape a port of the Service", c, ep)
		}
		if ep["honorLabels"] != true {
			t.Errorf("%s: endpoint %v: want honorLabels, so that the metrics keep their own service label", c, ep)
		}
		ns, _, _ := unstructured.NestedStringSlice(sm.Object, "spec", "namespaceSelector", "matchNames")
		if len(ns) != 1 || ns[0] != "shop" {
			t.Errorf("%s: namespaceSelector %v, want only the FormsService's namespace", c, ns)
		}
	}
}

func TestServiceMonitor_DefaultsLeaveIntervalsToPrometheus(t *testing.T) {
	fs := &v1alpha1.FormsService{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "acme"}}
	fs.Spec.Monitoring = &v1alpha1.MonitoringSpec{ServiceMonitor: &v1alpha1.ServiceMonitorSpec{Enabled: true}}
	eps, _, _ := unstructured.NestedSlice(ServiceMonitor(fs, render.Forms).Object, "spec", "endpoints")
	ep := eps[0].(map[string]any)
	if _, ok := ep["interval"]; ok {
		t.Errorf("interval set without spec: %v", ep)
	}
	if _, ok := ep["scrapeTimeout"]; ok {
		t.Errorf("scrapeTimeout set without spec: %v", ep)
	}
}
