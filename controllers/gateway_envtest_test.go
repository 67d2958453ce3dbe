package controllers

import (
	"context"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/services/auth/publicpaths"
)

func getHTTPRoute(ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(HTTPRouteGVK)
	return u, k8s.Get(context.Background(), key(ns, name), u)
}

// The suite's API server has the Gateway API CRDs of the sigs.k8s.io/gateway-api module installed
// (testcluster.GatewayAPICRDs), so the HTTPRoutes go through their real schema and CEL rules.
func TestGateway_HTTPRoutesAcceptedByTheGatewayAPIsSchemaAndFollowTheSpec(t *testing.T) {
	ns := newNamespace(t)
	fs := sampleFS(ns)
	fs.Spec.Ingress = nil
	fs.Spec.Gateway = &v1alpha1.GatewaySpec{
		ParentRefs: []v1alpha1.GatewayParentRef{{Name: "public", Namespace: "gateways", SectionName: "https"}},
		Host:       "id.acme.example",
		FormsHost:  "forms.acme.example",
	}
	fs = createAndWait(t, fs)

	var main, forms *unstructured.Unstructured
	eventually(t, func() error {
		var err error
		if main, err = getHTTPRoute(ns, "acme"); err != nil {
			return err
		}
		forms, err = getHTTPRoute(ns, "acme-forms")
		return err
	})
	hosts, _, _ := unstructured.NestedStringSlice(main.Object, "spec", "hostnames")
	rules, _, _ := unstructured.NestedSlice(main.Object, "spec", "rules")
	parents, _, _ := unstructured.NestedSlice(main.Object, "spec", "parentRefs")
	if len(hosts) != 1 || hosts[0] != "id.acme.example" || len(rules) != len(publicpaths.Prefixes)+1 || len(parents) != 1 { // auth's prefixes and /health
		t.Errorf("main route: hosts %v, %d rules, parents %v", hosts, len(rules), parents)
	}
	// The API server defaults the backend's kind to Service.
	backends, _, _ := unstructured.NestedSlice(rules[0].(map[string]any), "backendRefs")
	if b := backends[0].(map[string]any); b["name"] != "acme-auth" || b["kind"] != "Service" {
		t.Errorf("first rule's backend = %v", b)
	}
	formsHosts, _, _ := unstructured.NestedStringSlice(forms.Object, "spec", "hostnames")
	formsRules, _, _ := unstructured.NestedSlice(forms.Object, "spec", "rules")
	if len(formsHosts) != 1 || formsHosts[0] != "forms.acme.example" || len(formsRules) != 2 {
		t.Errorf("forms route: hosts %v, %d rules", formsHosts, len(formsRules))
	}
	if ref := metav1.GetControllerOf(main); ref == nil || ref.UID != fs.UID {
		t.Errorf("route not controlled by the FormsService: %+v", ref)
	}
	if fs.Status.URL != "" && fs.Status.URL != "https://id.acme.example" {
		t.Errorf("status.url = %q", fs.Status.URL)
	}
	// Reconciles of the unchanged resource write nothing: the API server's defaults in the live routes
	// do not look like a difference.
	waitQuiet(t)

	// The forms host goes: its route is deleted; spec.gateway goes: the main route too.
	updateFS(t, fs, func(fs *v1alpha1.FormsService) { fs.Spec.Gateway.FormsHost = "" })
	eventually(t, func() error {
		if _, err := getHTTPRoute(ns, "acme-forms"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("acme-forms route still there: %v", err)
		}
		r, err := getHTTPRoute(ns, "acme")
		if err != nil {
			return err
		}
		if rules, _, _ := unstructured.NestedSlice(r.Object, "spec", "rules"); len(rules) != len(publicpaths.Prefixes)+3 {
			return fmt.Errorf("main route has %d rules, want %d (forms joined it)", len(rules), len(publicpaths.Prefixes)+3)
		}
		return nil
	})
	updateFS(t, fs, func(fs *v1alpha1.FormsService) {
		fs.Spec.Gateway = nil
		fs.Spec.PublicURL = "https://id.acme.example"
	})
	eventually(t, func() error {
		if _, err := getHTTPRoute(ns, "acme"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("acme route still there: %v", err)
		}
		return nil
	})
}
