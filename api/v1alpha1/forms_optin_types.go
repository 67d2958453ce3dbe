package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// DoubleOptInSpec turns on confirmed waitlist sign-ups (docs/forms.md, "Confirmed sign-ups"): an entry
// is kept as pending and a mail with a confirmation link goes to the address through the relay of
// spec.forms.delivery.smtp; an entry left unconfirmed is erased. The links point to the forms' host
// (ingress or gateway formsHost, else publicURL).
type DoubleOptInSpec struct {
	// ConfirmWithin is how long the link works and a pending entry waits for it. Default 48h.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1h') && duration(self) <= duration('720h')",message="confirmWithin must be between 1h and 720h (30 days)"
	ConfirmWithin *metav1.Duration `json:"confirmWithin,omitempty"`
	// ResendAfter: a second sign-up of a pending address mails the link again at most once in this
	// time. Default 10m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="resendAfter must be between 1m and 24h"
	ResendAfter *metav1.Duration `json:"resendAfter,omitempty"`
}

// FormsSite is what the forms do for one allowed origin beyond the JSON contract (docs/forms.md, "Plain
// HTML forms", "Bot checks").
type FormsSite struct {
	// Origin is one of spec.allowedOrigins, spelled exactly as there.
	Origin Origin `json:"origin"`
	// Name is the site's or product's name, shown on the forms' own pages.
	// +optional
	// +kubebuilder:validation:MaxLength=100
	Name string `json:"name,omitempty"`
	// ThanksURL is where a plain form post goes (303) once it is taken: a path on the posting origin
	// ("/thanks") or an absolute http(s) URL. Default the forms' own thank-you page.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	ThanksURL string `json:"thanksURL,omitempty"`
	// ErrorURL, when set, receives a form post whose fields failed (303, error_<field>=<code> in the
	// query) instead of the forms' own error page.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	ErrorURL string `json:"errorURL,omitempty"`
	// ConsentVersion names the consent text the site's waitlist form shows; it is kept with every
	// sign-up from the site (GDPR Art. 7(1)).
	// +optional
	// +kubebuilder:validation:MaxLength=200
	ConsentVersion string `json:"consentVersion,omitempty"`
	// BotCheck makes every submission from the origin carry a CAPTCHA token, verified before storing.
	// +optional
	BotCheck *BotCheckSpec `json:"botCheck,omitempty"`
}

// BotCheckSpec is a site's or a declared form's CAPTCHA provider.
//
// +kubebuilder:validation:XValidation:rule="!has(self.action) || size(self.action) == 0 || self.provider != 'hcaptcha'",message="action is for turnstile and recaptcha: hCaptcha reports no action",fieldPath=".action"
type BotCheckSpec struct {
	// Provider is turnstile (Cloudflare Turnstile), hcaptcha or recaptcha (v2 or v3).
	// +kubebuilder:validation:Enum=turnstile;hcaptcha;recaptcha
	Provider string `json:"provider"`
	// SecretRef names the Secret key holding the provider's secret key for the site; it is mounted into
	// the forms pods, never written to the ConfigMap.
	SecretRef SecretKeySelector `json:"secretRef"`
	// VerifyURL is the provider's siteverify endpoint; default the provider's own. An air-gapped
	// installation points it at its own.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^https?://[^/?#@ ]+([/?][^ ]*)?$')",message="verifyURL must be an http or https URL"
	VerifyURL string `json:"verifyURL,omitempty"`
	// MinScore is the lowest reCAPTCHA v3 score taken, a decimal from 0 to 1 ("0.7"). Default 0.5.
	// +optional
	// +kubebuilder:validation:Pattern=`^(0(\.[0-9]{1,3})?|1(\.0{1,3})?)$`
	MinScore string `json:"minScore,omitempty"`
	// Action, when set, is the only action taken (turnstile and recaptcha: the name the page gives the
	// check, reCAPTCHA v3's grecaptcha.execute action or Turnstile's data-action), so that a token made
	// for another page of the site does not pass; default any. Up to 100 of letters, digits, _, / and -
	// (the providers' own alphabet: stricter than the service, which takes any text without surrounding
	// spaces).
	// +optional
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_/-]+$`
	Action string `json:"action,omitempty"`
}
