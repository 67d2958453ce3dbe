package monitoring

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/internal/testproc"
)

// The alerts the platform team was promised (docs/health.md explains each).
var wantAlerts = []string{
	"FormsServiceHealthFailing",
	"FormsServiceHealthDegraded",
	"FormsServiceRedisUnreachable",
	"FormsServiceRedisClusterDegraded",
	"FormsServiceHighErrorRate",
	"FormsServiceStoreErrors",
	"FormsServiceDurabilityUnmet",
	"FormsServiceHighLatencyP99",
	"FormsServiceSignInFailureSpike",
	"FormsServiceNotReady",
	"FormsServiceStalled",
	"FormsServiceBackupFailed",
	"FormsServiceBackupStale",
	"FormsServiceOperatorReconcileErrors",
}

func TestShippedRules_AreAValidPrometheusRule(t *testing.T) {
	pr, err := ParseRules(RulesFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := pr.Validate(); err != nil {
		t.Fatalf("prometheus-rules.yaml:\n%v", err)
	}
	have := map[string]bool{}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			have[r.Alert] = true
		}
	}
	for _, a := range wantAlerts {
		if !have[a] {
			t.Errorf("alert %s is missing", a)
		}
	}
}

func TestShippedDashboard_IsValid(t *testing.T) {
	d, err := ParseDashboard(DashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("grafana-dashboard.json:\n%v", err)
	}
	// The dashboard covers what the alerts watch.
	all := string(DashboardFile)
	for _, series := range []string{"formsservice_health_check_status", "formsservice_health_status", "code=~\\\"5..\\\"", "code=\\\"502\\\"",
		"histogram_quantile(0.99", "formsservice_auth_signins_total"} {
		if !strings.Contains(all, series) {
			t.Errorf("no panel uses %s", series)
		}
	}
}

// Every series and label value the rules and the dashboard select must be one the services' code
// names, so that renaming a metric or a result value without updating the alerts fails the build. (The
// end-to-end test in services/health also checks the names against the running processes' /metrics.)
func TestShippedQueries_UseOnlySeriesAndValuesTheServicesDefine(t *testing.T) {
	src := serviceSource(t)
	qs, err := AllQueries()
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) < 15 {
		t.Fatalf("only %d queries found; the reader lost some", len(qs))
	}
	for _, q := range qs {
		e, err := ParseExpr(q.Expr)
		if err != nil {
			t.Errorf("%s: %v", q.Where, err)
			continue
		}
		names := MetricNames(e)
		if len(names) == 0 {
			t.Errorf("%s selects no series: %s", q.Where, q.Expr)
		}
		for _, n := range names {
			if externalFamilies[Family(n)] {
				continue
			}
			if !strings.Contains(src, strconv.Quote(Family(n))) {
				t.Errorf("%s uses %s, which no service defines", q.Where, n)
			}
		}
		for label, values := range MatcherValues(e) {
			if targetLabels[label] {
				continue
			}
			for _, v := range values {
				if !strings.Contains(src, strconv.Quote(v)) {
					t.Errorf("%s matches %s=%q, a value no service uses", q.Where, label, v)
				}
			}
		}
	}
}

// targetLabels are added by Prometheus or carry numbers, not values the code spells out.
var targetLabels = map[string]bool{"namespace": true, "job": true, "pod": true, "instance": true, "le": true, "code": true, "__name__": true}

// externalFamilies are metrics a library defines for us: controller-runtime's, which the operator's
// manager serves (its controller is Named "formsservice" in controllers/watches.go).
var externalFamilies = map[string]bool{"controller_runtime_reconcile_errors_total": true, "controller_runtime_active_workers": true}

// serviceSource is the non-test Go source of services/, controllers/ and api/, where every metric and
// label value is defined (the operator's status metrics in controllers/statusmetrics.go, its condition
// types in api/).
func serviceSource(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, dir := range []string{"services", "controllers", "api"} {
		readGo(t, &b, filepath.Join("..", "..", dir))
	}
	return b.String()
}

func readGo(t *testing.T, b *strings.Builder, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			b.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Each broken variant must be refused with a message naming the problem, by rulefmt (ParseRules) or by
// the house rules (Validate): the checks can fail.
func TestRulesValidate_RefusesBrokenRules(t *testing.T) {
	good := string(RulesFile)
	cases := []struct{ name, from, to, want string }{
		{"unbalanced parenthesis", "min by (namespace) (formsservice_health_status) == 0", "min by (namespace) (formsservice_health_status == 0", "could not parse expression"},
		{"unknown function", "histogram_quantile(0.99,", "histogram_quantil(0.99,", `unknown function with name "histogram_quantil"`},
		{"range vector", "min by (namespace) (formsservice_health_status) == 0", "formsservice_health_status[5m]", "want an instant vector"},
		{"misspelt key", "expr: min by (namespace) (formsservice_health_status) == 0", "exp: min by (namespace) (formsservice_health_status) == 0", "field exp not found"},
		{"bad duration", "for: 2m", "for: 2 minutes", `duration "2 minutes"`},
		{"no for", "          for: 15m\n", "", "needs a for"},
		{"bad severity", "severity: warning", "severity: page-me", "severity"},
		{"label the expression drops", "GET /health in namespace {{ $labels.namespace }}", "GET /health in namespace {{ $labels.pod }}", "$labels.pod"},
		{"broken template", "{{ $value | humanizePercentage }}", "{{ $value | humanizePercentage }", `annotation "description"`},
		{"unknown template function", "{{ $value | humanizePercentage }}", "{{ $value | humanisePercentage }}", "humanisePercentage"},
		{"duplicate alert", "alert: FormsServiceHealthDegraded", "alert: FormsServiceHealthFailing", "duplicate alert"},
		{"wrong kind", "kind: PrometheusRule", "kind: ConfigMap", "PrometheusRule"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(good, c.from) {
				t.Fatalf("the shipped file no longer contains %q; update the case", c.from)
			}
			broken := strings.Replace(good, c.from, c.to, 1)
			pr, err := ParseRules([]byte(broken))
			if err == nil {
				err = pr.Validate()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestDashboardValidate_RefusesBrokenDashboards(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(d map[string]any)
		want   string
	}{
		{"broken expression", func(d map[string]any) { target(d, 1)["expr"] = "sum(rate(formsservice_http_requests_total[5m])" }, "does not parse"},
		{"misspelt variable", func(d map[string]any) {
			target(d, 1)["expr"] = `min(formsservice_health_status{namespace=~"$namspace"})`
		}, "unknown Grafana variable(s) namspace"},
		{"duplicate panel id", func(d map[string]any) { panel(d, 2)["id"] = panel(d, 1)["id"] }, "id must be set and unique"},
		{"overlapping panels", func(d map[string]any) { panel(d, 2)["gridPos"] = panel(d, 1)["gridPos"] }, "overlaps"},
		{"fixed datasource", func(d map[string]any) { panel(d, 1)["datasource"] = map[string]any{"uid": "prom-prod"} }, "${datasource}"},
		{"unknown panel type", func(d map[string]any) { panel(d, 1)["type"] = "graph-old" }, "type \"graph-old\""},
		{"no datasource variable", func(d map[string]any) { d["templating"] = map[string]any{"list": []any{}} }, "datasource"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var d map[string]any
			if err := json.Unmarshal(DashboardFile, &d); err != nil {
				t.Fatal(err)
			}
			c.break_(d)
			b, _ := json.Marshal(d)
			dash, err := ParseDashboard(b)
			if err == nil {
				err = dash.Validate()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// panel returns the i-th panel of the top level (0 is the first row).
func panel(d map[string]any, i int) map[string]any { return d["panels"].([]any)[i].(map[string]any) }

func target(d map[string]any, i int) map[string]any {
	return panel(d, i)["targets"].([]any)[0].(map[string]any)
}

// TestShippedRules_PromtoolUnitTests runs `promtool test rules` on testdata/prometheus-rules.test.yaml:
// every alert fires on the series it watches, after its for: duration, with the labels and expanded
// annotations a page shows, and stays quiet where it must. promtool reads plain rule files, so the
// PrometheusRule's spec is written beside a copy of the tests.
func TestShippedRules_PromtoolUnitTests(t *testing.T) {
	testproc.SkipShort(t, "promtool")
	promtool := filepath.Join("..", "..", "bin", "promtool")
	if _, err := os.Stat(promtool); err != nil {
		t.Fatalf("%s is missing: run `make deps-chart` (or `make test`, which installs every tool)", promtool)
	}
	promtool, _ = filepath.Abs(promtool)
	tests, err := os.ReadFile(filepath.Join("testdata", "prometheus-rules.test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Every alert has a test that expects it to fire.
	pr, err := ParseRules(RulesFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" && !strings.Contains(string(tests), "alertname: "+r.Alert+"\n        exp_alerts:\n          - ") {
				t.Errorf("testdata/prometheus-rules.test.yaml has no test in which %s fires", r.Alert)
			}
		}
	}
	groups, err := RuleFile(RulesFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{"prometheus-rules.groups.yaml": groups, "prometheus-rules.test.yaml": tests} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(promtool, "test", "rules", "prometheus-rules.test.yaml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
