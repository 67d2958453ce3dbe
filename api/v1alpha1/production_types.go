package v1alpha1

import (
	networkingv1 "k8s.io/api/networking/v1"
)

// AutoscalingSpec gives a service a HorizontalPodAutoscaler instead of fixed replicas. The operator
// renders the autoscaler and never writes the Deployment's replicas while it exists: the autoscaler
// owns them.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas <= self.maxReplicas",message="autoscaling.minReplicas must not exceed autoscaling.maxReplicas"
type AutoscalingSpec struct {
	// MinReplicas the autoscaler keeps; default 2. With two or more the service gets a
	// PodDisruptionBudget.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// MaxReplicas the autoscaler may scale to.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	MaxReplicas int32 `json:"maxReplicas"`
	// TargetCPUUtilizationPercentage is the average CPU use, in percent of the pods' CPU request, the
	// autoscaler aims at; default 75. The pods need a CPU request (the default resources have one).
	// +optional
	// +kubebuilder:default=75
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	TargetCPUUtilizationPercentage *int32 `json:"targetCPUUtilizationPercentage,omitempty"`
}

// SpreadPolicy says how hard the scheduler must spread a service's pods over one topology domain.
// +kubebuilder:validation:Enum=ScheduleAnyway;DoNotSchedule;Off
type SpreadPolicy string

// Spread policies.
const (
	// SpreadScheduleAnyway prefers an even spread but schedules a pod anyway when it cannot have one.
	SpreadScheduleAnyway SpreadPolicy = "ScheduleAnyway"
	// SpreadDoNotSchedule leaves a pod pending rather than skew the spread beyond maxSkew.
	SpreadDoNotSchedule SpreadPolicy = "DoNotSchedule"
	// SpreadOff adds no constraint for the domain.
	SpreadOff SpreadPolicy = "Off"
)

// TopologySpreadSpec spreads every service's pods across zones (topology.kubernetes.io/zone) and nodes
// (kubernetes.io/hostname).
type TopologySpreadSpec struct {
	// Zones: how to spread across zones; default ScheduleAnyway.
	// +optional
	// +kubebuilder:default=ScheduleAnyway
	Zones SpreadPolicy `json:"zones,omitempty"`
	// Nodes: how to spread across nodes; default ScheduleAnyway.
	// +optional
	// +kubebuilder:default=ScheduleAnyway
	Nodes SpreadPolicy `json:"nodes,omitempty"`
	// MaxSkew is the largest allowed difference in pod count between two domains; default 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	MaxSkew *int32 `json:"maxSkew,omitempty"`
}

// NetworkPolicySpec asks for NetworkPolicies around the forms, auth and health pods: ingress only from
// ingressFrom (the ingress controller's or Gateway's pods), metricsFrom (Prometheus) and the health
// service; egress only to Redis, DNS and the delivery targets. It needs a network plugin that enforces
// NetworkPolicies; set enabled false on a cluster without one, or to bring your own policies.
//
// +kubebuilder:validation:XValidation:rule="(has(self.enabled) && !self.enabled) || (has(self.ingressFrom) && size(self.ingressFrom) > 0)",message="networkPolicy.ingressFrom must select the ingress controller's (or Gateway's) pods, or nothing could reach the public routes; set networkPolicy.enabled false to have no policies"
type NetworkPolicySpec struct {
	// Enabled renders the policies; false deletes them. Default true.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`
	// IngressFrom selects who may reach the services' HTTP port: the ingress controller's or Gateway
	// implementation's pods, e.g. `{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ingress-nginx}}}`.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	IngressFrom []networkingv1.NetworkPolicyPeer `json:"ingressFrom,omitempty"`
	// MetricsFrom selects who may scrape /metrics (Prometheus), on the same port.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	MetricsFrom []networkingv1.NetworkPolicyPeer `json:"metricsFrom,omitempty"`
	// DeliveryEgress replaces the forms service's egress rule for mail and webhook delivery. Empty:
	// any address on the SMTP relay's port and, for a webhook, ports 443 and 80 (a host name cannot
	// be selected by a NetworkPolicy). Name the relay's and the webhook's addresses here
	// (`to: [{ipBlock: {cidr: …}}]`, `ports`) to narrow it. Auth, which sends its own mail through the
	// same relay, gets the same rules (or the relay's port) when forms.delivery.smtp is set.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	DeliveryEgress []networkingv1.NetworkPolicyEgressRule `json:"deliveryEgress,omitempty"`
	// RedisEgress replaces the egress rule towards an external Redis (spec.redis.addresses). Empty: any
	// address on the ports of spec.redis.addresses (and 6379 for the masters behind Sentinels). The
	// managed Redis is always selected by its pods' labels.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	RedisEgress []networkingv1.NetworkPolicyEgressRule `json:"redisEgress,omitempty"`
}
