package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// SAMLConnectorSpec is a SAML 2.0 identity provider (spec.auth.connectors[].saml, type saml): Okta,
// Entra ID, ADFS, Shibboleth, Keycloak. We are its service provider; our key and certificate come from
// Secrets the operator mounts as files, never as text in the configuration (docs/auth.md, "SAML 2.0";
// D76). The rules here are the auth service's own.
//
// +kubebuilder:validation:XValidation:rule="!has(self.nameIDFormat) || self.nameIDFormat != 'transient' || (has(self.attributes) && has(self.attributes.subject))",message="a transient NameID changes at every sign-in: name a stable attribute in saml.attributes.subject"
type SAMLConnectorSpec struct {
	// MetadataURL is where the IdP publishes its metadata: https (http only for localhost, 127.0.0.1 and
	// [::1]). It is fetched at the first sign-in and again after metadataRefresh.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^https://([A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?|[[][0-9A-Fa-f:.]+[]])(:[0-9]{1,5})?(/([-A-Za-z0-9._~!$&()*+=:@/?]|%[0-9A-Fa-f]{2})*)?$') || self.matches('^http://(localhost|127[.]0[.]0[.]1|[[]::1[]])(:[0-9]{1,5})?(/([-A-Za-z0-9._~!$&()*+=:@/?]|%[0-9A-Fa-f]{2})*)?$')",message="metadataURL must be an https URL (http only for localhost, 127.0.0.1 and [::1]) without user info or fragment"
	MetadataURL string `json:"metadataURL"`
	// MetadataCertificateRef names the Secret key of the IdP's certificate (PEM) its metadata must be
	// signed with: metadata without an enveloped XML signature by exactly this certificate is refused
	// (D82). The operator mounts it into the auth pods.
	// +optional
	MetadataCertificateRef *SecretKeySelector `json:"metadataCertificateRef,omitempty"`
	// MetadataRefresh is how long fetched metadata is used before it is fetched again (default 24h, at
	// least 1m).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="metadataRefresh must be at least 1m"
	MetadataRefresh *metav1.Duration `json:"metadataRefresh,omitempty"`
	// EntityID is our SP's entity ID (default: our metadata URL, <issuer>/oauth2/saml/<id>/metadata).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9+.-]*:[^\s]+$`
	EntityID string `json:"entityID,omitempty"`
	// KeyRef and CertificateRef name the Secret keys of our SP's signing key and certificate (PEM; a
	// kubernetes.io/tls Secret's tls.key and tls.crt). The operator mounts them into the auth pods.
	KeyRef         SecretKeySelector `json:"keyRef"`
	CertificateRef SecretKeySelector `json:"certificateRef"`
	// SignAuthnRequests signs every AuthnRequest (else only when the IdP's metadata asks for it).
	// +optional
	SignAuthnRequests bool `json:"signAuthnRequests,omitempty"`
	// SingleLogout: a sign-out here goes on at the IdP (our signed LogoutRequest), and the IdP's own
	// LogoutRequests end our sessions (D89). Unset: on when the IdP's metadata names an HTTP-Redirect
	// SingleLogoutService; false: never.
	// +optional
	SingleLogout *bool `json:"singleLogout,omitempty"`
	// NameIDFormat asked for: persistent (the default), emailAddress, unspecified or transient (only with
	// attributes.subject).
	// +optional
	// +kubebuilder:validation:Enum=persistent;emailAddress;unspecified;transient
	NameIDFormat string `json:"nameIDFormat,omitempty"`
	// Attributes names the assertion's attributes (by Name or FriendlyName) that carry the person's
	// details.
	// +optional
	Attributes *SAMLAttributes `json:"attributes,omitempty"`
	// ClockSkew is how far the IdP's clock may be from ours (default 30s, at most 3m).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('3m')",message="clockSkew must be between 0s and 3m"
	ClockSkew *metav1.Duration `json:"clockSkew,omitempty"`
}

// SAMLAttributes names the attributes a SAML connector maps (defaults: subject the NameID, email,
// name; groups: none, not read).
type SAMLAttributes struct {
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Subject string `json:"subject,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Email string `json:"email,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Groups string `json:"groups,omitempty"`
}
