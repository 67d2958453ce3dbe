// Package monitoring holds formsservice's Grafana dashboard (grafana-dashboard.json) and alerting rules
// (prometheus-rules.yaml, a PrometheusRule) as standalone files that the Helm chart copies, and reads
// and checks them the way promtool and Grafana would, so that a broken expression fails the build.
// Nothing in the binary imports it; the tests do.
package monitoring

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	yamlv3 "gopkg.in/yaml.v3"
	"sigs.k8s.io/yaml"
)

// RulesFile and DashboardFile are the shipped files.
var (
	//go:embed prometheus-rules.yaml
	RulesFile []byte
	//go:embed grafana-dashboard.json
	DashboardFile []byte
)

// Query is one PromQL expression and where it stands (an alert's name, a panel's title).
type Query struct {
	Where string
	Expr  string
}

// promql parses with Prometheus' own parser and its default (stable) feature set, as promtool does.
var promql = parser.NewParser(parser.Options{})

// ParseExpr parses one PromQL expression.
func ParseExpr(expr string) (parser.Expr, error) { return promql.ParseExpr(expr) }

// MetricNames lists the metric names an expression selects, sorted and without duplicates.
func MetricNames(e parser.Expr) []string {
	seen := map[string]bool{}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		switch s := n.(type) {
		case *parser.VectorSelector:
			if s.Name != "" {
				seen[s.Name] = true
			}
		case *parser.MatrixSelector:
			if vs, ok := s.VectorSelector.(*parser.VectorSelector); ok && vs.Name != "" {
				seen[vs.Name] = true
			}
		}
		return nil
	})
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Family is the metric family a series name belongs to: a histogram's _bucket, _count and _sum series
// belong to the histogram.
func Family(series string) string {
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if f, ok := strings.CutSuffix(series, suffix); ok {
			return f
		}
	}
	return series
}

var plainValue = regexp.MustCompile(`^[A-Za-z0-9_:]+$`)

// MatcherValues lists, per label, the literal values an expression's matchers name: the value of an
// equality matcher, or each alternative of a regex made only of a|b|c. Other regexes are skipped.
func MatcherValues(e parser.Expr) map[string][]string {
	out := map[string][]string{}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name == "__name__" {
				continue
			}
			for _, v := range strings.Split(m.Value, "|") {
				if plainValue.MatchString(v) {
					out[m.Name] = append(out[m.Name], v)
				}
			}
		}
		return nil
	})
	return out
}

// AllQueries returns every expression of the shipped rules and dashboard, with the dashboard's Grafana
// variables expanded to values that parse.
func AllQueries() ([]Query, error) {
	rules, err := ParseRules(RulesFile)
	if err != nil {
		return nil, err
	}
	dash, err := ParseDashboard(DashboardFile)
	if err != nil {
		return nil, err
	}
	dq, err := dash.Queries()
	if err != nil {
		return nil, err
	}
	return append(rules.Queries(), dq...), nil
}

// ---- Grafana dashboard ----

// Dashboard is the part of Grafana's dashboard model the checks read.
type Dashboard struct {
	Title         string  `json:"title"`
	UID           string  `json:"uid"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []Panel `json:"panels"`
	Templating    struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Panel is one panel; a row may hold collapsed panels.
type Panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *Datasource `json:"datasource"`
	GridPos    struct {
		H int `json:"h"`
		W int `json:"w"`
		X int `json:"x"`
		Y int `json:"y"`
	} `json:"gridPos"`
	Targets []Target `json:"targets"`
	Panels  []Panel  `json:"panels"`
}

// Datasource refers to a data source, here always the ${datasource} variable.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Target is one query of a panel.
type Target struct {
	RefID      string      `json:"refId"`
	Expr       string      `json:"expr"`
	Datasource *Datasource `json:"datasource"`
}

// Variable is a templating variable.
type Variable struct {
	Name     string          `json:"name"`
	Type     string          `json:"type"`
	Query    json.RawMessage `json:"query"`
	AllValue string          `json:"allValue"`
}

// ParseDashboard reads a dashboard JSON document.
func ParseDashboard(b []byte) (*Dashboard, error) {
	var d Dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	return &d, nil
}

// AllPanels flattens rows.
func (d *Dashboard) AllPanels() []Panel {
	var out []Panel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

// grafanaBuiltins are the interval variables Grafana fills in; a range of 5m parses like theirs.
var grafanaBuiltins = map[string]string{
	"__rate_interval": "5m", "__interval": "5m", "__range": "5m", "__range_s": "300", "__interval_ms": "300000",
}

var variableRef = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]`)

// expand replaces Grafana variables: builtins by an interval, the dashboard's own by their "All" value
// (or .* for a regex matcher). An unknown variable is an error, so a typo cannot hide.
func (d *Dashboard) expand(expr string) (string, error) {
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		all := v.AllValue
		if all == "" {
			all = ".*"
		}
		vars[v.Name] = all
	}
	var unknown []string
	out := variableRef.ReplaceAllStringFunc(expr, func(m string) string {
		sub := variableRef.FindStringSubmatch(m)
		name := sub[1] + sub[2] + sub[3]
		if v, ok := grafanaBuiltins[name]; ok {
			return v
		}
		if v, ok := vars[name]; ok {
			return v
		}
		unknown = append(unknown, name)
		return m
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("unknown Grafana variable(s) %s", strings.Join(unknown, ", "))
	}
	return out, nil
}

// Queries returns every panel target's expression, expanded, and the selector inside each
// label_values() variable query.
func (d *Dashboard) Queries() ([]Query, error) {
	var out []Query
	for _, p := range d.AllPanels() {
		for _, t := range p.Targets {
			e, err := d.expand(t.Expr)
			if err != nil {
				return nil, fmt.Errorf("panel %q target %s: %w", p.Title, t.RefID, err)
			}
			out = append(out, Query{Where: fmt.Sprintf("panel %q target %s", p.Title, t.RefID), Expr: e})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q := variableQuery(v.Query)
		sel, ok := labelValuesSelector(q)
		if !ok {
			return nil, fmt.Errorf("variable %s: want label_values(selector, label), got %q", v.Name, q)
		}
		e, err := d.expand(sel)
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", v.Name, err)
		}
		out = append(out, Query{Where: "variable " + v.Name, Expr: e})
	}
	return out, nil
}

// variableQuery reads a variable's query, stored as a string or as {"query": "..."}.
func variableQuery(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Query string `json:"query"`
	}
	_ = json.Unmarshal(raw, &obj)
	return obj.Query
}

var labelValuesCall = regexp.MustCompile(`^\s*label_values\((.+),\s*(\w+)\s*\)\s*$`)

func labelValuesSelector(q string) (string, bool) {
	m := labelValuesCall.FindStringSubmatch(q)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// ---- PrometheusRule ----

// PrometheusRule is the Prometheus Operator's object. Its envelope is read strictly here; its groups are
// read and checked by Prometheus' own rule-file parser (rulefmt), as Prometheus loads them.
type PrometheusRule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace,omitempty"`
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	} `json:"metadata"`
	Spec rulefmt.RuleGroups `json:"-"`
}

// ParseRules reads a PrometheusRule: the envelope strictly (an unknown key is an error) and spec with
// rulefmt.Parse, which refuses unknown keys, bad durations, expressions that do not parse, invalid names
// and annotation templates that do not parse, each error naming its group and rule.
func ParseRules(b []byte) (*PrometheusRule, error) {
	var envelope struct {
		PrometheusRule `json:",inline"`
		Spec           any `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(b, &envelope); err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	pr := envelope.PrometheusRule
	spec, err := RuleFile(b)
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	groups, errs := rulefmt.Parse(spec, false, model.LegacyValidation, promql, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return nil, fmt.Errorf("rules: spec (line:column counted from spec.groups): %w", errors.Join(errs...))
	}
	pr.Spec = *groups
	return &pr, nil
}

// RuleFile returns the spec of a PrometheusRule document as a plain Prometheus rule file (groups:), what
// Prometheus and promtool read, in the order and with the comments of the source.
func RuleFile(prometheusRule []byte) ([]byte, error) {
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(prometheusRule, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 1 && doc.Content[0].Kind == yamlv3.MappingNode {
		top := doc.Content[0].Content
		for i := 0; i+1 < len(top); i += 2 {
			if top[i].Value == "spec" {
				return yamlv3.Marshal(top[i+1])
			}
		}
	}
	return nil, errors.New("no spec")
}

// Queries returns every rule's expression.
func (pr *PrometheusRule) Queries() []Query {
	var out []Query
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			out = append(out, Query{Where: "rule " + g.Name + "/" + ruleName(r), Expr: r.Expr})
		}
	}
	return out
}

// ruleName is the alert's or the recorded series' name.
func ruleName(r rulefmt.Rule) string { return r.Alert + r.Record }
