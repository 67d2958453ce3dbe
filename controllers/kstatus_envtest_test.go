package controllers

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// kstatusOf is what a GitOps tool sees: cli-utils' kstatus, which Flux's health checks, Argo CD's and
// Helm 4's wait use, computed from the FormsService as the API server serves it.
func kstatusOf(t *testing.T, fs *v1alpha1.FormsService) (*status.Result, *v1alpha1.FormsService) {
	t.Helper()
	var cur v1alpha1.FormsService
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(fs), &cur); err != nil {
		t.Fatal(err)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&cur)
	if err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(&unstructured.Unstructured{Object: m})
	if err != nil {
		t.Fatal(err)
	}
	return res, &cur
}

func waitKstatus(t *testing.T, fs *v1alpha1.FormsService, want status.Status, check func(*v1alpha1.FormsService) error) {
	t.Helper()
	eventuallyWhat(t, "kstatus "+want.String(), func() error {
		res, cur := kstatusOf(t, fs)
		if res.Status != want {
			return fmt.Errorf("kstatus %s (%s), conditions %+v", res.Status, res.Message, cur.Status.Conditions)
		}
		if check != nil {
			return check(cur)
		}
		return nil
	})
}

// A GitOps tool waits for the rollout, not just for Ready: mid-rollout (every replica still available,
// so Ready is True) kstatus says InProgress; once every workload runs the new spec, Current; when a
// person must act, Failed.
func TestKstatus_InProgressMidRolloutCurrentWhenDoneFailedWhenStalled(t *testing.T) {
	ns := newNamespace(t)
	fs := createAndWait(t, sampleFS(ns))
	waitKstatus(t, fs, status.InProgressStatus, nil) // nothing available yet

	replicas := map[string]int32{render.Forms: 2, render.Auth: 3, render.Health: 2}
	for _, c := range render.Components {
		setDeploymentStatus(t, ns, "acme-"+c, replicas[c], replicas[c])
	}
	setStatefulSetReady(t, ns, "acme-redis")
	waitKstatus(t, fs, status.CurrentStatus, func(cur *v1alpha1.FormsService) error {
		if cur.Status.Image != testImage {
			return fmt.Errorf("status.image = %q, want %q", cur.Status.Image, testImage)
		}
		return nil
	})

	// A new image: the Deployments get a new generation their controller has not rolled out yet. Every
	// replica is still available, so Ready stays True, and kstatus still says InProgress.
	updateFS(t, fs, func(fs *v1alpha1.FormsService) { fs.Spec.Image = "registry.example/formsservice:next" })
	waitKstatus(t, fs, status.InProgressStatus, func(cur *v1alpha1.FormsService) error {
		if !conditionIs(cur, v1alpha1.ConditionReady, metav1.ConditionTrue) || !conditionIs(cur, v1alpha1.ConditionReconciling, metav1.ConditionTrue) {
			return fmt.Errorf("want Ready and Reconciling True mid-rollout: %+v", cur.Status.Conditions)
		}
		return nil
	})
	for _, c := range render.Components {
		setDeploymentStatus(t, ns, "acme-"+c, replicas[c], replicas[c])
	}
	waitKstatus(t, fs, status.CurrentStatus, nil)

	// A Secret the pods need goes missing: nothing the operator can retry fixes that.
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Spec.Forms.Delivery = &v1alpha1.DeliverySpec{SMTP: &v1alpha1.SMTPDelivery{Address: "smtp.example:587",
			From: "forms@acme.example", To: []string{"team@acme.example"}, PasswordSecretRef: &v1alpha1.SecretKeySelector{Name: "smtp", Key: "password"}}}
	})
	waitKstatus(t, fs, status.FailedStatus, func(cur *v1alpha1.FormsService) error {
		if !conditionIs(cur, v1alpha1.ConditionStalled, metav1.ConditionTrue) {
			return fmt.Errorf("Stalled not True: %+v", cur.Status.Conditions)
		}
		return nil
	})
	if err := k8s.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "smtp", Namespace: ns},
		StringData: map[string]string{"password": "p"}}); err != nil {
		t.Fatal(err)
	}
	waitKstatus(t, fs, status.InProgressStatus, nil) // forms rolls for its new Secret
}

func conditionIs(fs *v1alpha1.FormsService, typ string, s metav1.ConditionStatus) bool {
	for _, c := range fs.Status.Conditions {
		if c.Type == typ {
			return c.Status == s
		}
	}
	return false
}
