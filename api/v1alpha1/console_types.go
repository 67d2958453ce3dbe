package v1alpha1

// ConsoleSpec serves the admin console (docs/console.md, D65): a web app at <issuer>/console/ on the auth
// service, signed in through the hosted page, that works through the admin API as the person signed in.
// It has no host name or path of its own: it is a path of the issuer, where its redirect URI, its
// tokens' audience and its same-origin calls to the admin API are (D65, "Operator"). Who may use it is
// spec.auth.adminGroup, the admin API's group.
type ConsoleSpec struct {
	// Enabled serves the console and registers its client formsservice-console; default false (off,
	// <issuer>/console/ answers 404).
	// +optional
	Enabled bool `json:"enabled,omitempty"`
}
