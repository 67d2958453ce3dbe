package controllers

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/controllers/render"
)

// HTTPRoutes are the Gateway API's (gateway.networking.k8s.io/v1), whose CRDs a cluster may lack. Like
// ServiceMonitors they are written as unstructured objects (read straight from the API server, not from
// a cache that would need the kind at start-up), after discovery says the cluster serves them.

// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;list;watch;create;update;patch;delete

// HTTPRouteGVK is the kind the operator creates for spec.gateway.
var HTTPRouteGVK = schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"}

func servesHTTPRoutes(c client.Client) (bool, error) {
	_, err := c.RESTMapper().RESTMapping(HTTPRouteGVK.GroupKind(), HTTPRouteGVK.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	default:
		return false, err
	}
}

// reconcileHTTPRoutes applies the HTTPRoutes of spec.gateway and deletes the ones no longer wanted. It
// returns a problem when spec.gateway is set but the cluster serves no HTTPRoute, and the API errors.
// A FormsService without spec.gateway, in a cluster without the Gateway API, costs no request.
func (r *FormsServiceReconciler) reconcileHTTPRoutes(ctx context.Context, fs *v1alpha1.FormsService) (*problem, error) {
	log := ctrl.LoggerFrom(ctx)
	served, err := servesHTTPRoutes(r.Client)
	if err != nil {
		return nil, fmt.Errorf("discovering HTTPRoutes: %w", err)
	}
	routes := render.HTTPRoutes(fs)
	if !served {
		if routes == nil {
			return nil, nil
		}
		return &problem{Reason: "GatewayAPIMissing", Message: "spec.gateway is set but the cluster serves no " +
			"gateway.networking.k8s.io/v1 HTTPRoute: install the Gateway API CRDs (or use spec.ingress)"}, nil
	}
	ap := applier{client: r.Client, scheme: r.Scheme}
	wanted := map[string]bool{}
	var errs []error
	for _, route := range routes {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(route)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{Object: m}
		wanted[u.GetName()] = true
		res, err := ap.apply(ctx, fs, u)
		if err != nil {
			errs = append(errs, fmt.Errorf("HTTPRoute %s: %w", u.GetName(), err))
			continue
		}
		if res != unchanged {
			log.Info("applied", "kind", "HTTPRoute", "name", u.GetName(), "result", string(res))
			r.event(fs, "Normal", string(res), "%s HTTPRoute %s", string(res), u.GetName())
		}
	}
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
			errs = append(errs, fmt.Errorf("HTTPRoute %s: %w", name, err))
		} else if deleted {
			log.Info("deleted", "kind", "HTTPRoute", "name", name)
			r.event(fs, "Normal", "Deleted", "Deleted HTTPRoute %s", name)
		}
	}
	return nil, errors.Join(errs...)
}

// ownHTTPRoutes watches the HTTPRoutes the operator owns, so that an edited or deleted one is put back,
// when the cluster serves the kind at start-up (a watch on a kind that is not served would keep the
// manager from starting).
func (r *FormsServiceReconciler) ownHTTPRoutes(mgr ctrl.Manager, b *builder.Builder) *builder.Builder {
	served, err := servesHTTPRoutes(mgr.GetClient())
	if err != nil || !served {
		mgr.GetLogger().Info("not watching HTTPRoutes: the cluster does not serve them", "error", err)
		return b
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(HTTPRouteGVK)
	return b.Owns(u)
}
