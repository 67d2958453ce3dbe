package chart_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fsrender "github.com/formsservice/formsservice/controllers/render"
	"github.com/formsservice/formsservice/test/internal/cluster"
)

// fenceMessage is what the write fence's refusals say.
const fenceMessage = "writes only the objects it manages"

// TestWriteFence_TheManagerWritesOnlyWhatItManages installs the chart with writeFence.enabled into a
// real API server: the policy is in force before the manager sees the sample, the manager (as the
// chart's ServiceAccount) reconciles the whole sample with no request refused, and as that
// ServiceAccount a Secret of someone else — which RBAC lets it update — cannot be changed, nor an
// object made without the label, nor a managed object stripped of it. With the policy's binding gone,
// the same update passes: the fence refused it, not RBAC.
func TestWriteFence_TheManagerWritesOnlyWhatItManages(t *testing.T) {
	c := cluster.Start(t, prometheusOperatorCRDs(t))
	ctx := context.Background()
	fullname := releaseName + "-formsservice-operator"
	c.CreateNamespace(t, "shop")
	createSecret(t, c, "shop", "payroll")
	sa := asServiceAccount(t, c, releaseNS, fullname)

	im, _ := startChartOperator(t, c, "--set", "writeFence.enabled=true")
	// The API server loads a new policy in the background: wait until it refuses, then give the manager
	// its work, so that every write of the reconcile below passed through the fence.
	cluster.Eventually(t, 60*time.Second, "the write fence in force", func() (bool, string) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", GenerateName: "probe-"}}
		err := sa.Create(ctx, cm)
		if err == nil {
			_ = c.Client.Delete(ctx, cm)
			return false, "an unlabelled ConfigMap was created"
		}
		return refusedByFence(err), err.Error()
	})
	applySampleAndWait(t, c, im, "shop")
	if f := im.Forbidden(); len(f) > 0 {
		t.Fatalf("the fence (or RBAC) refused the manager's own writes:\n%s", strings.Join(f, "\n"))
	}

	// Someone else's Secret: RBAC allows update, the fence does not.
	updatePayroll := func(cl client.Client) error {
		var s corev1.Secret
		if err := cl.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "payroll"}, &s); err != nil {
			return err
		}
		s.Data["k"] = []byte("rewritten")
		return cl.Update(ctx, &s)
	}
	if err := updatePayroll(sa); !refusedByFence(err) {
		t.Errorf("the manager's ServiceAccount updated a Secret it does not manage: %v", err)
	}
	// Putting the label on in the same update does not open it: the object before must carry it too.
	var s corev1.Secret
	if err := sa.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "payroll"}, &s); err != nil {
		t.Fatal(err)
	}
	s.Labels = map[string]string{fsrender.LabelManagedBy: fsrender.ManagedBy}
	if err := sa.Update(ctx, &s); !refusedByFence(err) {
		t.Errorf("the manager's ServiceAccount took over a Secret by labelling it: %v", err)
	}
	// A managed object cannot be stripped of the label (and so leave the fence) either.
	var managed corev1.ConfigMapList
	if err := c.Client.List(ctx, &managed, client.InNamespace("shop"), client.MatchingLabels{fsrender.LabelManagedBy: fsrender.ManagedBy}); err != nil || len(managed.Items) == 0 {
		t.Fatalf("no ConfigMap of the operator's in the sample's namespace: %v", err)
	}
	cm := managed.Items[0].DeepCopy()
	delete(cm.Labels, fsrender.LabelManagedBy)
	if err := sa.Update(ctx, cm); !refusedByFence(err) {
		t.Errorf("the manager's ServiceAccount removed the label of ConfigMap %s: %v", cm.Name, err)
	}
	// ...while a change that keeps it passes, and people other than the manager are not fenced.
	cm = managed.Items[0].DeepCopy()
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations["example.com/touched"] = "yes"
	if err := sa.Update(ctx, cm); err != nil {
		t.Errorf("the fence refused a change of a managed ConfigMap that keeps its label: %v", err)
	}
	if err := updatePayroll(c.Client); err != nil {
		t.Errorf("the fence refused the cluster admin: %v", err)
	}

	// Without the binding the same update passes: the refusal above was the fence's.
	if err := c.Client.Delete(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: fullname + "-write-fence"}}); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 60*time.Second, "the update to pass without the fence", func() (bool, string) {
		err := updatePayroll(sa)
		return err == nil, fmt.Sprint(err)
	})
}

// refusedByFence says whether err is the write fence's refusal.
func refusedByFence(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), fenceMessage)
}
