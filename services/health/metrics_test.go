package health

import (
	"io"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/config"
)

// scrape reads /metrics and parses the Prometheus text exposition format.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := httpClient.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("/metrics: %d %s", resp.StatusCode, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// gaugesByCheck returns the family's gauge values keyed by the check label.
func gaugesByCheck(t *testing.T, fams map[string]*dto.MetricFamily, name string) map[string]float64 {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("/metrics has no %s", name)
	}
	if f.GetType() != dto.MetricType_GAUGE {
		t.Fatalf("%s is a %s, want a gauge", name, f.GetType())
	}
	out := map[string]float64{}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "check" {
				out[l.GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

func TestMetrics_CheckStatusAndDuration_FollowTheChecks(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{Unix: true})
	forms, auth := startReadyz(t), startReadyz(t)
	srv := startHealth(t, &config.Config{Health: config.Health{FormsURL: forms.URL, AuthURL: auth.URL}},
		Options{Redis: redisClient(t, rs.URL())})

	fams := scrape(t, srv.URL)
	status := gaugesByCheck(t, fams, "formsservice_health_check_status")
	want := map[string]float64{"redis:responseTime": 1, "forms:readiness": 1, "auth:readiness": 1}
	for k, v := range want {
		if status[k] != v {
			t.Errorf("status %s = %v, want %v (all %v)", k, status[k], v, status)
		}
	}
	if len(status) != len(want) {
		t.Errorf("status series %v, want exactly %v", status, want)
	}
	for k, v := range gaugesByCheck(t, fams, "formsservice_health_check_duration_seconds") {
		if v <= 0 || v > roomyWarnAfter.Seconds() {
			t.Errorf("duration %s = %v s", k, v)
		}
	}
	if v := fams["formsservice_health_status"].GetMetric()[0].GetGauge().GetValue(); v != 1 {
		t.Errorf("formsservice_health_status = %v, want 1", v)
	}

	auth.set(http.StatusServiceUnavailable)
	rs.Stop()
	srv.expire()
	fams = scrape(t, srv.URL)
	status = gaugesByCheck(t, fams, "formsservice_health_check_status")
	if status["redis:responseTime"] != 0 || status["auth:readiness"] != 0 || status["forms:readiness"] != 1 {
		t.Errorf("after the store stopped and auth turned unready: %v", status)
	}
	if v := fams["formsservice_health_status"].GetMetric()[0].GetGauge().GetValue(); v != 0 {
		t.Errorf("formsservice_health_status = %v, want 0", v)
	}
}

func TestMetrics_WarnIsOneHalf(t *testing.T) {
	if Pass.gauge() != 1 || Warn.gauge() != 0.5 || Fail.gauge() != 0 {
		t.Fatal("the documented encoding is 1 pass, 0.5 warn, 0 fail")
	}
}

// GET /health is counted by the platform's request metrics under service="health", route="/health".
func TestMetrics_HealthRequests_CountedWithTheSharedLabels(t *testing.T) {
	srv := startHealth(t, &config.Config{}, Options{})
	getHealth(t, srv.URL)
	fams := scrape(t, srv.URL)
	found := false
	for _, m := range fams["formsservice_http_requests_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["service"] == "health" && labels["route"] == "/health" && labels["method"] == "GET" && labels["code"] == "200" {
			found = m.GetCounter().GetValue() >= 1
		}
	}
	if !found {
		t.Fatalf("no formsservice_http_requests_total{service=health,route=/health,method=GET,code=200}")
	}
}
