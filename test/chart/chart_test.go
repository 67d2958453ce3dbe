package chart_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/test/internal/repo"
)

var update = flag.Bool("update", false, "rewrite the golden files of helm template")

// monitoringAPIs are what a cluster with the Prometheus Operator serves.
var monitoringAPIs = []string{"monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule"}

// formsServiceAPI is served once the chart's CRD exists (every upgrade after the first install).
const formsServiceAPI = "platform.formsservice.io/v1alpha1/FormsService"

// upgradeAPIs are what a cluster with the Prometheus Operator and the chart's CRD serves.
var upgradeAPIs = append([]string{formsServiceAPI}, monitoringAPIs...)

// goldenCases render the chart with one values file (testdata/<values>.values.yaml) against a cluster that
// serves apiVersions, and compare with testdata/<name>.golden.yaml.
var goldenCases = []struct {
	name, values string
	apiVersions  []string
}{
	{name: "default", values: "default"},
	{name: "full", values: "full", apiVersions: upgradeAPIs},
	{name: "full-first-install-no-prometheus-operator", values: "full"},
	{name: "minimal", values: "minimal"},
	{name: "formsservice-crd-present", values: "formsservice", apiVersions: []string{formsServiceAPI}},
	{name: "production", values: "production"},
}

func TestChart_TemplateMatchesGoldenFiles(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			got := golden(t, parse(t, mustRender(t, []string{c.values + ".values.yaml"}, c.apiVersions)))
			path := filepath.Join("testdata", c.name+".golden.yaml")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run `go test ./test/chart -run Golden -update` to create it)", err)
			}
			if got != string(want) {
				t.Fatalf("helm template differs from %s; if the change is intended, run "+
					"`go test ./test/chart -run Golden -update` and review the diff.\n%s", path, diffHint(got, string(want)))
			}
		})
	}
}

// golden turns rendered objects into the golden text. What the chart copies from config/ (the CRD's
// schema, the generated RBAC rules, the dashboard and the alerts) is replaced by a placeholder: other
// tests prove those equal to their source, and the golden files then change only when the chart does.
func golden(t *testing.T, ms []manifest) string {
	var b strings.Builder
	for _, m := range ms {
		obj := m.Object
		switch {
		case m.kind() == "CustomResourceDefinition":
			obj["spec"] = "<config/crd/bases: see TestChart_CRDIsConfigCRD>"
			if ann, ok := get(obj, "metadata", "annotations").(map[string]any); ok {
				delete(ann, "controller-gen.kubebuilder.io/version")
			}
		case m.kind() == "ClusterRole" && strings.HasSuffix(m.name(), "-manager"):
			obj["rules"] = "<config/rbac/role.yaml: see TestChart_ManagerRulesAreConfigRole>"
		case m.kind() == "ConfigMap" && strings.HasSuffix(m.name(), "-dashboard"):
			obj["data"] = "<config/monitoring dashboard: see TestChart_MonitoringFilesAreConfigMonitoring>"
		case m.kind() == "PrometheusRule":
			obj["spec"] = "<config/monitoring rules: see TestChart_MonitoringFilesAreConfigMonitoring>"
		}
		fmt.Fprintf(&b, "---\n# Source: %s\n%s", m.Source, toYAML(t, obj))
	}
	return b.String()
}

func TestChart_CopiesOfConfigAreInSync(t *testing.T) {
	if out, err := repo.Output(t, nil, repo.Path(t, "hack", "chart-sync.sh"), "--check"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

func TestChart_CRDIsConfigCRD(t *testing.T) {
	files, _ := filepath.Glob(repo.Path(t, "config", "crd", "bases", "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no CRD in config/crd/bases: run `make manifests`")
	}
	rendered := parse(t, mustRender(t, nil, nil))
	for _, f := range files {
		for _, want := range readObjects(t, f) {
			name := str(want, "metadata", "name")
			got := find(t, rendered, "CustomResourceDefinition", name)
			if !reflect.DeepEqual(got.Object["spec"], want["spec"]) {
				t.Errorf("the chart's CRD %s differs from %s:\n%s", name, f, diffHint(toYAML(t, got.Object["spec"]), toYAML(t, want["spec"])))
			}
			if str(got.Object, "metadata", "annotations", "helm.sh/resource-policy") != "keep" {
				t.Errorf("CRD %s lacks helm.sh/resource-policy: keep with the default values", name)
			}
			wantAnn, _ := get(want, "metadata", "annotations").(map[string]any)
			for k, v := range wantAnn {
				if got := str(got.Object, "metadata", "annotations", k); got != v {
					t.Errorf("CRD %s annotation %s = %q, want %q", name, k, got, v)
				}
			}
		}
	}
	noKeep := parse(t, mustRender(t, nil, nil, "--set", "crds.keep=false"))
	for _, m := range noKeep {
		if m.kind() == "CustomResourceDefinition" && str(m.Object, "metadata", "annotations", "helm.sh/resource-policy") != "" {
			t.Error("crds.keep=false still renders helm.sh/resource-policy")
		}
	}
	if has(parse(t, mustRender(t, nil, nil, "--set", "crds.enabled=false")), "CustomResourceDefinition") {
		t.Error("crds.enabled=false still renders the CRD")
	}
}

func TestChart_ManagerRulesAreConfigRole(t *testing.T) {
	roles := readObjects(t, repo.Path(t, "config", "rbac", "role.yaml"))
	if len(roles) != 1 {
		t.Fatalf("config/rbac/role.yaml holds %d objects, want 1", len(roles))
	}
	got := find(t, parse(t, mustRender(t, nil, nil)), "ClusterRole", "-manager")
	if !reflect.DeepEqual(got.Object["rules"], roles[0]["rules"]) {
		t.Fatalf("the chart's manager ClusterRole rules differ from config/rbac/role.yaml:\n%s",
			diffHint(toYAML(t, got.Object["rules"]), toYAML(t, roles[0]["rules"])))
	}
}

func TestChart_MonitoringFilesAreConfigMonitoring(t *testing.T) {
	ms := parse(t, mustRender(t, []string{"full.values.yaml"}, upgradeAPIs))

	dashboards, _ := filepath.Glob(repo.Path(t, "config", "monitoring", "*dashboard*.json"))
	if len(dashboards) != 1 {
		t.Fatalf("want one dashboard in config/monitoring, found %v", dashboards)
	}
	want, err := os.ReadFile(dashboards[0])
	if err != nil {
		t.Fatal(err)
	}
	cm := find(t, ms, "ConfigMap", "-dashboard")
	if got := str(cm.Object, "data", "formsservice.json"); strings.TrimSpace(got) != strings.TrimSpace(string(want)) {
		t.Fatalf("dashboard ConfigMap differs from %s:\n%s", dashboards[0], diffHint(got, string(want)))
	}

	rules, _ := filepath.Glob(repo.Path(t, "config", "monitoring", "*rule*.yaml"))
	if len(rules) != 1 {
		t.Fatalf("want one rules file in config/monitoring, found %v", rules)
	}
	src := readObjects(t, rules[0])[0]
	wantGroups := src["groups"]
	if wantGroups == nil {
		wantGroups = get(src, "spec", "groups")
	}
	pr := find(t, ms, "PrometheusRule", "")
	if gotGroups := get(pr.Object, "spec", "groups"); !reflect.DeepEqual(gotGroups, wantGroups) {
		t.Fatalf("PrometheusRule groups differ from %s:\n%s", rules[0], diffHint(toYAML(t, gotGroups), toYAML(t, wantGroups)))
	}
	// Prometheus' own {{ $labels.x }} templates must reach Prometheus, not be eaten by Helm.
	if y := toYAML(t, pr.Object); strings.Contains(toYAML(t, wantGroups), "{{") && !strings.Contains(y, "{{") {
		t.Fatal("the alert annotations lost their Prometheus templates")
	}
}

func TestChart_OptionalIntegrationsFollowValuesAndCapabilities(t *testing.T) {
	kinds := func(ms []manifest) []string {
		var k []string
		for _, m := range ms {
			k = append(k, m.kind())
		}
		sort.Strings(k)
		return k
	}
	def := parse(t, mustRender(t, nil, upgradeAPIs))
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule", "PodDisruptionBudget", "FormsService"} {
		if has(def, kind) {
			t.Errorf("default values render a %s: %v", kind, kinds(def))
		}
	}
	full := parse(t, mustRender(t, []string{"full.values.yaml"}, upgradeAPIs))
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule", "PodDisruptionBudget", "FormsService"} {
		if !has(full, kind) {
			t.Errorf("full values do not render a %s: %v", kind, kinds(full))
		}
	}
	// Without the Prometheus Operator's CRDs the install must still succeed, without those objects.
	bare := parse(t, mustRender(t, []string{"full.values.yaml"}, nil))
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
		if has(bare, kind) {
			t.Errorf("a %s is rendered for a cluster without its CRD", kind)
		}
	}
}

func TestChart_FormsServiceWaitsForItsCRD(t *testing.T) {
	values := []string{"formsservice.values.yaml"}
	if has(parse(t, mustRender(t, values, nil)), "FormsService") {
		t.Fatal("the first install (CRD not served yet) renders the FormsService; Helm would refuse the release")
	}
	fs := find(t, parse(t, mustRender(t, values, []string{formsServiceAPI})), "FormsService", "formsservice")
	if got := str(fs.Object, "spec", "publicURL"); got != "https://id.example.com" {
		t.Fatalf("FormsService spec.publicURL = %q, want the value from values", got)
	}
	if !has(parse(t, mustRender(t, values, nil, "--set", "crds.enabled=false")), "FormsService") {
		t.Fatal("with the CRD managed outside the chart the FormsService is not rendered")
	}
}

func TestChart_ValuesSchemaRefusesMistakes(t *testing.T) {
	cases := []struct {
		name string
		set  []string
		want string
	}{
		{"unknown top-level key", []string{"replicas=2"}, "replicas"},
		{"misspelt nested key", []string{"image.tagg=v1"}, "tagg"},
		{"misspelt flag", []string{"metrics.serviceMonitor.enable=true"}, "enable"},
		{"wrong type", []string{"replicaCount=two"}, "replicaCount"},
		{"log level outside the enum", []string{"logLevel=verbose"}, "logLevel"},
		{"pull policy outside the enum", []string{"image.pullPolicy=Sometimes"}, "pullPolicy"},
		{"digest that is not sha256", []string{"image.digest=latest"}, "digest"},
		{"port out of range", []string{"metrics.port=70000"}, "port"},
		{"scrape interval that is not a duration", []string{"metrics.serviceMonitor.interval=often"}, "interval"},
		{"memory that is not a quantity", []string{"resources.limits.memory=lots"}, "memory"},
		{"FormsService name that is not a DNS label", []string{"formsService.name=My_Forms"}, "name"},
		{"service account name missing when not created", []string{"serviceAccount.create=false"}, "serviceAccount.name is required"},
		{"several managers without leader election", []string{"replicaCount=2", "leaderElection.enabled=false"}, "needs leaderElection.enabled"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var args []string
			for _, s := range c.set {
				args = append(args, "--set", s)
			}
			out, err := render(t, nil, nil, args...)
			if err == nil {
				t.Fatalf("helm template accepted %v", c.set)
			}
			if !strings.Contains(out, c.want) {
				t.Fatalf("the error does not name %q:\n%s", c.want, out)
			}
		})
	}
}

func TestChart_LintsCleanWithEveryValuesFile(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.values.yaml"))
	if len(files) < 4 {
		t.Fatalf("want the values files of the golden cases, found %v", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			out, err := helm(t, nil, "lint", "--strict", chartDir, "--namespace", releaseNS, "--values", testdataPath(t, filepath.Base(f)))
			if err != nil {
				t.Fatalf("helm lint: %v\n%s", err, out)
			}
		})
	}
}

// TestChart_ProductionValuesAreNamespacedAndFenced proves what the production advice (docs/helm.md,
// "RBAC") installs: the manager's rules, exactly those of config/rbac/role.yaml, as a Role in each
// watched namespace and bound to its ServiceAccount there; no ClusterRole of the manager and no
// cluster-wide binding but the secure-metrics checks; and the write fence bound for the manager's
// ServiceAccount. The defaults are the other way round: one ClusterRole, no fence.
func TestChart_ProductionValuesAreNamespacedAndFenced(t *testing.T) {
	roles := readObjects(t, repo.Path(t, "config", "rbac", "role.yaml"))
	const fullname = releaseName + "-formsservice-operator"
	const account = "system:serviceaccount:" + releaseNS + ":" + fullname
	prod := parse(t, mustRender(t, []string{"production.values.yaml"}, nil))

	managerRoles := map[string]bool{}
	for _, m := range prod {
		switch {
		case m.kind() == "Role" && m.name() == fullname+"-manager":
			ns := str(m.Object, "metadata", "namespace")
			managerRoles[ns] = true
			if !reflect.DeepEqual(m.Object["rules"], roles[0]["rules"]) {
				t.Errorf("the manager Role in %s differs from config/rbac/role.yaml", ns)
			}
		case m.kind() == "RoleBinding" && m.name() == fullname+"-manager":
			subjects, _ := m.Object["subjects"].([]any)
			if len(subjects) != 1 || str(subjects[0].(map[string]any), "name") != fullname ||
				str(subjects[0].(map[string]any), "namespace") != releaseNS || str(m.Object, "roleRef", "kind") != "Role" {
				t.Errorf("RoleBinding %s/%s binds %v to %v, want the Role for the manager's ServiceAccount",
					str(m.Object, "metadata", "namespace"), m.name(), subjects, m.Object["roleRef"])
			}
		case m.kind() == "ClusterRole" && m.name() == fullname+"-manager":
			t.Error("with watchNamespaces the chart still renders the manager ClusterRole")
		case m.kind() == "ClusterRoleBinding" && str(m.Object, "roleRef", "name") != fullname+"-metrics-auth":
			t.Errorf("with watchNamespaces ClusterRoleBinding %s grants %s cluster-wide", m.name(), str(m.Object, "roleRef", "name"))
		}
	}
	if want := map[string]bool{"shop": true, "checkout": true}; !reflect.DeepEqual(managerRoles, want) {
		t.Errorf("manager Roles in %v, want one in each watched namespace %v", managerRoles, want)
	}
	fence := find(t, prod, "ValidatingAdmissionPolicy", "-write-fence")
	if cond := toYAML(t, get(fence.Object, "spec", "matchConditions")); !strings.Contains(cond, "'"+account+"'") {
		t.Errorf("the write fence does not match the manager's ServiceAccount %s:\n%s", account, cond)
	}
	binding := find(t, prod, "ValidatingAdmissionPolicyBinding", "-write-fence")
	if str(binding.Object, "spec", "policyName") != fence.name() || !strings.Contains(toYAML(t, get(binding.Object, "spec", "validationActions")), "Deny") {
		t.Errorf("the write fence's binding does not deny through %s: %v", fence.name(), binding.Object["spec"])
	}

	defaults := parse(t, mustRender(t, nil, nil))
	find(t, defaults, "ClusterRole", "-manager")
	if has(defaults, "ValidatingAdmissionPolicy") || hasNamed(defaults, "Role", fullname+"-manager") {
		t.Error("the defaults render the write fence or a namespaced manager Role")
	}
}

// hasNamed says whether ms hold an object of that kind and name.
func hasNamed(ms []manifest, kind, name string) bool {
	for _, m := range ms {
		if m.kind() == kind && m.name() == name {
			return true
		}
	}
	return false
}
