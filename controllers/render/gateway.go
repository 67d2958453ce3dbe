package render

import (
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1ac "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/services/auth/publicpaths"
)

// HTTPRouteNames are the names of the HTTPRoutes a FormsService may own: <name> for the main host and
// <name>-forms for a separate forms host.
func HTTPRouteNames(fs *v1alpha1.FormsService) (main, forms string) {
	return fs.Name, fs.Name + "-forms"
}

// HTTPRoutes route the public paths through the Gateway(s) of spec.gateway exactly as Ingress does:
// /contact and /waitlist (Exact) and, with declared forms, /f/ (PathPrefix) to forms, on the forms host
// when it differs; the provider's
// publicpaths.Prefixes (/oauth2, /.well-known, /account, /admin; PathPrefix, by path element like the Ingress'
// Prefix) to auth; /health (Exact) to health. Nothing else,
// not /metrics. An HTTPRoute's hostnames hold for all its rules, so a separate forms host gets a route of
// its own. It returns nil without spec.gateway.
func HTTPRoutes(fs *v1alpha1.FormsService) []*gatewayv1ac.HTTPRouteApplyConfiguration {
	spec := fs.Spec.Gateway
	if spec == nil {
		return nil
	}
	var parents []*gatewayv1ac.ParentReferenceApplyConfiguration
	for _, p := range spec.ParentRefs {
		ref := gatewayv1ac.ParentReference().WithName(gatewayv1.ObjectName(p.Name))
		if p.Namespace != "" {
			ref.WithNamespace(gatewayv1.Namespace(p.Namespace))
		}
		if p.SectionName != "" {
			ref.WithSectionName(gatewayv1.SectionName(p.SectionName))
		}
		parents = append(parents, ref)
	}
	rule := func(path string, match gatewayv1.PathMatchType, component string) *gatewayv1ac.HTTPRouteRuleApplyConfiguration {
		backend := gatewayv1ac.HTTPBackendRef()
		backend.WithName(gatewayv1.ObjectName(WorkloadName(fs, component))).WithPort(gatewayv1.PortNumber(ServicePort))
		return gatewayv1ac.HTTPRouteRule().
			WithMatches(gatewayv1ac.HTTPRouteMatch().WithPath(gatewayv1ac.HTTPPathMatch().WithType(match).WithValue(path))).
			WithBackendRefs(backend)
	}
	formsRules := func() []*gatewayv1ac.HTTPRouteRuleApplyConfiguration {
		rules := []*gatewayv1ac.HTTPRouteRuleApplyConfiguration{
			rule("/contact", gatewayv1.PathMatchExact, Forms),
			rule("/waitlist", gatewayv1.PathMatchExact, Forms),
		}
		if fs.Spec.Forms.DoubleOptIn != nil { // the confirmation and unsubscribe links
			for _, p := range optInPaths {
				rules = append(rules, rule(p, gatewayv1.PathMatchExact, Forms))
			}
		}
		if hasDeclaredForms(fs) { // POST /f/<id>
			rules = append(rules, rule(DeclaredFormsPrefix, gatewayv1.PathMatchPathPrefix, Forms))
		}
		return rules
	}
	var mainRules []*gatewayv1ac.HTTPRouteRuleApplyConfiguration
	for _, p := range publicpaths.Prefixes {
		mainRules = append(mainRules, rule(p, gatewayv1.PathMatchPathPrefix, Auth))
	}
	mainRules = append(mainRules, rule("/health", gatewayv1.PathMatchExact, Health))
	route := func(name, host string, rules []*gatewayv1ac.HTTPRouteRuleApplyConfiguration) *gatewayv1ac.HTTPRouteApplyConfiguration {
		r := gatewayv1ac.HTTPRoute(name, fs.Namespace).
			WithSpec(gatewayv1ac.HTTPRouteSpec().
				WithParentRefs(parents...).
				WithHostnames(gatewayv1.Hostname(host)).
				WithRules(rules...))
		r.ObjectMetaApplyConfiguration = objectMeta(fs, name, "gateway")
		return r
	}
	mainName, formsName := HTTPRouteNames(fs)
	if spec.FormsHost != "" && spec.FormsHost != spec.Host {
		return []*gatewayv1ac.HTTPRouteApplyConfiguration{route(mainName, spec.Host, mainRules), route(formsName, spec.FormsHost, formsRules())}
	}
	return []*gatewayv1ac.HTTPRouteApplyConfiguration{route(mainName, spec.Host, append(formsRules(), mainRules...))}
}
