package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The kstatus conditions (sigs.k8s.io/cli-utils/pkg/kstatus), which Flux, Argo CD's kstatus health,
// `kubectl wait` and Helm read without knowing this resource. They are "abnormal-true": present and False
// while all is well.
const (
	// ConditionReconciling is True while the operator is still bringing the platform to the current
	// spec: a rollout under way, or an API error it retries. Ready may be True at the same time (a
	// rolling update keeps every replica available); GitOps tools wait for Reconciling to turn False.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when the platform cannot reach the current spec without a person: a
	// missing or invalid Secret, a configuration the services refuse, an object the API server or an
	// admission policy refused, a rollout past its deadline, a name taken by an object the operator does
	// not own. Its reason is Degraded's.
	ConditionStalled = "Stalled"
)

// Route kinds in status.routes.
const (
	RouteKindIngress   = "Ingress"
	RouteKindHTTPRoute = "HTTPRoute"
)

// RouteStatus says whether what routes the public paths to the platform took them: the ingress
// controller for the Ingress, every parent Gateway for an HTTPRoute.
type RouteStatus struct {
	// Kind is Ingress or HTTPRoute.
	Kind string `json:"kind"`
	// Name of the Ingress or HTTPRoute.
	Name string `json:"name"`
	// Accepted is True when the ingress controller published an address for the Ingress, or every parent
	// Gateway accepted the HTTPRoute and resolved its backends; False when a Gateway refused it (the
	// resource is then Degraded, RouteNotAccepted); Unknown until one has answered (some ingress
	// controllers never publish an address).
	Accepted metav1.ConditionStatus `json:"accepted"`
	// Reason is a CamelCase word: Admitted, AddressPending, Accepted, NotAccepted, Pending.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message says what the controller or the Gateways answered.
	// +optional
	Message string `json:"message,omitempty"`
	// Addresses the ingress controller published for the Ingress (IPs or host names).
	// +optional
	// +listType=atomic
	Addresses []string `json:"addresses,omitempty"`
}
