package controllers

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

// scaleAsTheAutoscaler sets a Deployment's replicas through its scale subresource, as the
// HorizontalPodAutoscaler controller (which envtest does not run) does.
func scaleAsTheAutoscaler(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	if err := k8s.SubResource("scale").Update(context.Background(), d, client.WithSubResourceBody(scale), client.FieldOwner("horizontal-pod-autoscaler")); err != nil {
		t.Fatal(err)
	}
}

func deploymentReplicas(t *testing.T, ns, name string) (int32, *appsv1.Deployment) {
	t.Helper()
	var d appsv1.Deployment
	if err := k8s.Get(context.Background(), key(ns, name), &d); err != nil {
		t.Fatal(err)
	}
	return ptr.Deref(d.Spec.Replicas, -1), &d
}

func TestAutoscaling_TheOperatorRendersTheHPAAndNeverOverridesItsReplicas(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := sampleFS(ns)
	fs.Spec.Forms.Autoscaling = &v1alpha1.AutoscalingSpec{MinReplicas: ptr.To[int32](3), MaxReplicas: 6}
	fs = createAndWait(t, fs)

	// The autoscaler as the CRD's defaults and the spec shape it.
	var hpa autoscalingv2.HorizontalPodAutoscaler
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme-forms"), &hpa) })
	if hpa.Spec.ScaleTargetRef.Name != "acme-forms" || hpa.Spec.ScaleTargetRef.Kind != "Deployment" ||
		ptr.Deref(hpa.Spec.MinReplicas, 0) != 3 || hpa.Spec.MaxReplicas != 6 || len(hpa.Spec.Metrics) != 1 ||
		ptr.Deref(hpa.Spec.Metrics[0].Resource.Target.AverageUtilization, 0) != 75 {
		t.Errorf("HPA spec = %+v", hpa.Spec)
	}
	if ref := metav1.GetControllerOf(&hpa); ref == nil || ref.UID != fs.UID {
		t.Errorf("HPA not controlled by the FormsService: %+v", ref)
	}
	// A new autoscaled Deployment starts at the minimum, not at the API server's default of 1, and the
	// operator then lets go of its replicas.
	if n, _ := deploymentReplicas(t, ns, "acme-forms"); n != 3 {
		t.Errorf("new autoscaled Deployment has %d replicas, want the minimum 3", n)
	}
	eventually(t, func() error {
		if _, d := deploymentReplicas(t, ns, "acme-forms"); appliesReplicas(d.ManagedFields, FieldOwner) {
			return fmt.Errorf("the operator still applies spec.replicas of acme-forms")
		}
		return nil
	})
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme-forms"), &policyv1.PodDisruptionBudget{}) })
	// Once handed over, reconciles write nothing: not the HPA (whose defaults the API server fills in),
	// not the Deployment.
	waitQuiet(t)
	// Fixed-replica services get no autoscaler.
	if err := k8s.Get(ctx, key(ns, "acme-auth"), &autoscalingv2.HorizontalPodAutoscaler{}); !apierrors.IsNotFound(err) {
		t.Errorf("auth (fixed replicas) has an HPA: %v", err)
	}

	// The autoscaler scales forms to 5; a change that rewrites the Deployment leaves them at 5.
	scaleAsTheAutoscaler(t, ns, "acme-forms", 5)
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Spec.Forms.PodAnnotations = map[string]string{"example.com/touched": "1"}
		fs.Spec.Forms.Replicas = ptr.To[int32](2) // ignored while autoscaled
	})
	eventually(t, func() error {
		_, d := deploymentReplicas(t, ns, "acme-forms")
		if d.Spec.Template.Annotations["example.com/touched"] != "1" {
			return fmt.Errorf("the Deployment was not rewritten yet")
		}
		return nil
	})
	if n, _ := deploymentReplicas(t, ns, "acme-forms"); n != 5 {
		t.Errorf("after a reconcile forms has %d replicas, want the autoscaler's 5", n)
	}

	// Switching health from two fixed replicas to autoscaling from 1 keeps its 2 pods (no drop to the
	// default of 1), and a minimum of 1 takes its disruption budget away (it would block every drain).
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Spec.Health.Autoscaling = &v1alpha1.AutoscalingSpec{MinReplicas: ptr.To[int32](1), MaxReplicas: 4}
	})
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme-health"), &autoscalingv2.HorizontalPodAutoscaler{}) })
	eventually(t, func() error {
		if _, d := deploymentReplicas(t, ns, "acme-health"); appliesReplicas(d.ManagedFields, FieldOwner) {
			return fmt.Errorf("the operator still applies spec.replicas of acme-health")
		}
		if err := k8s.Get(ctx, key(ns, "acme-health"), &policyv1.PodDisruptionBudget{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("health (min 1) still has a PDB: %v", err)
		}
		return nil
	})
	if n, _ := deploymentReplicas(t, ns, "acme-health"); n != 2 {
		t.Errorf("health switched to autoscaling has %d replicas, want its former 2", n)
	}

	// Back to fixed replicas: the autoscaler goes and the operator sets the replicas again.
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Spec.Forms.Autoscaling = nil
		fs.Spec.Forms.Replicas = ptr.To[int32](2)
	})
	eventually(t, func() error {
		if err := k8s.Get(ctx, key(ns, "acme-forms"), &autoscalingv2.HorizontalPodAutoscaler{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("forms HPA still there: %v", err)
		}
		if n, _ := deploymentReplicas(t, ns, "acme-forms"); n != 2 {
			return fmt.Errorf("forms has %d replicas, want 2", n)
		}
		return nil
	})
}
