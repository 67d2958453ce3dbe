package v1alpha1

// GatewaySpec routes the platform through the Gateway API instead of (or besides) an Ingress: the
// operator renders gateway.networking.k8s.io/v1 HTTPRoutes with the same routing as the Ingress,
// attached to the Gateway(s) named here. The Gateway itself belongs to the cluster's platform team.
type GatewaySpec struct {
	// ParentRefs name the Gateways (and optionally their listeners) the HTTPRoutes attach to.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	ParentRefs []GatewayParentRef `json:"parentRefs"`
	// Host serves /oauth2, /.well-known and /health (and the forms, unless formsHost is set).
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$`
	Host string `json:"host"`
	// FormsHost serves /contact and /waitlist when they live on a host of their own (a second HTTPRoute,
	// <name>-forms).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$`
	FormsHost string `json:"formsHost,omitempty"`
}

// GatewayParentRef names one Gateway.
type GatewayParentRef struct {
	// Name of the Gateway.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Namespace of the Gateway; default the FormsService's. The Gateway's listener must allow routes
	// from this namespace (allowedRoutes).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// SectionName is the Gateway's listener to attach to; default every listener that accepts the route.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	SectionName string `json:"sectionName,omitempty"`
}
