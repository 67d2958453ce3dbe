package controllers

import (
	"context"
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// DefaultWorkers is how many FormsServices are reconciled at once unless --max-concurrent-reconciles says
// otherwise. A reconcile of an unchanged resource is a few cache reads and one GET per Secret, so two
// workers keep up with a thousand resources rechecked every minute (controllers/scale measures it).
const DefaultWorkers = 2

// SetupWithManager registers the controller: it watches FormsServices and every kind of object they own.
// Secrets are not watched (that would need list and watch on every Secret): a reconcile reads the ones it
// needs by name, and comes back every SecretRecheck to notice a change.
//
// An owned object's change reconciles its FormsService only when it is one the reconcile acts on: a
// change of what the operator applied (the generation, labels, annotations, owners), its deletion, or
// the part of a status the FormsService's status reports. The status churn of HorizontalPodAutoscalers
// (metrics every 15 s) and PodDisruptionBudgets (every pod that comes and goes) reconciles nothing.
func (r *FormsServiceReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	// The typed client encodes the options of an apply (PatchOptions) for the group of the request: the
	// Gateway API's group needs them registered, though its types are not (HTTPRoutes are read back as
	// unstructured objects).
	metav1.AddToGroupVersion(mgr.GetScheme(), HTTPRouteGVK.GroupVersion())
	if r.Kinds == nil {
		kinds, err := DiscoverKinds(mgr.GetConfig())
		if err != nil {
			return fmt.Errorf("discovering the optional kinds: %w", err)
		}
		r.Kinds = kinds
	}
	applied := builder.WithPredicates(AppliedFieldsChanged())
	b := ctrl.NewControllerManagedBy(mgr).
		Named("formsservice").
		// Spec changes and annotation changes (the signing-key rotation); not our own status writes.
		For(&v1alpha1.FormsService{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// No status churn on these: every change is worth a look (a ConfigMap counts no generation).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Owns(&appsv1.Deployment{}, builder.WithPredicates(predicate.Or(AppliedFieldsChanged(), WorkloadStatusChanged()))).
		Owns(&appsv1.StatefulSet{}, builder.WithPredicates(predicate.Or(AppliedFieldsChanged(), WorkloadStatusChanged()))).
		Owns(&networkingv1.Ingress{}, builder.WithPredicates(predicate.Or(AppliedFieldsChanged(), statusChanged()))). // status.routes
		Owns(&policyv1.PodDisruptionBudget{}, applied).
		Owns(&autoscalingv2.HorizontalPodAutoscaler{}, applied).
		Owns(&batchv1.CronJob{}, applied).
		// Backup and restore Jobs, the CronJob's too (owned by it, not by the FormsService): their
		// outcome is status.backup and the Restored condition (backup.go).
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(instanceOf)).
		// A FormsService whose change may free an upgrade slot wakes the first in the queue (upgradewake.go).
		Watches(&v1alpha1.FormsService{}, upgradeWake(mgr.GetClient(), func() int { return r.fleet().maxUpgrades }, r.now))
	b = r.ownServiceMonitors(mgr, b) // servicemonitor.go
	b = r.ownHTTPRoutes(mgr, b)      // gateway.go
	workers := r.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	return b.WithOptions(controller.Options{
		MaxConcurrentReconciles: workers,
		RateLimiter:             RateLimiter(),
	}).
		Complete(r)
}

// AppliedFieldsChanged passes an update of an owned object when what the operator applies to it may
// have changed: the generation (the spec, for kinds that count one), the labels, the annotations or the
// owner references. A change of the status alone does not pass. Creates and deletes always do.
func AppliedFieldsChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		if o == nil || n == nil {
			return true
		}
		return o.GetGeneration() != n.GetGeneration() ||
			!reflect.DeepEqual(o.GetLabels(), n.GetLabels()) ||
			!reflect.DeepEqual(o.GetAnnotations(), n.GetAnnotations()) ||
			!reflect.DeepEqual(o.GetOwnerReferences(), n.GetOwnerReferences()) ||
			!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp())
	}}
}

// WorkloadStatusChanged passes an update of a Deployment or StatefulSet whose status changed in what the
// FormsService reports (observedGeneration, replicas, updated and available replicas, the Deployment's
// conditions): not when only a timestamp or a count the status does not read moved.
func WorkloadStatusChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := workloadStatusOf(e.ObjectOld), workloadStatusOf(e.ObjectNew)
		return o == nil || n == nil || !reflect.DeepEqual(o, n)
	}}
}

// reportedStatus is the part of a workload's status that buildStatus reads.
type reportedStatus struct {
	workloadStatus
	Conditions []string
}

func workloadStatusOf(obj client.Object) *reportedStatus {
	var w workloadState
	switch o := obj.(type) {
	case *appsv1.Deployment:
		w = deploymentState("", o)
	case *appsv1.StatefulSet:
		w = statefulSetState("", o)
	default:
		return nil
	}
	s := &reportedStatus{workloadStatus: w.Status}
	for _, c := range w.Conditions {
		s.Conditions = append(s.Conditions, fmt.Sprintf("%s=%s/%s: %s", c.Type, c.Status, c.Reason, c.Message))
	}
	return s
}

// statusChanged passes an update whose status changed (an Ingress' load balancer address).
func statusChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*networkingv1.Ingress)
		n, ok2 := e.ObjectNew.(*networkingv1.Ingress)
		return !ok1 || !ok2 || !reflect.DeepEqual(o.Status, n.Status)
	}}
}

// CacheOptions keeps the operator's cache small: the kinds it owns are cached only when they carry its
// managed-by label, the optional kinds (HTTPRoute, ServiceMonitor) too when kinds says the cluster serves
// them, Secrets not at all (ClientOptions), and no object keeps its managedFields in memory except the
// Deployments, whose replicas hand-off reads them (replicas.go). namespaces, when given, limits everything
// to those namespaces.
func CacheOptions(kinds *ServedKinds, namespaces ...string) cache.Options {
	owned := labels.SelectorFromSet(labels.Set{render.LabelManagedBy: render.ManagedBy})
	lean := cache.ByObject{Label: owned, Transform: cache.TransformStripManagedFields()}
	o := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}:                      lean,
		&corev1.Service{}:                        lean,
		&corev1.ServiceAccount{}:                 lean,
		&appsv1.Deployment{}:                     {Label: owned},
		&appsv1.StatefulSet{}:                    lean,
		&networkingv1.Ingress{}:                  lean,
		&networkingv1.NetworkPolicy{}:            lean,
		&policyv1.PodDisruptionBudget{}:          lean,
		&autoscalingv2.HorizontalPodAutoscaler{}: lean,
		&batchv1.CronJob{}:                       lean,
		&batchv1.Job{}:                           lean,
	}}
	if kinds != nil {
		for _, gvk := range OptionalKinds {
			if kinds.Served(gvk) {
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(gvk)
				o.ByObject[u] = lean
			}
		}
	}
	if len(namespaces) > 0 {
		o.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			o.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return o
}

// instanceOf maps one of the operator's Jobs to its FormsService, named by its instance label.
func instanceOf(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[render.LabelInstance]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}
