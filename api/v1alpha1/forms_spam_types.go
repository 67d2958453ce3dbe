package v1alpha1

// FormSpamSpec is what the forms do with a submission that scores as spam (docs/forms.md, "Spam"):
// spec.forms.spam for /contact and every declared form, a declared form's own spam in place of it for
// that form. The service's configuration key is forms.spam; every rule here is one the service applies
// at load too (TestCRD_SpamAgreesWithTheService).
type FormSpamSpec struct {
	// Action is folder (the default: kept in the form's spam folder, not delivered, until released or
	// deleted), refuse (not stored at all) or off (no verdict: everything is delivered). The sender's
	// answer is the same for all three.
	// +optional
	// +kubebuilder:validation:Enum=folder;refuse;off
	Action string `json:"action,omitempty"`
	// Threshold is the score from which a submission is spam, a decimal number from 0 to 100 ("4",
	// "5.5"); empty or 0: the scorer's default, 4. A string, as a CRD carries no floating-point numbers.
	// +optional
	// +kubebuilder:validation:MaxLength=10
	// +kubebuilder:validation:Pattern=`^(100([.]0+)?|[0-9]{1,2}([.][0-9]{1,6})?)$`
	Threshold string `json:"threshold,omitempty"`
	// Languages the form is written for (ISO 639-1): text mostly in a script none of them uses adds to
	// the score. Empty: no such check.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=28
	Languages []SpamLanguage `json:"languages,omitempty"`
	// BlockedAddresses make a sender spam on their own (any case).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=10000
	BlockedAddresses []MailAddress `json:"blockedAddresses,omitempty"`
	// BlockedDomains make a sender spam on their own: the domain of the sender's address or of a link
	// in the text, subdomains included (example.com: no scheme, no path).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=10000
	BlockedDomains []SpamDomain `json:"blockedDomains,omitempty"`
	// BlockedNetworks make a sender spam on their own: client IP ranges in CIDR notation
	// (203.0.113.0/24, 2001:db8::/32). At most 4,000 here (the service's file takes 10,000): the API
	// server's cost budget for checking each range of up to 100 declared forms allows no more.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=4000
	BlockedNetworks []SpamNetwork `json:"blockedNetworks,omitempty"`
}

// SpamLanguage is a language whose script the spam check knows (ISO 639-1).
// +kubebuilder:validation:Enum=ar;bg;cs;da;de;el;en;es;fi;fr;he;hi;hu;it;ja;ko;nb;nl;pl;pt;ro;ru;sr;sv;th;tr;uk;zh
type SpamLanguage string

// SpamDomain is a domain name such as example.com: labels of letters, digits and hyphens, the last
// starting with a letter; no scheme, no path, no trailing dot.
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:Pattern=`^([A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?[.])+[A-Za-z][-A-Za-z0-9]{0,62}$`
type SpamDomain string

// SpamNetwork is an IP range in CIDR notation.
// +kubebuilder:validation:MaxLength=49
// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="want a range in CIDR notation like 203.0.113.0/24 or 2001:db8::/32"
type SpamNetwork string
