package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// A NetworkPolicy peer `{namespaceSelector: {}}` admits every namespace, and `{namespaceSelector: {},
// podSelector: …}` those pods in every namespace. Both must reach the cluster exactly as written:
// dropping the empty selector would narrow the rule to the policy's own namespace (the first peer would
// then be empty, which the API server refuses). And the reconcile after that writes nothing: the empty
// selector held by the live object is not mistaken for a difference.
func TestNetworkPolicies_AnEmptyNamespaceSelectorSurvivesUnchanged(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := sampleFS(ns)
	fs.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{
		IngressFrom: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}},
		MetricsFrom: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{},
			PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "prometheus"}}}},
	}
	fs = createAndWait(t, fs)

	var np networkingv1.NetworkPolicy
	eventually(t, func() error { return k8s.Get(ctx, key(ns, "acme-forms"), &np) })
	if len(np.Spec.Ingress) != 3 {
		t.Fatalf("ingress rules = %+v", np.Spec.Ingress)
	}
	emptySelector := func(s *metav1.LabelSelector) bool {
		return s != nil && len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0
	}
	anyNS := np.Spec.Ingress[0].From
	if len(anyNS) != 1 || !emptySelector(anyNS[0].NamespaceSelector) || anyNS[0].PodSelector != nil || anyNS[0].IPBlock != nil {
		t.Errorf("ingressFrom {namespaceSelector: {}} became %+v", anyNS)
	}
	prom := np.Spec.Ingress[1].From
	if len(prom) != 1 || !emptySelector(prom[0].NamespaceSelector) || prom[0].PodSelector == nil ||
		prom[0].PodSelector.MatchLabels["app.kubernetes.io/name"] != "prometheus" {
		t.Errorf("metricsFrom {namespaceSelector: {}, podSelector: prometheus} became %+v", prom)
	}

	waitQuiet(t)
	opWrites.Reset()
	if _, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(fs)}); err != nil {
		t.Fatal(err)
	}
	if w := writesIn(opWrites.Writes(), ns); len(w) != 0 {
		t.Errorf("reconciling again wrote %v", w)
	}
}

// An object of a name the operator wants, that this FormsService does not control, is not taken over
// (a forced apply would make it the operator's, and the garbage collector would delete it with the
// FormsService): the resource is Degraded and Stalled with the reason, and everything else is built.
// Without the operator's label the object is not in its cache: it is found by a read past the cache.
func TestApply_RefusesToAdoptAnObjectItDoesNotOwn(t *testing.T) {
	ctx := context.Background()
	for _, labelled := range []bool{false, true} {
		t.Run(fmt.Sprintf("carries the operator's label: %v", labelled), func(t *testing.T) {
			ns := newNamespace(t)
			theirs := &networkingv1.Ingress{
				ObjectMeta: metav1.ObjectMeta{Name: "acme", Namespace: ns},
				Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("theirs"), DefaultBackend: &networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: "their-app", Port: networkingv1.ServiceBackendPort{Number: 80}}}},
			}
			if labelled {
				theirs.Labels = map[string]string{render.LabelManagedBy: render.ManagedBy}
			}
			if err := k8s.Create(ctx, theirs); err != nil {
				t.Fatal(err)
			}
			fs := createAndWait(t, sampleFS(ns)) // the Deployments are built all the same
			for _, typ := range []string{v1alpha1.ConditionDegraded, v1alpha1.ConditionStalled} {
				waitCondition(t, fs, typ, metav1.ConditionTrue, "NotOwned",
					"Ingress acme already exists and is not this FormsService's (it has no controller)")
			}
			waitCondition(t, fs, v1alpha1.ConditionReconciling, metav1.ConditionFalse, "Stalled")

			var live networkingv1.Ingress
			if err := k8s.Get(ctx, key(ns, "acme"), &live); err != nil {
				t.Fatal(err)
			}
			if len(live.OwnerReferences) != 0 || ptr.Deref(live.Spec.IngressClassName, "") != "theirs" || len(live.Spec.Rules) != 0 {
				t.Errorf("the foreign Ingress was changed: owners %v, class %v, rules %v", live.OwnerReferences, live.Spec.IngressClassName, live.Spec.Rules)
			}
			for _, m := range live.ManagedFields {
				if m.Manager == FieldOwner {
					t.Errorf("the operator wrote fields of the foreign Ingress: %+v", m)
				}
			}
			for _, name := range []string{"acme-config", "acme-redis-config"} {
				if err := k8s.Get(ctx, key(ns, name), &corev1.ConfigMap{}); err != nil {
					t.Errorf("ConfigMap %s: %v", name, err)
				}
			}

			// Its owner removes it: the operator builds its own (the next recheck comes within seconds).
			if err := k8s.Delete(ctx, &live); err != nil {
				t.Fatal(err)
			}
			eventually(t, func() error {
				var ing networkingv1.Ingress
				if err := k8s.Get(ctx, key(ns, "acme"), &ing); err != nil {
					return err
				}
				if ref := metav1.GetControllerOf(&ing); ref == nil || ref.UID != fs.UID {
					return fmt.Errorf("Ingress acme not the operator's yet: %v", ing.OwnerReferences)
				}
				return nil
			})
			waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected")
		})
	}
}

// denyInNamespace installs a ValidatingAdmissionPolicy (evaluated by the API server itself) that refuses
// every create and update of the resources in the namespace, and waits until it is in force.
func denyInNamespace(t *testing.T, ns, group, version, resource, message string, probe client.Object) {
	t.Helper()
	ctx := context.Background()
	name := "deny-" + resource + "-" + ns
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: message}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}},
		},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), o) })
	}
	eventuallyWhat(t, "the admission policy "+name+" in force", func() error {
		p := probe.DeepCopyObject().(client.Object)
		p.SetNamespace(ns)
		err := k8s.Create(ctx, p, client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), message) {
			return nil
		}
		return fmt.Errorf("a dry-run create was answered %v", err)
	})
}

// One object the API server refuses (here every PodDisruptionBudget and NetworkPolicy, refused by an
// admission policy) is reported, and does not keep the ConfigMap and the Deployments from being applied:
// an image change still rolls out.
func TestApply_AFailingObjectDoesNotHoldUpTheOthers(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	probePDB := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "probe"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1))}}
	denyInNamespace(t, ns, "policy", "v1", "poddisruptionbudgets", "no PodDisruptionBudgets here (test policy)", probePDB)
	probeNP := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}
	denyInNamespace(t, ns, "networking.k8s.io", "v1", "networkpolicies", "no NetworkPolicies here (test policy)", probeNP)

	fs := createAndWait(t, sampleFS(ns))
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionTrue, "ApplyFailed",
		"PodDisruptionBudget acme-forms", "no PodDisruptionBudgets here", "NetworkPolicy acme-redis", "no NetworkPolicies here")
	// The API server refused the request itself: no retry will change that, a person must.
	waitCondition(t, fs, v1alpha1.ConditionStalled, metav1.ConditionTrue, "ApplyFailed", "no PodDisruptionBudgets here")
	for _, name := range []string{"acme-config", "acme-redis-config"} {
		if err := k8s.Get(ctx, key(ns, name), &corev1.ConfigMap{}); err != nil {
			t.Errorf("ConfigMap %s: %v", name, err)
		}
	}
	if err := k8s.Get(ctx, key(ns, "acme-redis"), &appsv1.StatefulSet{}); err != nil {
		t.Errorf("the Redis StatefulSet: %v", err)
	}

	updateFS(t, fs, func(fs *v1alpha1.FormsService) { fs.Spec.Image = "registry.example/formsservice:next" })
	for _, c := range render.Components {
		eventually(t, func() error {
			var d appsv1.Deployment
			if err := k8s.Get(ctx, key(ns, "acme-"+c), &d); err != nil {
				return err
			}
			if img := d.Spec.Template.Spec.Containers[0].Image; img != "registry.example/formsservice:next" {
				return fmt.Errorf("%s runs %s", d.Name, img)
			}
			return nil
		})
	}
	var cur v1alpha1.FormsService
	eventually(t, func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(fs), &cur); err != nil {
			return err
		}
		if cur.Status.Image != "registry.example/formsservice:next" {
			return fmt.Errorf("status.image = %q", cur.Status.Image)
		}
		return nil
	})
}

// The status is written on every way out of a reconcile, including when the first thing it does fails:
// here the signing-key Secret cannot be created (an admission policy refuses Secrets). The objects that
// do not need the key are applied; the Deployments wait for it.
func TestReconcile_WritesTheStatusWhenTheSigningKeyCannotBeCreated(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	denyInNamespace(t, ns, "", "v1", "secrets", "no Secrets here (test policy)", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "probe"}})
	fs := sampleFS(ns)
	if err := k8s.Create(ctx, fs); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionTrue, "SigningKeyUnavailable", "no Secrets here")
	waitCondition(t, fs, v1alpha1.ConditionStalled, metav1.ConditionTrue, "SigningKeyUnavailable")
	waitCondition(t, fs, v1alpha1.ConditionProgressing, metav1.ConditionTrue, "RolloutBlocked")
	for _, c := range render.Components {
		if err := k8s.Get(ctx, key(ns, "acme-"+c), &corev1.Service{}); err != nil {
			t.Errorf("Service acme-%s: %v", c, err)
		}
		if err := k8s.Get(ctx, key(ns, "acme-"+c), &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
			t.Errorf("Deployment acme-%s without its signing key: %v", c, err)
		}
	}
}

// status.routes: the Ingress is Admitted once the ingress controller publishes an address; an
// HTTPRoute follows what its Gateways answer (the test plays the Gateway controller), and a refusal
// makes the resource Degraded.
func TestStatus_RouteAcceptance(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	fs := sampleFS(ns)
	fs.Spec.Gateway = &v1alpha1.GatewaySpec{ParentRefs: []v1alpha1.GatewayParentRef{{Name: "public", Namespace: "gateways"}}, Host: "id.acme.example"}
	fs = createAndWait(t, fs)
	route := func(kind string) (v1alpha1.RouteStatus, error) {
		var cur v1alpha1.FormsService
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(fs), &cur); err != nil {
			return v1alpha1.RouteStatus{}, err
		}
		for _, r := range cur.Status.Routes {
			if r.Kind == kind && r.Name == "acme" {
				return r, nil
			}
		}
		return v1alpha1.RouteStatus{}, fmt.Errorf("no %s in status.routes %+v", kind, cur.Status.Routes)
	}
	wantRoute := func(kind string, accepted metav1.ConditionStatus, reason string) {
		t.Helper()
		eventuallyWhat(t, fmt.Sprintf("%s %s %s", kind, accepted, reason), func() error {
			r, err := route(kind)
			if err == nil && (r.Accepted != accepted || r.Reason != reason) {
				err = fmt.Errorf("%s = %+v", kind, r)
			}
			return err
		})
	}
	wantRoute(v1alpha1.RouteKindIngress, metav1.ConditionUnknown, "AddressPending")
	wantRoute(v1alpha1.RouteKindHTTPRoute, metav1.ConditionUnknown, "Pending")

	updateStatusOf(t, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme"}}, func(ing *networkingv1.Ingress) {
		ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.7"}}
	})
	wantRoute(v1alpha1.RouteKindIngress, metav1.ConditionTrue, "Admitted")

	answer := func(status metav1.ConditionStatus, reason string) {
		t.Helper()
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(HTTPRouteGVK)
		u.SetNamespace(ns)
		u.SetName("acme")
		updateStatusOf(t, u, func(u *unstructured.Unstructured) {
			parent := map[string]any{
				"parentRef":      map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "public", "namespace": "gateways"},
				"controllerName": "example.com/gateway-controller",
				"conditions": []any{map[string]any{"type": "Accepted", "status": string(status), "reason": reason,
					"message": "answered by the test", "observedGeneration": u.GetGeneration(), "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}},
			}
			u.Object["status"] = map[string]any{"parents": []any{parent}}
		})
	}
	answer(metav1.ConditionFalse, "NotAllowedByListeners")
	wantRoute(v1alpha1.RouteKindHTTPRoute, metav1.ConditionFalse, "NotAccepted")
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionTrue, "RouteNotAccepted", "HTTPRoute acme: Gateway gateways/public: NotAllowedByListeners")
	answer(metav1.ConditionTrue, "Accepted")
	wantRoute(v1alpha1.RouteKindHTTPRoute, metav1.ConditionTrue, "Accepted")
	waitCondition(t, fs, v1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected")
}
