package controllers

import (
	"context"
	"fmt"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// HTTPRoutes are the Gateway API's (gateway.networking.k8s.io/v1), whose CRDs a cluster may lack. They
// are rendered as the Gateway API's typed apply configurations and read back as unstructured objects (the
// operator's scheme does not hold the kind), after discovery (ServedKinds) says the cluster serves them.

// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;list;watch;create;update;patch;delete

// HTTPRouteGVK is the kind the operator creates for spec.gateway.
var HTTPRouteGVK = schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"}

// httpRoutes applies the HTTPRoutes of spec.gateway and deletes the ones no longer wanted, and reports
// each route's acceptance. It records a problem when spec.gateway is set but the cluster serves no
// HTTPRoute. A FormsService without spec.gateway, in a cluster without the Gateway API, costs no request.
func (run *reconcileRun) httpRoutes(ctx context.Context) {
	r, fs := run.r, run.fs
	log := ctrl.LoggerFrom(ctx)
	routes := render.HTTPRoutes(fs)
	served, err := r.serves(HTTPRouteGVK, routes != nil)
	if err != nil {
		run.fail("DiscoveryFailed", fmt.Errorf("discovering HTTPRoutes: %w", err))
		return
	}
	if !served {
		if routes != nil {
			run.Problems = append(run.Problems, problem{Reason: "GatewayAPIMissing", Message: "spec.gateway is set but the cluster serves no " +
				"gateway.networking.k8s.io/v1 HTTPRoute: install the Gateway API CRDs (or use spec.ingress)"})
		}
		return
	}
	wanted := map[string]bool{}
	for _, route := range routes {
		wanted[*route.Name] = true
		if a, ok := run.apply(ctx, route); ok {
			run.Routes = append(run.Routes, httpRouteStatus(a))
		}
	}
	ap := applier{client: r.Client, scheme: r.Scheme}
	mainName, formsName := render.HTTPRouteNames(fs)
	for _, name := range []string{mainName, formsName} {
		if wanted[name] {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(HTTPRouteGVK)
		u.SetNamespace(fs.Namespace)
		u.SetName(name)
		deleted, err := ap.deleteIfOwned(ctx, fs, u)
		if err != nil {
			run.fail("DeleteFailed", fmt.Errorf("HTTPRoute %s: %w", name, err))
		} else if deleted {
			log.Info("deleted", "kind", "HTTPRoute", "name", name)
			r.event(fs, "Normal", "Deleted", "Deleted HTTPRoute %s", name)
		}
	}
}

// httpRouteStatus reads an HTTPRoute's acceptance from its status.parents: True when every parent
// Gateway accepted it and resolved its backends, False when one refused, Unknown until each answered.
func httpRouteStatus(a applied) v1alpha1.RouteStatus {
	rs := v1alpha1.RouteStatus{Kind: v1alpha1.RouteKindHTTPRoute, Name: a.Name, Accepted: metav1.ConditionUnknown,
		Reason: "Pending", Message: "No Gateway has answered for this route yet."}
	u, ok := a.Live.(*unstructured.Unstructured)
	if !ok || u == nil {
		return rs
	}
	var route gatewayv1.HTTPRoute
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &route); err != nil {
		rs.Message = "Cannot read the route's status: " + err.Error()
		return rs
	}
	var pending, refused, accepted []string
	for _, ref := range route.Spec.ParentRefs {
		name := string(ref.Name)
		if ref.Namespace != nil {
			name = string(*ref.Namespace) + "/" + name
		}
		if ref.SectionName != nil {
			name += "#" + string(*ref.SectionName)
		}
		var parent *gatewayv1.RouteParentStatus
		for i, p := range route.Status.Parents {
			if p.ParentRef.Name == ref.Name && ptr.Equal(p.ParentRef.Namespace, ref.Namespace) && ptr.Equal(p.ParentRef.SectionName, ref.SectionName) {
				parent = &route.Status.Parents[i]
				break
			}
		}
		if parent == nil {
			pending = append(pending, "Gateway "+name+": no answer yet")
			continue
		}
		acc := meta.FindStatusCondition(parent.Conditions, string(gatewayv1.RouteConditionAccepted))
		refs := meta.FindStatusCondition(parent.Conditions, string(gatewayv1.RouteConditionResolvedRefs))
		switch {
		case acc == nil || acc.ObservedGeneration < route.Generation:
			pending = append(pending, "Gateway "+name+": has not looked at the current route yet")
		case acc.Status == metav1.ConditionFalse:
			refused = append(refused, fmt.Sprintf("Gateway %s: %s: %s", name, acc.Reason, acc.Message))
		case refs != nil && refs.Status == metav1.ConditionFalse:
			refused = append(refused, fmt.Sprintf("Gateway %s: %s: %s", name, refs.Reason, refs.Message))
		case acc.Status == metav1.ConditionTrue:
			accepted = append(accepted, "Gateway "+name)
		default:
			pending = append(pending, "Gateway "+name+": "+acc.Reason)
		}
	}
	switch {
	case len(refused) > 0:
		rs.Accepted, rs.Reason, rs.Message = metav1.ConditionFalse, "NotAccepted", strings.Join(refused, "; ")
	case len(pending) > 0:
		rs.Message = strings.Join(pending, "; ")
	case len(accepted) > 0:
		rs.Accepted, rs.Reason, rs.Message = metav1.ConditionTrue, "Accepted", "Accepted by "+strings.Join(accepted, ", ")+"."
	}
	return rs
}

// ingressRoute reads an Ingress' acceptance: the ingress controller publishes the address it serves the
// Ingress on in status.loadBalancer (some never do: the route may work while this stays Unknown).
func ingressRoute(a applied) v1alpha1.RouteStatus {
	rs := v1alpha1.RouteStatus{Kind: v1alpha1.RouteKindIngress, Name: a.Name, Accepted: metav1.ConditionUnknown,
		Reason: "AddressPending", Message: "The ingress controller has published no address for the Ingress yet."}
	ing, ok := a.Live.(*networkingv1.Ingress)
	if !ok || ing == nil {
		return rs
	}
	for _, lb := range ing.Status.LoadBalancer.Ingress {
		if lb.IP != "" {
			rs.Addresses = append(rs.Addresses, lb.IP)
		} else if lb.Hostname != "" {
			rs.Addresses = append(rs.Addresses, lb.Hostname)
		}
	}
	if len(rs.Addresses) > 0 {
		rs.Accepted, rs.Reason = metav1.ConditionTrue, "Admitted"
		rs.Message = "The ingress controller serves the Ingress on " + strings.Join(rs.Addresses, ", ") + "."
	}
	return rs
}

// ownHTTPRoutes watches the HTTPRoutes the operator owns, so that an edited or deleted one is put back
// and a Gateway's answer reaches status.routes, when the cluster serves the kind at start-up (a watch on
// a kind that is not served would keep the manager from starting).
func (r *FormsServiceReconciler) ownHTTPRoutes(mgr ctrl.Manager, b *builder.Builder) *builder.Builder {
	if !r.Kinds.Served(HTTPRouteGVK) {
		mgr.GetLogger().Info("not watching HTTPRoutes: the cluster did not serve them at start-up")
		return b
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(HTTPRouteGVK)
	return b.Owns(u)
}
