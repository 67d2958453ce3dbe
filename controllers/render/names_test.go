package render

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/formsservice/formsservice/api/v1alpha1"
)

// fsName is the name the collision proof renders with: every derived name must start with it.
const fsName = "acme"

// everyFeature is a FormsService with every optional object on: the highly available managed Redis,
// an Ingress and HTTPRoutes with a forms host of their own, network policies, autoscaling and budgets,
// scheduled and requested backups, a restore.
func everyFeature() *v1alpha1.FormsService {
	fs := base()
	fs.Name = fsName
	fs.Spec.Ingress = &v1alpha1.IngressSpec{Host: "id.acme.example", FormsHost: "forms.acme.example"}
	fs.Spec.Gateway = &v1alpha1.GatewaySpec{Host: "id.acme.example", FormsHost: "forms.acme.example", ParentRefs: []v1alpha1.GatewayParentRef{{Name: "gw"}}}
	fs.Spec.Redis.Managed = &v1alpha1.ManagedRedisSpec{HighAvailability: true}
	fs.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{IngressFrom: []networkingv1.NetworkPolicyPeer{{}}}
	for _, w := range []*v1alpha1.Workload{&fs.Spec.Forms.Workload, &fs.Spec.Auth.Workload, &fs.Spec.Health.Workload} {
		w.Autoscaling = &v1alpha1.AutoscalingSpec{MinReplicas: ptr.To[int32](2), MaxReplicas: 4}
	}
	s3 := &v1alpha1.S3Location{Endpoint: "http://s3.storage:7070", Bucket: "backups", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-keys"}}
	fs.Spec.Backup = &v1alpha1.BackupSpec{Schedule: "0 3 * * *", S3: s3}
	fs.Spec.RestoreFrom = &v1alpha1.RestoreSource{S3: s3, Object: "prod/acme/acme-backup-1.backup.gz"}
	return fs
}

// renderers are the exported functions of this package that render an object, each with the objects it
// gives for fs. A new renderer not listed here fails TestNames_EveryRendererIsListed: list it, so its
// names are in the collision proof.
func renderers(t *testing.T, fs *v1alpha1.FormsService) map[string][]any {
	t.Helper()
	cm, err := ConfigMap(fs, in)
	if err != nil {
		t.Fatal(err)
	}
	each := func(f func(c string) any, components ...string) []any {
		var out []any
		for _, c := range components {
			out = append(out, f(c))
		}
		return out
	}
	all := append(slices.Clone(Components), Redis)
	var routes, nodes []any
	for _, r := range HTTPRoutes(fs) {
		routes = append(routes, r)
	}
	for _, s := range RedisHANodeServices(fs) {
		nodes = append(nodes, s)
	}
	return map[string][]any{
		"ConfigMap":                  {cm},
		"RedisConfigMap":             {RedisConfigMap(fs)},
		"RedisService":               {RedisService(fs)},
		"RedisStatefulSet":           {RedisStatefulSet(fs, in)},
		"RedisNetworkPolicy":         {RedisNetworkPolicy(fs, Inputs{})},
		"RedisHANodeServices":        nodes,
		"RedisHAPodDisruptionBudget": {RedisHAPodDisruptionBudget(fs)},
		"Ingress":                    {Ingress(fs)},
		"HTTPRoutes":                 routes,
		"BackupCronJob":              {BackupCronJob(fs, in)},
		// Two requests: their Jobs are named by a digest of the value.
		"BackupRequestJob":    {BackupRequestJob(fs, in, "before-upgrade"), BackupRequestJob(fs, in, "2026-11-29")},
		"RestoreJob":          {RestoreJob(fs, in)},
		"DataServiceAccount":  {DataServiceAccount(fs)},
		"DataNetworkPolicy":   {DataNetworkPolicy(fs)},
		"Deployment":          each(func(c string) any { return Deployment(fs, c, in) }, Components...),
		"Service":             each(func(c string) any { return Service(fs, c) }, Components...),
		"ServiceAccount":      each(func(c string) any { return ServiceAccount(fs, c) }, all...),
		"PodDisruptionBudget": each(func(c string) any { return PodDisruptionBudget(fs, c) }, Components...),
		"ServiceNetworkPolicy": each(func(c string) any {
			return ServiceNetworkPolicy(fs, c)
		}, Components...),
		"HorizontalPodAutoscaler": each(func(c string) any { return HorizontalPodAutoscaler(fs, c) }, Components...),
		"OwnerReference":          nil, // parts of objects, naming none
		"TopologySpread":          nil,
	}
}

// kindName is one object's kind and name: two objects collide when both are equal in one namespace.
type kindName struct{ Kind, Name string }

// everyName is every (kind, name) the operator creates for fs: what the renderers give, the Secrets it
// creates itself (controllers/secrets.go, signingkey.go), the ServiceMonitors (controllers/servicemonitor.go,
// named by WorkloadName), and the Jobs the backup CronJob's controller makes (<cronjob>-<minutes>).
func everyName(t *testing.T, fs *v1alpha1.FormsService) []kindName {
	t.Helper()
	var out []kindName
	for fn, objs := range renderers(t, fs) {
		for _, o := range objs {
			b, err := json.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			var m struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if m.Kind == "" || m.Metadata.Name == "" {
				t.Fatalf("%s rendered %s: no kind or name (is its feature on in everyFeature?)", fn, b)
			}
			out = append(out, kindName{m.Kind, m.Metadata.Name})
		}
	}
	names := NamesOf(fs)
	out = append(out, kindName{"Secret", names.SigningKey}, kindName{"Secret", names.RedisPassword},
		kindName{"Job", BackupCronJobName(fs) + "-29411820"})
	for _, c := range Components {
		out = append(out, kindName{"ServiceMonitor", WorkloadName(fs, c)})
	}
	return out
}

// nameRules reads the CRD's rules on metadata.name from the generated CRD: the patterns a name must
// match, and those it must not (the rules the API server applies at creation).
func nameRules(t *testing.T) (must, mustNot []*regexp.Regexp, maxLen int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "platform.formsservice.io_formsservices.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	matches := regexp.MustCompile(`(!?)self\.metadata\.name\.matches\('([^']*)'\)`)
	size := regexp.MustCompile(`size\(self\.metadata\.name\) <= ([0-9]+)`)
	for _, r := range crd.Spec.Versions[0].Schema.OpenAPIV3Schema.XValidations {
		for _, m := range matches.FindAllStringSubmatch(r.Rule, -1) {
			if m[1] == "!" {
				mustNot = append(mustNot, regexp.MustCompile(m[2]))
			} else {
				must = append(must, regexp.MustCompile(m[2]))
			}
		}
		if m := size.FindStringSubmatch(r.Rule); m != nil {
			if maxLen, err = strconv.Atoi(m[1]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(must) == 0 || maxLen == 0 {
		t.Fatal("the CRD has no rule on metadata.name")
	}
	return must, mustNot, maxLen
}

// accepted says whether the CRD's name rules let a FormsService of this name be created.
func accepted(t *testing.T, name string) bool {
	t.Helper()
	must, mustNot, maxLen := nameRules(t)
	if len(name) > maxLen {
		return false
	}
	for _, r := range must {
		if !r.MatchString(name) {
			return false
		}
	}
	for _, r := range mustNot {
		if r.MatchString(name) {
			return false
		}
	}
	return true
}

// No two FormsServices the CRD accepts in one namespace give two objects of one kind the same name.
//
// Every derived name is <fs> or <fs>-<suffix>, the suffix the same for every FormsService (checked: a
// name that does not start with the FormsService's fails the test). FormsServices a and b ≠ a collide on
// kind K exactly when a-s1 = b-s2 (or b) for suffixes s1, s2 of K: b is longer, so b = a-x and
// s1 = x-s2 (or s1 = x for K's bare name). So for every pair of K's suffixes where s1 ends in -s2 (or for
// every s1 when K has a bare name), the name a-x must be refused, for any accepted a: the test asks the
// CRD's rules with several a.
func TestNames_NoTwoFormsServicesShareAnObjectName(t *testing.T) {
	fs := everyFeature()
	suffixes := map[string][]string{} // kind → suffixes; "" is the bare name
	for _, kn := range everyName(t, fs) {
		switch {
		case kn.Name == fsName:
			suffixes[kn.Kind] = append(suffixes[kn.Kind], "")
		case strings.HasPrefix(kn.Name, fsName+"-"):
			suffixes[kn.Kind] = append(suffixes[kn.Kind], strings.TrimPrefix(kn.Name, fsName+"-"))
		default:
			t.Errorf("%s %s is not %s or %s-<suffix>: the proof below does not cover it", kn.Kind, kn.Name, fsName, fsName)
		}
	}
	prefixes := []string{"a", "acme", "x1", strings.Repeat("long-", 5) + "name"}
	for kind, ss := range suffixes {
		for _, s1 := range ss {
			for _, s2 := range ss {
				var x string
				switch {
				case s1 == "" || s1 == s2:
					continue
				case s2 == "":
					x = s1
				case strings.HasSuffix(s1, "-"+s2):
					x = strings.TrimSuffix(s1, "-"+s2)
				default:
					continue
				}
				for _, a := range prefixes {
					if b := a + "-" + x; accepted(t, a) && accepted(t, b) {
						t.Errorf("%s %s-%s of FormsService %s is the %s %s of FormsService %s: the CRD must refuse the name %s",
							kind, a, s1, a, kind, strings.TrimSuffix(b+"-"+s2, "-"), b, b)
					}
				}
			}
		}
	}
}

// The collision the operator met (issue 39, item 7): acme's Redis ConfigMap is acme-redis-config, the
// configuration ConfigMap of a FormsService acme-redis; and acme's forms HTTPRoute is acme-forms, the
// main HTTPRoute of a FormsService acme-forms.
func TestNames_TheKnownCollisionsAreRefused(t *testing.T) {
	acme, acmeRedis, acmeForms := everyFeature(), everyFeature(), everyFeature()
	acmeRedis.Name, acmeForms.Name = "acme-redis", "acme-forms"
	if NamesOf(acme).RedisConfigMap != NamesOf(acmeRedis).ConfigMap {
		t.Fatalf("the counterexample no longer holds: %s, %s", NamesOf(acme).RedisConfigMap, NamesOf(acmeRedis).ConfigMap)
	}
	if _, forms := HTTPRouteNames(acme); forms != "acme-forms" {
		t.Fatalf("the counterexample no longer holds: acme's forms HTTPRoute is %s", forms)
	}
	for _, name := range []string{"acme-redis", "acme-forms"} {
		if accepted(t, name) {
			t.Errorf("the CRD accepts the FormsService name %s, whose objects are acme's", name)
		}
	}
	for _, name := range []string{"acme", "redis", "forms", "acme-redisx", "acme-forms-eu"} {
		if !accepted(t, name) {
			t.Errorf("the CRD refuses the FormsService name %s, which collides with nothing", name)
		}
	}
}

// Every exported function of this package that returns an apply configuration is in renderers, so its
// object's name is in the collision proof.
func TestNames_EveryRendererIsListed(t *testing.T) {
	listed := renderers(t, everyFeature())
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() || fn.Type.Results == nil {
				continue
			}
			for _, r := range fn.Type.Results.List {
				if strings.HasSuffix(exprString(r.Type), "ApplyConfiguration") {
					if _, ok := listed[fn.Name.Name]; !ok {
						t.Errorf("%s (%s) renders an object but is not in renderers: list it, so its names are checked for collisions", fn.Name.Name, f)
					}
				}
			}
		}
	}
}

// exprString writes a result type as the source spells it, enough to see its name.
func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return exprString(e.X)
	case *ast.ArrayType:
		return exprString(e.Elt)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return ""
}
