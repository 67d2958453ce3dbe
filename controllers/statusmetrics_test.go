package controllers

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/formsservice/formsservice/api/v1alpha1"
	"github.com/formsservice/formsservice/internal/testwait"
)

// The collector reads what the reconciler wrote: a FormsService in the real API server, its conditions,
// its signing key's phase and its image, from the same cache the manager uses.
func TestStatusCollector_ExportsEveryFormsServicesStatus(t *testing.T) {
	ns := newNamespace(t)
	fs := sampleFS(ns)
	if err := k8s.Create(t.Context(), fs); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "the reconciler's status", func() bool {
		got := &v1alpha1.FormsService{}
		return k8s.Get(t.Context(), client.ObjectKeyFromObject(fs), got) == nil && len(got.Status.Conditions) > 0 && got.Status.Image != "" &&
			got.Status.SigningKey != nil
	})
	got := &v1alpha1.FormsService{}
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(fs), got); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(StatusCollector{Reader: k8s})
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			mine := f.GetName() == "formsservice_operator_status_scrape_errors"
			for _, l := range m.GetLabel() {
				if l.GetName() == "namespace" && l.GetValue() == ns {
					mine = true
				}
				if l.GetName() != "namespace" && l.GetName() != "name" && l.GetName() != "reason" {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
			}
			if mine {
				series[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = m.GetGauge().GetValue()
			}
		}
	}
	want := map[string]float64{
		"formsservice_operator_status_scrape_errors{}":                                       0,
		"formsservice_operator_operand_info{image=" + got.Status.Image + "}":                 1,
		"formsservice_operator_signing_key_phase{phase=" + got.Status.SigningKey.Phase + "}": 1,
	}
	for _, c := range got.Status.Conditions {
		v := map[metav1.ConditionStatus]float64{metav1.ConditionTrue: 1, metav1.ConditionFalse: 0, metav1.ConditionUnknown: -1}[c.Status]
		want["formsservice_operator_condition{type="+c.Type+"}"] = v
	}
	for k, v := range want {
		if g, ok := series[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if len(series) != len(want) {
		t.Errorf("series %v, want %v", series, want)
	}
}

// A backup's outcome, completion and duration become gauges; a FormsService without backups has none.
func TestStatusCollector_Backups(t *testing.T) {
	start, end := metav1.NewTime(time.Unix(1_800_000_000, 0)), metav1.NewTime(time.Unix(1_800_000_042, 0))
	fs := &v1alpha1.FormsService{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "acme"}}
	fs.Status.Backup = &v1alpha1.BackupStatus{CronJob: "acme-backup",
		Last:           &v1alpha1.BackupRun{Outcome: "Failed", StartTime: &start, CompletionTime: &end},
		LastSuccessful: &v1alpha1.BackupRun{Outcome: "Succeeded", StartTime: &start, CompletionTime: &start}}
	ch := make(chan prometheus.Metric, 16)
	collectStatus(ch, fs)
	close(ch)
	reg := prometheus.NewRegistry()
	var ms []prometheus.Metric
	for m := range ch {
		ms = append(ms, m)
	}
	reg.MustRegister(constCollector(ms))
	expected := `
# HELP formsservice_operator_backup_last_duration_seconds How long the FormsService's latest completed backup took.
# TYPE formsservice_operator_backup_last_duration_seconds gauge
formsservice_operator_backup_last_duration_seconds{name="acme",namespace="shop"} 42
# HELP formsservice_operator_backup_last_failed 1 when the FormsService's latest backup failed.
# TYPE formsservice_operator_backup_last_failed gauge
formsservice_operator_backup_last_failed{name="acme",namespace="shop"} 1
# HELP formsservice_operator_backup_last_success_timestamp_seconds When the FormsService's last successful backup completed (Unix seconds); 0 when none has.
# TYPE formsservice_operator_backup_last_success_timestamp_seconds gauge
formsservice_operator_backup_last_success_timestamp_seconds{name="acme",namespace="shop"} 1.8e+09
# HELP formsservice_operator_backup_scheduled 1 when the FormsService has a backup schedule (a CronJob).
# TYPE formsservice_operator_backup_scheduled gauge
formsservice_operator_backup_scheduled{name="acme",namespace="shop"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(expected)); err != nil {
		t.Error(err)
	}
}

// constCollector hands a fixed set of metrics to a registry.
type constCollector []prometheus.Metric

func (c constCollector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }
func (c constCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c {
		ch <- m
	}
}
