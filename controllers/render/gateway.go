package render

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

// HTTPRouteNames are the names of the HTTPRoutes a FormsService may own: <name> for the main host and
// <name>-forms for a separate forms host.
func HTTPRouteNames(fs *v1alpha1.FormsService) (main, forms string) {
	return fs.Name, fs.Name + "-forms"
}

// HTTPRoutes route the public paths through the Gateway(s) of spec.gateway exactly as Ingress does:
// /contact and /waitlist (Exact) to forms, on the forms host when it differs; /oauth2 and /.well-known
// (PathPrefix, by path element like the Ingress' Prefix) to auth; /health (Exact) to health. Nothing else,
// not /metrics. An HTTPRoute's hostnames hold for all its rules, so a separate forms host gets a route of
// its own. It returns nil without spec.gateway.
func HTTPRoutes(fs *v1alpha1.FormsService) []*gatewayv1.HTTPRoute {
	spec := fs.Spec.Gateway
	if spec == nil {
		return nil
	}
	var parents []gatewayv1.ParentReference
	for _, p := range spec.ParentRefs {
		ref := gatewayv1.ParentReference{Name: gatewayv1.ObjectName(p.Name)}
		if p.Namespace != "" {
			ref.Namespace = ptr.To(gatewayv1.Namespace(p.Namespace))
		}
		if p.SectionName != "" {
			ref.SectionName = ptr.To(gatewayv1.SectionName(p.SectionName))
		}
		parents = append(parents, ref)
	}
	rule := func(path string, match gatewayv1.PathMatchType, component string) gatewayv1.HTTPRouteRule {
		return gatewayv1.HTTPRouteRule{
			Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{Type: ptr.To(match), Value: ptr.To(path)}}},
			BackendRefs: []gatewayv1.HTTPBackendRef{{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
				Name: gatewayv1.ObjectName(WorkloadName(fs, component)),
				Port: ptr.To(gatewayv1.PortNumber(ServicePort)),
			}}}},
		}
	}
	formsRules := []gatewayv1.HTTPRouteRule{
		rule("/contact", gatewayv1.PathMatchExact, Forms),
		rule("/waitlist", gatewayv1.PathMatchExact, Forms),
	}
	if fs.Spec.Forms.DoubleOptIn != nil { // the confirmation and unsubscribe links
		for _, p := range optInPaths {
			formsRules = append(formsRules, rule(p, gatewayv1.PathMatchExact, Forms))
		}
	}
	mainRules := []gatewayv1.HTTPRouteRule{
		rule("/oauth2", gatewayv1.PathMatchPathPrefix, Auth),
		rule("/.well-known", gatewayv1.PathMatchPathPrefix, Auth),
		rule("/health", gatewayv1.PathMatchExact, Health),
	}
	route := func(name, host string, rules []gatewayv1.HTTPRouteRule) *gatewayv1.HTTPRoute {
		return &gatewayv1.HTTPRoute{
			TypeMeta:   metav1.TypeMeta{APIVersion: gatewayv1.GroupVersion.String(), Kind: "HTTPRoute"},
			ObjectMeta: meta(fs, name, "gateway"),
			Spec: gatewayv1.HTTPRouteSpec{
				CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: parents},
				Hostnames:       []gatewayv1.Hostname{gatewayv1.Hostname(host)},
				Rules:           rules,
			},
		}
	}
	mainName, formsName := HTTPRouteNames(fs)
	if spec.FormsHost != "" && spec.FormsHost != spec.Host {
		return []*gatewayv1.HTTPRoute{route(mainName, spec.Host, mainRules), route(formsName, spec.FormsHost, formsRules)}
	}
	return []*gatewayv1.HTTPRoute{route(mainName, spec.Host, append(formsRules, mainRules...))}
}
