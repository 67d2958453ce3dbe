package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// ServiceMonitors are the Prometheus Operator's (monitoring.coreos.com/v1). The operator does not link
// the Prometheus Operator's Go types: it writes them as unstructured objects, and finds out through
// discovery whether the cluster serves the kind at all.

// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=servicemonitors,verbs=get;list;watch;create;update;patch;delete

// ServiceMonitorGVK is the kind the operator creates for spec.monitoring.serviceMonitor.
var ServiceMonitorGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}

// monitoringRecheck is how often a FormsService that asks for ServiceMonitors looks again for the
// Prometheus Operator's CRDs while they are missing.
const monitoringRecheck = 5 * time.Minute

// monitoringResult is what reconcileServiceMonitors did, for the status and the requeue.
type monitoringResult struct {
	// Condition is the Monitored condition to report; nil removes it.
	Condition *metav1.Condition
	// RequeueAfter asks for another look (the CRDs may be installed later).
	RequeueAfter time.Duration
	// Err is a failed API call; the reconcile returns it so that it is retried with backoff.
	Err error
}

// setCondition puts the result's Monitored condition into a status built by buildStatus.
func (m monitoringResult) setCondition(st *v1alpha1.FormsServiceStatus) {
	if m.Condition == nil {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionMonitored)
		return
	}
	meta.SetStatusCondition(&st.Conditions, *m.Condition)
}

// result is the reconcile's result given its error: a requeue only when there is no error (an error
// is retried with backoff anyway).
func (m monitoringResult) result(err error) ctrl.Result {
	if err != nil {
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: m.RequeueAfter}
}

// serviceMonitorsWanted reports whether fs asks for ServiceMonitors.
func serviceMonitorsWanted(fs *v1alpha1.FormsService) bool {
	return fs.Spec.Monitoring != nil && fs.Spec.Monitoring.ServiceMonitor != nil && fs.Spec.Monitoring.ServiceMonitor.Enabled
}

// reconcileServiceMonitors creates, updates or deletes the ServiceMonitors of fs, applying them with
// apply (the reconcile's). What goes wrong is reported in the Monitored condition only: the platform
// serves without them. A FormsService that never asked for them costs no API request.
func (r *FormsServiceReconciler) reconcileServiceMonitors(ctx context.Context, fs *v1alpha1.FormsService,
	apply func(context.Context, runtime.ApplyConfiguration) (applied, error)) monitoringResult {
	log := ctrl.LoggerFrom(ctx)
	wanted := serviceMonitorsWanted(fs)
	if !wanted && meta.FindStatusCondition(fs.Status.Conditions, v1alpha1.ConditionMonitored) == nil {
		return monitoringResult{}
	}
	condition := func(status metav1.ConditionStatus, reason, msg string) *metav1.Condition {
		return &metav1.Condition{Type: v1alpha1.ConditionMonitored, Status: status, Reason: reason, Message: msg,
			ObservedGeneration: fs.Generation}
	}

	served, err := r.serves(ServiceMonitorGVK, wanted)
	if err != nil {
		return monitoringResult{
			Condition: condition(metav1.ConditionUnknown, "DiscoveryFailed", "Cannot tell whether the cluster serves ServiceMonitors: "+err.Error()),
			Err:       fmt.Errorf("discovering ServiceMonitors: %w", err),
		}
	}
	ap := applier{client: r.Client, scheme: r.Scheme}

	if !wanted {
		// Turned off: remove what this FormsService created (nothing can exist when the kind is not served).
		if served {
			for _, c := range render.Components {
				sm := ServiceMonitor(fs, c)
				deleted, err := ap.deleteIfOwned(ctx, fs, sm)
				if err != nil {
					return monitoringResult{
						Condition: condition(metav1.ConditionFalse, "ServiceMonitorsNotRemoved", err.Error()),
						Err:       fmt.Errorf("ServiceMonitor %s: %w", sm.GetName(), err),
					}
				}
				if deleted {
					log.Info("deleted", "kind", "ServiceMonitor", "name", sm.GetName())
					r.event(fs, "Normal", "Deleted", "Deleted ServiceMonitor %s", sm.GetName())
				}
			}
		}
		return monitoringResult{}
	}

	if !served {
		return monitoringResult{
			Condition: condition(metav1.ConditionFalse, "PrometheusOperatorMissing",
				"spec.monitoring.serviceMonitor.enabled is true but the cluster serves no monitoring.coreos.com/v1 "+
					"ServiceMonitor: install the Prometheus Operator's CRDs. The services still expose /metrics "+
					"(port \"metrics\", prometheus.io/scrape annotations); the operator looks again every "+
					monitoringRecheck.String()+"."),
			RequeueAfter: monitoringRecheck,
		}
	}
	var errs []error
	reason := "ApplyFailed"
	for _, c := range render.Components {
		if _, err := apply(ctx, client.ApplyConfigurationFromUnstructured(ServiceMonitor(fs, c))); err != nil {
			errs = append(errs, fmt.Errorf("ServiceMonitor %s: %w", render.WorkloadName(fs, c), err))
			var notOwned *notOwnedError
			if errors.As(err, &notOwned) {
				reason = "NotOwned"
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		res := monitoringResult{Condition: condition(metav1.ConditionFalse, reason, err.Error())}
		if reason != "NotOwned" {
			res.Err = err
		} else {
			res.RequeueAfter = monitoringRecheck
		}
		return res
	}
	return monitoringResult{Condition: condition(metav1.ConditionTrue, "ServiceMonitorsApplied",
		"ServiceMonitors for forms, auth and health select each service's \"metrics\" port.")}
}

// ServiceMonitor is the desired ServiceMonitor of one component: it selects the component's Service by
// its selector labels and scrapes its "metrics" port at /metrics. A pure function, like package render's.
func ServiceMonitor(fs *v1alpha1.FormsService, component string) *unstructured.Unstructured {
	sm := &unstructured.Unstructured{}
	sm.SetGroupVersionKind(ServiceMonitorGVK)
	sm.SetNamespace(fs.Namespace)
	sm.SetName(render.WorkloadName(fs, component))
	sm.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "FormsService", Name: fs.Name, UID: fs.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}})

	var spec v1alpha1.ServiceMonitorSpec
	if serviceMonitorsWanted(fs) {
		spec = *fs.Spec.Monitoring.ServiceMonitor
	}
	labels := map[string]string{}
	for k, v := range spec.Labels {
		labels[k] = v
	}
	for k, v := range render.Labels(fs, component) { // the operator's own labels win
		labels[k] = v
	}
	sm.SetLabels(labels)

	// honorLabels: the services' metrics carry a `service` label (forms, auth, health, platform) that the
	// dashboard and the alerts group by; without it Prometheus would rename it to exported_service and
	// put the Kubernetes Service's name in its place (the e2e's Prometheus phase shows both).
	endpoint := map[string]any{"port": "metrics", "path": "/metrics", "scheme": "http", "honorLabels": true}
	if spec.Interval != "" {
		endpoint["interval"] = spec.Interval
	}
	if spec.ScrapeTimeout != "" {
		endpoint["scrapeTimeout"] = spec.ScrapeTimeout
	}
	matchLabels := map[string]any{}
	for k, v := range render.SelectorLabels(fs, component) {
		matchLabels[k] = v
	}
	sm.Object["spec"] = map[string]any{
		"selector":          map[string]any{"matchLabels": matchLabels},
		"namespaceSelector": map[string]any{"matchNames": []any{fs.Namespace}},
		"endpoints":         []any{endpoint},
	}
	return sm
}

// ownServiceMonitors adds a watch on the ServiceMonitors the operator owns, so that a deleted or edited
// one is put back, when the cluster serves the kind at start-up. A watch on a kind that is not served
// would keep the manager from starting; when the Prometheus Operator arrives later, the periodic
// recheck creates the ServiceMonitors and a restart of the operator adds the watch.
func (r *FormsServiceReconciler) ownServiceMonitors(mgr ctrl.Manager, b *builder.Builder) *builder.Builder {
	if !r.Kinds.Served(ServiceMonitorGVK) {
		mgr.GetLogger().Info("not watching ServiceMonitors: the cluster did not serve them at start-up")
		return b
	}
	sm := &unstructured.Unstructured{}
	sm.SetGroupVersionKind(ServiceMonitorGVK)
	return b.Owns(sm)
}
