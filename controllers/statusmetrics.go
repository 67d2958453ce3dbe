package controllers

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/formsservice/formsservice/api/v1alpha1"
)

// StatusCollector exports every FormsService's status as metrics, read from the manager's cache at each
// scrape (as kube-state-metrics does): nothing to keep in step with the reconciles, and a resource that
// is gone is gone from the metrics at once. The alerts on them are in config/monitoring (the
// formsservice.operator group, docs/operator.md "Metrics and alerts").
type StatusCollector struct {
	Reader client.Reader
}

var (
	descCondition = prometheus.NewDesc("formsservice_operator_condition",
		"A FormsService's status condition: 1 True, 0 False, -1 Unknown, by type (Ready, Progressing, Degraded, Stalled, ...).",
		[]string{"namespace", "name", "type", "reason"}, nil)
	descBackupScheduled = prometheus.NewDesc("formsservice_operator_backup_scheduled",
		"1 when the FormsService has a backup schedule (a CronJob).", []string{"namespace", "name"}, nil)
	descBackupLastSuccess = prometheus.NewDesc("formsservice_operator_backup_last_success_timestamp_seconds",
		"When the FormsService's last successful backup completed (Unix seconds); 0 when none has.", []string{"namespace", "name"}, nil)
	descBackupLastFailed = prometheus.NewDesc("formsservice_operator_backup_last_failed",
		"1 when the FormsService's latest backup failed.", []string{"namespace", "name"}, nil)
	descBackupLastDuration = prometheus.NewDesc("formsservice_operator_backup_last_duration_seconds",
		"How long the FormsService's latest completed backup took.", []string{"namespace", "name"}, nil)
	descSigningKeyPhase = prometheus.NewDesc("formsservice_operator_signing_key_phase",
		"1 for the phase of the FormsService's signing key (Current, Publishing, Rotating, External, ...).", []string{"namespace", "name", "phase"}, nil)
	descOperand = prometheus.NewDesc("formsservice_operator_operand_info",
		"1 with the image the FormsService's services run.", []string{"namespace", "name", "image"}, nil)
	descScrapeError = prometheus.NewDesc("formsservice_operator_status_scrape_errors",
		"1 when the FormsServices could not be listed for this scrape.", nil, nil)
)

// Describe sends the descriptors.
func (c StatusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCondition, descBackupScheduled, descBackupLastSuccess, descBackupLastFailed,
		descBackupLastDuration, descSigningKeyPhase, descOperand, descScrapeError} {
		ch <- d
	}
}

// Collect lists the FormsServices from the cache and sends their status.
func (c StatusCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list v1alpha1.FormsServiceList
	failed := 0.0
	if err := c.Reader.List(ctx, &list); err != nil {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(descScrapeError, prometheus.GaugeValue, failed)
	for i := range list.Items {
		collectStatus(ch, &list.Items[i])
	}
}

func collectStatus(ch chan<- prometheus.Metric, fs *v1alpha1.FormsService) {
	ns, name, st := fs.Namespace, fs.Name, &fs.Status
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{ns, name}, labels...)...)
	}
	for _, cond := range st.Conditions {
		v := -1.0
		switch cond.Status {
		case "True":
			v = 1
		case "False":
			v = 0
		}
		gauge(descCondition, v, cond.Type, cond.Reason)
	}
	if b := st.Backup; b != nil {
		scheduled := 0.0
		if b.CronJob != "" {
			scheduled = 1
		}
		gauge(descBackupScheduled, scheduled)
		last := 0.0
		if s := b.LastSuccessful; s != nil && s.CompletionTime != nil {
			last = float64(s.CompletionTime.Unix())
		}
		gauge(descBackupLastSuccess, last)
		if l := b.Last; l != nil {
			failed := 0.0
			if l.Outcome == "Failed" {
				failed = 1
			}
			gauge(descBackupLastFailed, failed)
			if l.StartTime != nil && l.CompletionTime != nil {
				gauge(descBackupLastDuration, l.CompletionTime.Sub(l.StartTime.Time).Seconds())
			}
		}
	}
	if k := st.SigningKey; k != nil && k.Phase != "" {
		gauge(descSigningKeyPhase, 1, k.Phase)
	}
	if st.Image != "" {
		gauge(descOperand, 1, st.Image)
	}
}
