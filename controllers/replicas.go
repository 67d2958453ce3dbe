package controllers

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// ReplicasHandoffOwner is the field manager that holds an autoscaled Deployment's replicas between the
// operator letting go of them and the HorizontalPodAutoscaler's first scale.
//
// An autoscaled Deployment is applied without spec.replicas, so that the operator never overrides the
// autoscaler. But when a server-side apply drops a field its manager was the only owner of, the API
// server removes it, and spec.replicas would fall back to its default of 1: a service switched from
// fixed replicas to autoscaling would lose all but one pod. So before the operator's apply drops the
// field, this second manager applies the replicas the Deployment has, and keeps them where they are.
const ReplicasHandoffOwner = "formsservice-operator-replicas-handoff"

// prepareReplicas adjusts the desired Deployment of an autoscaled component: a new Deployment starts at
// the autoscaler's minimum (rather than the API server's default of 1), and the replicas of an existing
// one are handed over (see ReplicasHandoffOwner) while the operator still owns them.
func (r *FormsServiceReconciler) prepareReplicas(ctx context.Context, fs *v1alpha1.FormsService, component string, desired *appsv1ac.DeploymentApplyConfiguration) error {
	if !render.Autoscaled(fs, component) {
		return nil
	}
	live := &appsv1.Deployment{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: render.WorkloadName(fs, component)}, live)
	if apierrors.IsNotFound(err) {
		desired.Spec.WithReplicas(render.MinReplicas(fs, component))
		return nil
	}
	if err != nil {
		return err
	}
	if !appliesReplicas(live.ManagedFields, FieldOwner) {
		return nil
	}
	handoff := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": live.Name, "namespace": live.Namespace},
		"spec":       map[string]any{"replicas": int64(ptr.Deref(live.Spec.Replicas, 1))},
	}}
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(handoff), client.FieldOwner(ReplicasHandoffOwner)); err != nil {
		return fmt.Errorf("handing the replicas of Deployment %s to its autoscaler: %w", live.Name, err)
	}
	return nil
}

// appliesReplicas reports whether manager holds spec.replicas through a server-side apply.
func appliesReplicas(entries []metav1.ManagedFieldsEntry, manager string) bool {
	for _, e := range entries {
		if e.Manager != manager || e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "" || e.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Spec map[string]json.RawMessage `json:"f:spec"`
		}
		if err := json.NewDecoder(e.FieldsV1.GetRawReader()).Decode(&fields); err != nil {
			continue
		}
		if _, ok := fields.Spec["f:replicas"]; ok {
			return true
		}
	}
	return false
}
