package health

import (
	"sort"
	"strings"
	"time"
)

// Status is a check's or the platform's health, as the IETF health-check draft names it.
type Status string

// The three statuses, worst last.
const (
	Pass Status = "pass"
	Warn Status = "warn"
	Fail Status = "fail"
)

// gauge is the value of formsservice_health_check_status: 1 pass, 0.5 warn, 0 fail, so that
// min() over checks is the platform's status and "== 0" means failing.
func (s Status) gauge() float64 {
	switch s {
	case Pass:
		return 1
	case Warn:
		return 0.5
	}
	return 0
}

func worse(a, b Status) Status {
	if a.gauge() <= b.gauge() {
		return a
	}
	return b
}

// Response is the application/health+json body (draft-inadvisable-health-check, section 3).
type Response struct {
	Status      Status                `json:"status"`
	Version     string                `json:"version,omitempty"`
	ServiceID   string                `json:"serviceId"`
	Description string                `json:"description"`
	Output      string                `json:"output,omitempty"`
	Checks      map[string][]CheckOut `json:"checks"`
}

// CheckOut is one entry of "checks". The draft makes each key's value an array (one element per
// instance of the component); we report one element per key: what this health service sees.
type CheckOut struct {
	ComponentType string  `json:"componentType"`
	ObservedValue any     `json:"observedValue"`
	ObservedUnit  string  `json:"observedUnit,omitempty"`
	Status        Status  `json:"status"`
	Time          string  `json:"time"`
	Output        string  `json:"output,omitempty"`
	duration      float64 // seconds the check took (metrics)
	detail        string  // the underlying error, for the log only
}

// timeFormat is RFC 3339 in UTC with milliseconds.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// newResponse sums results up: the platform's status is its worst check's, and a failing or warning
// platform names the checks responsible in output.
func newResponse(version string, results map[string]CheckOut) Response {
	r := Response{
		Status:      Pass,
		Version:     version,
		ServiceID:   "formsservice",
		Description: "formsservice platform health: the store, the forms service and the auth service",
		Checks:      make(map[string][]CheckOut, len(results)),
	}
	var failing, warning []string
	for name, c := range results {
		r.Checks[name] = []CheckOut{c}
		r.Status = worse(r.Status, c.Status)
		switch c.Status {
		case Fail:
			failing = append(failing, name)
		case Warn:
			warning = append(warning, name)
		}
	}
	sort.Strings(failing)
	sort.Strings(warning)
	var parts []string
	if len(failing) > 0 {
		parts = append(parts, "failing: "+strings.Join(failing, ", "))
	}
	if len(warning) > 0 {
		parts = append(parts, "slow: "+strings.Join(warning, ", "))
	}
	r.Output = strings.Join(parts, "; ")
	return r
}

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }
