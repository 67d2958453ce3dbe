package v1alpha1

// ConditionMonitored reports the Prometheus Operator objects asked for in spec.monitoring: True when they
// are applied, False with a reason when they cannot be (for example the Prometheus Operator's CRDs are
// not installed). It is absent when spec.monitoring asks for nothing, and it never affects Ready.
const ConditionMonitored = "Monitored"

// MonitoringSpec asks for Prometheus Operator objects for the forms, auth and health services. Every
// service also carries prometheus.io/scrape annotations and a port named `metrics` (/metrics), so a
// Prometheus without the operator can scrape them too.
type MonitoringSpec struct {
	// ServiceMonitor creates one monitoring.coreos.com/v1 ServiceMonitor per service.
	// +optional
	ServiceMonitor *ServiceMonitorSpec `json:"serviceMonitor,omitempty"`
}

// ServiceMonitorSpec shapes the ServiceMonitors. They are created only when the cluster serves the
// ServiceMonitor kind (the Prometheus Operator's CRDs are installed); until then the Monitored
// condition says so, the rest of the platform runs as usual, and the operator looks again every few
// minutes.
type ServiceMonitorSpec struct {
	// Enabled creates the ServiceMonitors; turning it off deletes them.
	Enabled bool `json:"enabled"`
	// Interval between scrapes, e.g. 30s. Empty: Prometheus' default.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$`
	Interval string `json:"interval,omitempty"`
	// ScrapeTimeout of each scrape, e.g. 10s; at most the interval. Empty: Prometheus' default.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$`
	ScrapeTimeout string `json:"scrapeTimeout,omitempty"`
	// Labels added to each ServiceMonitor, e.g. the `release` label your Prometheus selects them by.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	Labels map[string]string `json:"labels,omitempty"`
}
