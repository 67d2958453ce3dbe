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

// SigningKeyStatus says where the signing key's rotation stands. Key IDs are the RFC 7638 thumbprints the
// JWKS publishes as kid.
type SigningKeyStatus struct {
	// Phase is Stable, Publishing, Published, Promoting or Retiring; External for the keys of
	// spec.auth.signingKeySecretRef.
	Phase string `json:"phase"`
	// CurrentKeyID signs every token.
	// +optional
	CurrentKeyID string `json:"currentKeyID,omitempty"`
	// CurrentSince is when the current key was created or promoted.
	// +optional
	CurrentSince *metav1.Time `json:"currentSince,omitempty"`
	// NextKeyID is published and verifies, but signs nothing yet.
	// +optional
	NextKeyID string `json:"nextKeyID,omitempty"`
	// NextPublishedAt is when the next key was written to the Secret.
	// +optional
	NextPublishedAt *metav1.Time `json:"nextPublishedAt,omitempty"`
	// NextServedAt is when the operator saw every auth pod serve the next key.
	// +optional
	NextServedAt *metav1.Time `json:"nextServedAt,omitempty"`
	// PromoteAfter is the earliest time the next key becomes current.
	// +optional
	PromoteAfter *metav1.Time `json:"promoteAfter,omitempty"`
	// PreviousKeyID verifies tokens signed before the last promotion; it signs nothing.
	// +optional
	PreviousKeyID string `json:"previousKeyID,omitempty"`
	// PreviousRetiresAt is when the previous key is removed: the longest token lifetime after every auth
	// pod stopped signing with it.
	// +optional
	PreviousRetiresAt *metav1.Time `json:"previousRetiresAt,omitempty"`
	// NextRotationAt is when signingKeyRotation.every starts the next rotation.
	// +optional
	NextRotationAt *metav1.Time `json:"nextRotationAt,omitempty"`
}
