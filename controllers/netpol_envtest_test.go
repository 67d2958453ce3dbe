package controllers

import (
	"context"
	"fmt"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

func TestNetworkPolicies_AcceptedByTheAPIServerAndRemovedByTheSwitch(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := sampleFS(ns)
	fs.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{
		IngressFrom: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"kubernetes.io/metadata.name": "ingress-nginx"}}}},
		MetricsFrom: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}}},
	}
	fs = createAndWait(t, fs)
	if !ptr.Deref(fs.Spec.NetworkPolicy.Enabled, false) {
		t.Error("networkPolicy.enabled did not default to true")
	}

	for _, c := range render.Components {
		var np networkingv1.NetworkPolicy
		eventually(t, func() error { return k8s.Get(ctx, key(ns, render.WorkloadName(fs, c)), &np) })
		if len(np.Spec.PolicyTypes) != 2 || len(np.Spec.Egress) == 0 || len(np.Spec.Ingress) == 0 {
			t.Errorf("%s: policy = %+v", c, np.Spec)
		}
		if ref := metav1.GetControllerOf(&np); ref == nil || ref.UID != fs.UID {
			t.Errorf("%s: policy not controlled by the FormsService", c)
		}
	}

	// The switch removes the services' policies; the managed Redis keeps its own.
	updateFS(t, fs, func(fs *v1alpha1.FormsService) { fs.Spec.NetworkPolicy.Enabled = ptr.To(false) })
	for _, c := range render.Components {
		eventually(t, func() error {
			err := k8s.Get(ctx, key(ns, render.WorkloadName(fs, c)), &networkingv1.NetworkPolicy{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("%s policy still there: %v", c, err)
		})
	}
	if err := k8s.Get(ctx, key(ns, "acme-redis"), &networkingv1.NetworkPolicy{}); err != nil {
		t.Errorf("the managed Redis lost its policy: %v", err)
	}
}
