package render

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

func TestHTTPRoutes_RouteWhatTheIngressRoutes(t *testing.T) {
	type route struct {
		name, host string
		rules      []string // "<match type> <path> -> <service>:<port>"
	}
	mainRules := []string{"PathPrefix /oauth2 -> acme-auth:80", "PathPrefix /.well-known -> acme-auth:80", "PathPrefix /account -> acme-auth:80", "PathPrefix /admin -> acme-auth:80",
		"PathPrefix /console -> acme-auth:80", "Exact /health -> acme-health:80"}
	formsRules := []string{"Exact /contact -> acme-forms:80", "Exact /waitlist -> acme-forms:80"}
	for _, tc := range []struct {
		name string
		spec *v1alpha1.GatewaySpec
		want []route
	}{
		{name: "no spec.gateway: no route"},
		{name: "one host", spec: &v1alpha1.GatewaySpec{ParentRefs: []v1alpha1.GatewayParentRef{{Name: "public"}}, Host: "id.acme.example"},
			want: []route{{"acme", "id.acme.example", append(slices.Clone(formsRules), mainRules...)}}},
		{name: "forms host equal to the host: one route", spec: &v1alpha1.GatewaySpec{ParentRefs: []v1alpha1.GatewayParentRef{{Name: "public"}}, Host: "id.acme.example", FormsHost: "id.acme.example"},
			want: []route{{"acme", "id.acme.example", append(slices.Clone(formsRules), mainRules...)}}},
		{name: "a forms host of its own: a second route", spec: &v1alpha1.GatewaySpec{ParentRefs: []v1alpha1.GatewayParentRef{{Name: "public"}}, Host: "id.acme.example", FormsHost: "forms.acme.example"},
			want: []route{{"acme", "id.acme.example", mainRules}, {"acme-forms", "forms.acme.example", formsRules}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := base()
			fs.Spec.Gateway = tc.spec
			routes := HTTPRoutes(fs)
			if len(routes) != len(tc.want) {
				t.Fatalf("%d routes, want %d", len(routes), len(tc.want))
			}
			for i, ac := range routes {
				r := typed[gatewayv1.HTTPRoute](t, ac)
				var rules []string
				for _, rule := range r.Spec.Rules {
					m := rule.Matches[0].Path
					b := rule.BackendRefs[0]
					rules = append(rules, fmt.Sprintf("%s %s -> %s:%d", *m.Type, *m.Value, b.Name, *b.Port))
				}
				w := tc.want[i]
				if r.Name != w.name || len(r.Spec.Hostnames) != 1 || string(r.Spec.Hostnames[0]) != w.host || !slices.Equal(rules, w.rules) {
					t.Errorf("route %d = %s %v %v, want %+v", i, r.Name, r.Spec.Hostnames, rules, w)
				}
				if r.Namespace != "prod" || r.Kind != "HTTPRoute" || r.APIVersion != "gateway.networking.k8s.io/v1" {
					t.Errorf("route %d: %s %s/%s", i, r.APIVersion, r.Namespace, r.Name)
				}
			}
		})
	}
}

func TestHTTPRoutes_ParentRefs(t *testing.T) {
	fs := base()
	fs.Spec.Gateway = &v1alpha1.GatewaySpec{Host: "id.acme.example", ParentRefs: []v1alpha1.GatewayParentRef{
		{Name: "public"}, {Name: "shared", Namespace: "gateways", SectionName: "https"},
	}}
	p := typed[gatewayv1.HTTPRoute](t, HTTPRoutes(fs)[0]).Spec.ParentRefs
	if len(p) != 2 || p[0].Name != "public" || p[0].Namespace != nil || p[0].SectionName != nil ||
		p[1].Name != "shared" || string(ptr.Deref(p[1].Namespace, "")) != "gateways" || string(ptr.Deref(p[1].SectionName, "")) != "https" {
		t.Errorf("parentRefs = %+v", p)
	}
	fs.Spec.PublicURL = ""
	if PublicURL(fs) != "https://id.acme.example" {
		t.Errorf("public URL from the gateway host = %q", PublicURL(fs))
	}
}
