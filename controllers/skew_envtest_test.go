package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// The suite's operator is release 0.2 and forms.declared a key of 0.2 (suite_test.go, testSkew): only
// the images here name a release in their tag, so no other test is checked.
//
// D86: a FormsService pinned to the previous release's image gets its configuration as long as it
// holds no key of a later release; a declared form (forms.declared) is refused for it by name, the
// ConfigMap and the Deployments keep what they had, and the resource is Stalled with
// UnsupportedImageSkew; an image of the operator's own release takes it; one of an unsupported release
// is refused whatever the configuration holds.
func TestSkew_APinnedOlderImageGetsOnlyWhatItReads(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	const previous, own, newer = "registry.example/formsservice:0.1.4", "registry.example/formsservice:0.2.0", "registry.example/formsservice:0.3.1"
	fs := sampleFS(ns)
	fs.Spec.Image = previous
	fs = createAndWait(t, fs)
	formsImage := func() string {
		var d appsv1.Deployment
		if err := k8s.Get(ctx, key(ns, "acme-forms"), &d); err != nil {
			return err.Error()
		}
		return d.Spec.Template.Spec.Containers[0].Image
	}
	eventuallyWhat(t, "the forms on the previous release's image", func() error {
		if got := formsImage(); got != previous {
			return fmt.Errorf("image %s", got)
		}
		return nil
	})
	notStalled(t, fs)

	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Spec.Forms.Declared = []v1alpha1.DeclaredForm{{ID: "apply", Fields: []v1alpha1.FormField{{Name: "name", Type: "text"}}}}
	})
	waitCondition(t, fs, v1alpha1.ConditionStalled, metav1.ConditionTrue, "UnsupportedImageSkew",
		"the configuration holds forms.declared, which release 0.1 (the services' image "+previous+") does not read: release 0.2 introduced it")
	waitCondition(t, fs, v1alpha1.ConditionProgressing, metav1.ConditionTrue, "RolloutBlocked")
	var cm corev1.ConfigMap
	if err := k8s.Get(ctx, key(ns, "acme-config"), &cm); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(cm.Data[render.ConfigKey(render.Forms)], "declared") {
		t.Fatalf("the refused key reached the ConfigMap:\n%s", cm.Data[render.ConfigKey(render.Forms)])
	}

	// The operator's own release reads it: rolled out.
	updateFS(t, fs, func(fs *v1alpha1.FormsService) { fs.Spec.Image = own })
	notStalled(t, fs)
	eventuallyWhat(t, "the declared form rendered for the own release's image", func() error {
		if err := k8s.Get(ctx, key(ns, "acme-config"), &cm); err != nil {
			return err
		}
		if !strings.Contains(cm.Data[render.ConfigKey(render.Forms)], "declared") || formsImage() != own {
			return fmt.Errorf("image %s, forms.yaml:\n%s", formsImage(), cm.Data[render.ConfigKey(render.Forms)])
		}
		return nil
	})

	// A release the operator does not render for: refused, the Deployments keep the image they have.
	updateFS(t, fs, func(fs *v1alpha1.FormsService) { fs.Spec.Image = newer })
	waitCondition(t, fs, v1alpha1.ConditionStalled, metav1.ConditionTrue, "UnsupportedImageSkew",
		"the services' image "+newer+" is release 0.3; this operator (0.2.0) renders configuration for releases 0.1 and 0.2 only")
	if got := formsImage(); got != own {
		t.Fatalf("the forms moved to %s", got)
	}
}

// notStalled waits until the FormsService's current generation is not Stalled.
func notStalled(t *testing.T, fs *v1alpha1.FormsService) {
	t.Helper()
	eventuallyWhat(t, "not Stalled", func() error {
		var cur v1alpha1.FormsService
		if err := k8s.Get(context.Background(), key(fs.Namespace, fs.Name), &cur); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionStalled)
		if c == nil || c.Status != metav1.ConditionFalse || c.ObservedGeneration != cur.Generation {
			return fmt.Errorf("Stalled: %+v", c)
		}
		return nil
	})
}
