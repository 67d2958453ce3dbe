package monitoring

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

var labelRef = regexp.MustCompile(`\$labels\.(\w+)`)

// Severities are the values the severity label may take (what Alertmanager routes on).
var Severities = []string{"critical", "warning", "info"}

// Validate checks the house rules that neither rulefmt (run by ParseRules: syntax, names, durations,
// expressions, templates) nor promtool check: the object is a PrometheusRule with a name; there is at
// least one group and no group is empty; alert names are unique in the file; every expression yields an
// instant vector (Prometheus would only fail at evaluation time); alerts have a for: duration, a known
// severity, a summary and a description; and every $labels.X an annotation uses is a label the
// expression keeps (otherwise it renders empty in the page).
func (pr *PrometheusRule) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		add("apiVersion/kind %s/%s: want monitoring.coreos.com/v1 PrometheusRule", pr.APIVersion, pr.Kind)
	}
	if pr.Metadata.Name == "" {
		add("metadata.name is empty")
	}
	if len(pr.Spec.Groups) == 0 {
		add("spec.groups is empty")
	}
	alerts := map[string]bool{}
	for _, g := range pr.Spec.Groups {
		if len(g.Rules) == 0 {
			add("group %q: no rules", g.Name)
		}
		for i, r := range g.Rules {
			where := fmt.Sprintf("group %q rule %d (%s)", g.Name, i+1, ruleName(r))
			for _, err := range validateRule(r) {
				add("%s: %v", where, err)
			}
			if r.Alert != "" {
				if alerts[r.Alert] {
					add("%s: duplicate alert name", where)
				}
				alerts[r.Alert] = true
			}
		}
	}
	return errors.Join(errs...)
}

// validateRule checks one rule that rulefmt has already accepted.
func validateRule(r rulefmt.Rule) []error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	expr, err := ParseExpr(r.Expr)
	if err != nil {
		return append(errs, fmt.Errorf("expr does not parse: %w", err))
	}
	if expr.Type() != parser.ValueTypeVector {
		add("expr yields a %s, want an instant vector", expr.Type())
	}
	if r.Record != "" {
		return errs
	}
	if r.For == 0 {
		add("an alert needs a for: duration, so that one bad scrape does not page anyone")
	}
	if sev := r.Labels["severity"]; !slices.Contains(Severities, sev) {
		add("severity %q: want one of %s", sev, strings.Join(Severities, ", "))
	}
	for _, key := range []string{"summary", "description"} {
		if strings.TrimSpace(r.Annotations[key]) == "" {
			add("annotation %s is missing", key)
		}
	}
	kept, known := outputLabels(expr)
	if !known {
		return errs
	}
	for key, text := range r.Annotations {
		for _, m := range labelRef.FindAllStringSubmatch(text, -1) {
			if !kept[m[1]] {
				add("annotation %s uses $labels.%s, which the expression does not keep (it keeps %s)", key, m[1], setString(kept))
			}
		}
	}
	return errs
}

// outputLabels says which labels an expression's result keeps, when that is known from its shape:
// an aggregation "by" keeps its grouping, histogram_quantile drops le, a comparison with a number or an
// and/or/unless keeps its left side's. known is false for shapes that keep the input's labels.
func outputLabels(e parser.Expr) (set map[string]bool, known bool) {
	switch n := e.(type) {
	case nil:
		return nil, false
	case *parser.ParenExpr:
		return outputLabels(n.Expr)
	case *parser.NumberLiteral:
		return map[string]bool{}, true
	case *parser.AggregateExpr:
		if n.Without {
			return nil, false
		}
		set := map[string]bool{}
		for _, l := range n.Grouping {
			set[l] = true
		}
		return set, true
	case *parser.Call:
		if n.Func.Name == "histogram_quantile" && len(n.Args) == 2 {
			set, known := outputLabels(n.Args[1])
			if known {
				delete(set, "le")
			}
			return set, known
		}
		return nil, false
	case *parser.BinaryExpr:
		if n.LHS.Type() == parser.ValueTypeScalar {
			return outputLabels(n.RHS)
		}
		if n.VectorMatching != nil && n.VectorMatching.On && !n.Op.IsSetOperator() {
			set := map[string]bool{}
			for _, l := range n.VectorMatching.MatchingLabels {
				set[l] = true
			}
			return set, true
		}
		return outputLabels(n.LHS)
	}
	return nil, false
}

func setString(s map[string]bool) string {
	var names []string
	for n := range s {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "no labels"
	}
	return strings.Join(names, ", ")
}

// panelTypes are the Grafana panel types the dashboard may use (all built in).
var panelTypes = []string{"row", "stat", "timeseries", "state-timeline", "table", "gauge", "bargauge", "text"}

// Validate checks the dashboard as Grafana would load it from a provisioning ConfigMap: it is titled
// and has a stable uid; a datasource variable selects Prometheus and every query uses it; panels have
// unique ids, known types and titles, fit the 24-column grid without overlapping; targets have unique
// refIds; and every expression, with its variables expanded, parses as PromQL.
func (d *Dashboard) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if d.Title == "" || d.UID == "" {
		add("title and uid are required (the uid keeps links stable across imports)")
	}
	if d.SchemaVersion == 0 {
		add("schemaVersion is missing")
	}
	hasDS := false
	for _, v := range d.Templating.List {
		if v.Name == "datasource" && v.Type == "datasource" && variableQuery(v.Query) == "prometheus" {
			hasDS = true
		}
	}
	if !hasDS {
		add(`templating needs a variable "datasource" of type datasource with query "prometheus"`)
	}
	ids := map[int]bool{}
	type rect struct {
		title      string
		x, y, w, h int
	}
	var placed []rect
	panels := d.AllPanels()
	if len(panels) == 0 {
		add("no panels")
	}
	for _, p := range panels {
		where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if p.ID == 0 || ids[p.ID] {
			add("%s: id must be set and unique", where)
		}
		ids[p.ID] = true
		if p.Title == "" {
			add("%s: no title", where)
		}
		if !slices.Contains(panelTypes, p.Type) {
			add("%s: type %q is not one of %s", where, p.Type, strings.Join(panelTypes, ", "))
		}
		g := p.GridPos
		if g.W < 1 || g.H < 1 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			add("%s: gridPos %+v does not fit the 24-column grid", where, g)
		}
		r := rect{p.Title, g.X, g.Y, g.W, g.H}
		for _, o := range placed {
			if r.x < o.x+o.w && o.x < r.x+r.w && r.y < o.y+o.h && o.y < r.y+r.h {
				add("%s: overlaps panel %q", where, o.title)
			}
		}
		placed = append(placed, r)
		if p.Type == "row" || p.Type == "text" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			add("%s: datasource must be the ${datasource} variable", where)
		}
		if len(p.Targets) == 0 {
			add("%s: no targets", where)
		}
		refs := map[string]bool{}
		for _, t := range p.Targets {
			if t.RefID == "" || refs[t.RefID] {
				add("%s: target refId %q must be set and unique", where, t.RefID)
			}
			refs[t.RefID] = true
			if t.Datasource != nil && t.Datasource.UID != "${datasource}" {
				add("%s target %s: datasource must be the ${datasource} variable", where, t.RefID)
			}
			if strings.TrimSpace(t.Expr) == "" {
				add("%s target %s: empty expr", where, t.RefID)
			}
		}
	}
	qs, err := d.Queries()
	if err != nil {
		add("%v", err)
	}
	for _, q := range qs {
		if _, err := ParseExpr(q.Expr); err != nil {
			add("%s: does not parse: %v", q.Where, err)
		}
	}
	return errors.Join(errs...)
}
