package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// AuditSpec says where the provider's audit trail goes besides the log and the trail kept in Redis.
type AuditSpec struct {
	// Webhook sends every stored audit event to a receiver such as a SIEM, in batches, as signed
	// Standard Webhooks calls, at least once (docs/auth.md, "Audit sink"). The service's key is
	// auth.audit.webhook.
	// +optional
	Webhook *AuditWebhookSpec `json:"webhook,omitempty"`
}

// AuditWebhookSpec is the audit sink's receiver.
type AuditWebhookSpec struct {
	// URL is the receiver: https, or http to localhost and loopback addresses only (the events name
	// users, clients and addresses); no user information, no fragment.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^https?://[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:[0-9]{1,5})?([/?]([^%#[:cntrl:][:space:]]|%[0-9A-Fa-f]{2})*)?$')",message="url must be an http(s) URL with a host name, without user information, fragment or spaces"
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://') || self.matches('^http://(localhost|127[.][0-9]{1,3}[.][0-9]{1,3}[.][0-9]{1,3})([:/?].*)?$')",message="url must be https (http only to localhost and loopback addresses)"
	URL string `json:"url"`
	// SigningSecretRef is the Secret key holding the Standard Webhooks signing secret (whsec_ and the
	// base64 of 24 to 64 random bytes). Required: the receiver must tell our events from forged ones.
	SigningSecretRef SecretKeySelector `json:"signingSecretRef"`
	// PreviousSigningSecretRef, during a rotation, is the secret SigningSecretRef replaces: calls carry
	// both signatures until it is removed.
	// +optional
	PreviousSigningSecretRef *SecretKeySelector `json:"previousSigningSecretRef,omitempty"`
	// BatchSize is the most events one call carries; default 100.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	BatchSize int32 `json:"batchSize,omitempty"`
	// Timeout bounds one call; default 10s.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('5m')",message="timeout must be between 0s (exclusive) and 5m"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}
