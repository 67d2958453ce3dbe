package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The declared forms of spec.forms.declared mirror the forms service's forms.declared
// (services/platform/config/forms_declared.go, which is the source of truth). The rules below refuse at
// admission what that configuration's validation would refuse at load, so that a declaration the API
// server takes never leaves the operator Degraded (D57; controllers/declared_envtest_test.go runs both
// over one table). Where a rule is stricter than the service (a bound the CEL cost estimate needs, an
// address or URL pattern narrower than Go's parsers), the field's comment says so.

// DeclaredForm is a form a team declares as data, posted to /f/<id> (docs/forms.md, "Your own forms").
//
// +kubebuilder:validation:XValidation:rule="!has(self.unique) || size(self.unique) == 0 || self.fields.exists(f, f.name == self.unique)",message="unique must name a field of the form",fieldPath=".unique"
// +kubebuilder:validation:XValidation:rule="!has(self.unique) || size(self.unique) == 0 || self.fields.exists(f, f.name == self.unique && f.type in ['text', 'email', 'phone', 'url'])",message="unique must name a text, email, phone or url field",fieldPath=".unique"
// +kubebuilder:validation:XValidation:rule="!has(self.unique) || size(self.unique) == 0 || !self.fields.exists(f, f.name == self.unique && !(has(f.required) && f.required))",message="unique must name a required field",fieldPath=".unique"
// +kubebuilder:validation:XValidation:rule="!has(self.autoresponder) || (has(self.autoresponder.field) && size(self.autoresponder.field) > 0) || self.fields.exists(f, f.type == 'email')",message="the form has no email field for the autoresponder to answer to",fieldPath=".autoresponder"
// +kubebuilder:validation:XValidation:rule="!has(self.autoresponder) || !has(self.autoresponder.field) || size(self.autoresponder.field) == 0 || self.fields.exists(f, f.name == self.autoresponder.field && f.type == 'email')",message="autoresponder.field must name an email field of the form",fieldPath=".autoresponder.field"
// +kubebuilder:validation:XValidation:rule="!has(self.maxFileBytes) || self.maxFileBytes == 0 || self.fields.exists(f, f.type == 'file')",message="maxFileBytes is for a form with a file field",fieldPath=".maxFileBytes"
// +kubebuilder:validation:XValidation:rule="!has(self.doubleOptIn) || (has(self.unique) && self.fields.exists(f, f.name == self.unique && f.type == 'email'))",message="doubleOptIn needs unique naming an email field: the address the confirmation mail goes to",fieldPath=".doubleOptIn"
// +kubebuilder:validation:XValidation:rule="!has(self.doubleOptIn) || !self.fields.exists(f, f.type == 'file')",message="doubleOptIn is not for a form with file fields (the files of a submission never confirmed would outlive it)",fieldPath=".doubleOptIn"
type DeclaredForm struct {
	// ID names the form in its path (/f/<id>), its keys, metrics and export: 1 to 40 of a-z, 0-9 and
	// -, starting with a letter or digit. contact and waitlist are the built-in forms'.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9-]{0,39}$`
	// +kubebuilder:validation:XValidation:rule="self != 'contact' && self != 'waitlist'",message="contact and waitlist are the built-in forms (/contact, /waitlist): choose another id"
	ID string `json:"id"`
	// Title names the form to people: the subject of its notification mail and its pages. At most 200
	// characters (a bound of the CRD; the service sets none).
	// +optional
	// +kubebuilder:validation:MaxLength=200
	Title string `json:"title,omitempty"`
	// Fields are the form's fields (1 to 50, names unique), in the order its notifications and export
	// show them.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=50
	Fields []FormField `json:"fields"`
	// AdditionalFields is what becomes of a field the form does not declare: refuse (the default: 400
	// naming it) or keep (stored as text, bounded, shown in the export).
	// +optional
	// +kubebuilder:validation:Enum=refuse;keep
	AdditionalFields string `json:"additionalFields,omitempty"`
	// Origins narrow the sites that may post this form to some of spec.allowedOrigins (default: all of
	// them), spelled exactly as there (spec's rule checks each is one of them, whose own rules check the
	// origin). At most 20 (a bound of the CRD, for its cost estimate).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=253
	Origins []string `json:"origins,omitempty"`
	// Unique names a required text, email, phone or url field whose value a submission may carry once:
	// a second one is answered 200 {"status":"duplicate"}, as the waitlist answers an address it has.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Unique string `json:"unique,omitempty"`
	// Notify says who hears of each submission. Without it, submissions are stored and exported only.
	// +optional
	Notify *FormNotifySpec `json:"notify,omitempty"`
	// Autoresponder answers the sender by mail through the forms' relay (spec.forms.delivery.smtp).
	// +optional
	Autoresponder *AutoresponderSpec `json:"autoresponder,omitempty"`
	// ThanksURL and ErrorURL are the form's own thank-you and error pages for plain HTML posts: a path
	// on the posting origin (/thanks) or an absolute http(s) URL, without user information or a
	// fragment. At most 2048 characters, and a host name of letters, digits, - and . (the CRD's bounds).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^/(([^/%#[:cntrl:][:space:]\\\\x5c]|%[0-9A-Fa-f]{2})([^%#[:cntrl:][:space:]]|%[0-9A-Fa-f]{2})*)?$') || self.matches('^https?://[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:[0-9]{1,5})?([/?]([^%#[:cntrl:][:space:]]|%[0-9A-Fa-f]{2})*)?$')",message="thanksURL must be a path on the posting site (/thanks) or an http(s) URL, without user information, fragment or spaces"
	ThanksURL string `json:"thanksURL,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^/(([^/%#[:cntrl:][:space:]\\\\x5c]|%[0-9A-Fa-f]{2})([^%#[:cntrl:][:space:]]|%[0-9A-Fa-f]{2})*)?$') || self.matches('^https?://[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:[0-9]{1,5})?([/?]([^%#[:cntrl:][:space:]]|%[0-9A-Fa-f]{2})*)?$')",message="errorURL must be a path on the posting site (/oops) or an http(s) URL, without user information, fragment or spaces"
	ErrorURL string `json:"errorURL,omitempty"`
	// Durability is what this form's 201 survives (spec.forms.dataPolicy.durability's levels); default
	// the forms' own.
	// +optional
	// +kubebuilder:validation:Enum=process;machine;primary;replicated;unchecked
	Durability string `json:"durability,omitempty"`
	// Retention erases this form's submissions (and dead letters) older than this, never one still
	// waiting for delivery. Unset keeps them until `formsservice forget` erases them.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="retention must not be negative"
	Retention *metav1.Duration `json:"retention,omitempty"`
	// Spam replaces spec.forms.spam, whole, for this form (forms_spam_types.go).
	// +optional
	Spam *FormSpamSpec `json:"spam,omitempty"`
	// MaxFileBytes bounds all the files of one submission together, in bytes (default 20 MiB, at most
	// 100 MiB); only for a form with a file field.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=104857600
	MaxFileBytes int64 `json:"maxFileBytes,omitempty"`
	// BotCheck is the form's own CAPTCHA check: every submission of the form, from any of its origins,
	// carries a token verified with the provider before anything is stored. It replaces the posting
	// site's bot check (spec.forms.sites[].botCheck) for this form; without it the site's applies.
	// +optional
	BotCheck *BotCheckSpec `json:"botCheck,omitempty"`
	// DoubleOptIn keeps each submission pending until the address in the form's unique field (an email
	// field) confirms it from a mail, as spec.forms.doubleOptIn does for the waitlist: only a confirmed
	// submission is stored, delivered and exported; one left unconfirmed is erased. The links point to
	// the forms' host (ingress or gateway formsHost, else publicURL), which must be https.
	// +optional
	DoubleOptIn *DoubleOptInSpec `json:"doubleOptIn,omitempty"`
}

// FormFieldType is a declared field's kind (docs/forms.md, "Your own forms").
// +kubebuilder:validation:Enum=text;longtext;email;url;phone;number;date;oneof;manyof;checkbox;consent;file
type FormFieldType string

// FormField is one field of a declared form.
//
// +kubebuilder:validation:XValidation:rule="!(self.type in ['oneof', 'manyof']) || (has(self.choices) && size(self.choices) > 0)",message="a oneof or manyof field needs choices (1 to 100)",fieldPath=".choices"
// +kubebuilder:validation:XValidation:rule="self.type in ['oneof', 'manyof'] || !has(self.choices) || size(self.choices) == 0",message="only oneof and manyof fields have choices",fieldPath=".choices"
// +kubebuilder:validation:XValidation:rule="self.type == 'manyof' || !has(self.maxChoices) || self.maxChoices == 0",message="maxChoices is for manyof fields",fieldPath=".maxChoices"
// +kubebuilder:validation:XValidation:rule="self.type in ['text', 'longtext'] || ((!has(self.minLength) || self.minLength == 0) && (!has(self.maxLength) || self.maxLength == 0))",message="minLength and maxLength are for text and longtext fields"
// +kubebuilder:validation:XValidation:rule="!has(self.minLength) || !has(self.maxLength) || self.maxLength == 0 || self.minLength <= self.maxLength",message="minLength must not exceed maxLength",fieldPath=".minLength"
// +kubebuilder:validation:XValidation:rule="self.type in ['number', 'date'] || ((!has(self.min) || size(self.min) == 0) && (!has(self.max) || size(self.max) == 0))",message="min and max are for number and date fields"
// +kubebuilder:validation:XValidation:rule="self.type != 'number' || ((!has(self.min) || size(self.min) == 0 || (self.min.matches('^-?(0|[1-9][0-9]*)([.][0-9]+)?([eE][-+]?[0-9]+)?$') && double(self.min) == double(self.min))) && (!has(self.max) || size(self.max) == 0 || (self.max.matches('^-?(0|[1-9][0-9]*)([.][0-9]+)?([eE][-+]?[0-9]+)?$') && double(self.max) == double(self.max))))",message="min and max of a number field must be finite decimal numbers (12, -0.5, 1e3)"
// +kubebuilder:validation:XValidation:rule="self.type != 'number' || !has(self.min) || !has(self.max) || !self.min.matches('^-?(0|[1-9][0-9]*)([.][0-9]+)?([eE][-+]?[0-9]+)?$') || !self.max.matches('^-?(0|[1-9][0-9]*)([.][0-9]+)?([eE][-+]?[0-9]+)?$') || double(self.min) <= double(self.max)",message="min must not exceed max",fieldPath=".min"
// +kubebuilder:validation:XValidation:rule="self.type != 'date' || ((!has(self.min) || size(self.min) == 0 || (self.min.matches('^[0-9]{4}-[0-9]{2}-[0-9]{2}$') && timestamp(self.min + 'T00:00:00Z') == timestamp(self.min + 'T00:00:00Z'))) && (!has(self.max) || size(self.max) == 0 || (self.max.matches('^[0-9]{4}-[0-9]{2}-[0-9]{2}$') && timestamp(self.max + 'T00:00:00Z') == timestamp(self.max + 'T00:00:00Z'))))",message="min and max of a date field must be dates, YYYY-MM-DD"
// +kubebuilder:validation:XValidation:rule="self.type != 'date' || !has(self.min) || !has(self.max) || size(self.min) == 0 || size(self.max) == 0 || self.min <= self.max",message="min must not be after max",fieldPath=".min"
// +kubebuilder:validation:XValidation:rule="self.type == 'file' || ((!has(self.maxSize) || self.maxSize == 0) && (!has(self.maxFiles) || self.maxFiles == 0) && (!has(self.accept) || size(self.accept) == 0))",message="maxSize, maxFiles and accept are for file fields"
type FormField struct {
	// Name is the field's name in the JSON body or the form post: [a-z][a-z0-9_]*, at most 64 (a leading
	// _ is the service's own).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]{0,63}$`
	Name string `json:"name"`
	// Label names the field to people (the error page, the notification); default the name.
	// +optional
	// +kubebuilder:validation:MaxLength=200
	Label string `json:"label,omitempty"`
	// Type is text, longtext, email, url, phone, number, date, oneof, manyof, checkbox, consent or file.
	Type FormFieldType `json:"type"`
	// Required: the field must be present and not empty (a consent field always is).
	// +optional
	Required bool `json:"required,omitempty"`
	// MinLength and MaxLength bound a text or longtext field's length in characters; maxLength defaults
	// to 200 for text and 4000 for longtext, and is at most 4000.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinLength int32 `json:"minLength,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4000
	MaxLength int32 `json:"maxLength,omitempty"`
	// Min and Max bound a number field (a decimal: "0", "-2.5", "1e6") or a date field (YYYY-MM-DD).
	// +optional
	// +kubebuilder:validation:MaxLength=40
	Min string `json:"min,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=40
	Max string `json:"max,omitempty"`
	// Choices are the values a oneof or manyof field takes: 1 to 100, each 1 to 200 characters, listed
	// once. The service counts bytes: a choice in a script of several bytes a character (Cyrillic,
	// Chinese) may be up to 200 bytes, which the CRD cannot count for every choice of 100 forms within
	// its CEL cost budget; the service's refusal names such a choice (Degraded).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	Choices []FormChoice `json:"choices,omitempty"`
	// MaxChoices bounds how many choices a manyof field may carry (default: all of them).
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxChoices int32 `json:"maxChoices,omitempty"`
	// MaxSize bounds each file of a file field, in bytes (default 10 MiB, at most 100 MiB).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=104857600
	MaxSize int64 `json:"maxSize,omitempty"`
	// MaxFiles is how many files a file field takes (default 1, at most 20).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=20
	MaxFiles int32 `json:"maxFiles,omitempty"`
	// Accept lists the media types a file field takes, as the file's bytes show them (sniffed, never
	// its name): application/pdf, or a family such as image/*. Empty: any.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=20
	Accept []FileType `json:"accept,omitempty"`
}

// FileType is a media type (type/subtype in lower case, no parameters) or a family (type/*).
//
// +kubebuilder:validation:MaxLength=100
// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9!#$&^_.+-]*/([a-z0-9][a-z0-9!#$&^_.+-]*|[*])$`
type FileType string

// FormFilesSpec is the S3-compatible bucket of the declared forms' files, reached as the backups reach
// theirs: the forms pods get AWS_ENDPOINT_URL_S3, AWS_REGION and the credentials Secret's keys
// (envFrom). The download links in mails and webhooks are signed with the key in LinkKeySecretRef.
type FormFilesSpec struct {
	// S3 is the bucket (it must exist) and its credentials.
	// +kubebuilder:validation:XValidation:rule="!has(self.caBundleRef) && !has(self.serverSideEncryption) && !has(self.webIdentity)",message="caBundleRef, serverSideEncryption and webIdentity apply to backups and restores only"
	S3 S3Location `json:"s3"`
	// Prefix starts every file's key (default forms/): folders ending in /.
	// +optional
	// +kubebuilder:validation:MaxLength=200
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9_.-]+/)*$`
	Prefix string `json:"prefix,omitempty"`
	// LinkKeySecretRef names the Secret key holding the key (at least 32 bytes) that signs download links.
	LinkKeySecretRef SecretKeySelector `json:"linkKeySecretRef"`
	// LinkTTL is how long a download link works (default 168h).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="linkTTL must be positive"
	LinkTTL *metav1.Duration `json:"linkTTL,omitempty"`
}

// FormChoice is one value of a oneof or manyof field.
//
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=200
type FormChoice string

// MailAddress is a bare e-mail address (team@example.com): no display name, no angle brackets. The CRD's
// pattern is narrower than the service's parser (no quoted local part, no ' or `, no domain literal).
//
// +kubebuilder:validation:MinLength=3
// +kubebuilder:validation:MaxLength=254
// +kubebuilder:validation:Pattern=`^([-A-Za-z0-9!#$%&*+/=?^_{|}~]|[^[:ascii:]])+([.]([-A-Za-z0-9!#$%&*+/=?^_{|}~]|[^[:ascii:]])+)*@([-A-Za-z0-9!#$%&*+/=?^_{|}~]|[^[:ascii:]])+([.]([-A-Za-z0-9!#$%&*+/=?^_{|}~]|[^[:ascii:]])+)*$`
type MailAddress string

// FormNotifySpec is where a declared form's submissions are delivered: at least one mail recipient or
// webhook.
//
// +kubebuilder:validation:XValidation:rule="(has(self.mailTo) ? size(self.mailTo) : 0) + (has(self.webhooks) ? size(self.webhooks) : 0) > 0",message="notify needs mailTo addresses or webhooks (or leave notify out)"
type FormNotifySpec struct {
	// MailTo get each submission as a mail through the forms' relay (spec.forms.delivery.smtp), with the
	// sender's address as Reply-To when the form has an email field. At most 20.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	MailTo []MailAddress `json:"mailTo,omitempty"`
	// Webhooks each get each submission (Standard Webhooks, signed with their own secret). At most 10.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Webhooks []FormWebhook `json:"webhooks,omitempty"`
}

// FormWebhook is one webhook of a declared form. Its address is a credential (whoever has it can post
// to the channel): name it with urlSecretRef, as spec.forms.delivery.webhook does; the operator mounts
// the key into the forms pods, and the address never reaches the FormsService or the ConfigMap.
//
// +kubebuilder:validation:XValidation:rule="has(self.urlSecretRef) != has(self.url)",message="set urlSecretRef (a Secret key holding the webhook URL) or url, one of them"
// +kubebuilder:validation:XValidation:rule="!has(self.previousSigningSecretRef) || has(self.signingSecretRef)",message="previousSigningSecretRef is set only during a rotation, beside signingSecretRef (the new secret)"
type FormWebhook struct {
	// URLSecretRef names the Secret key holding the webhook URL (http or https; surrounding white space
	// is ignored). A changed Secret rolls the forms pods.
	// +optional
	URLSecretRef *SecretKeySelector `json:"urlSecretRef,omitempty"`
	// URL receives the POST, in plain text in the FormsService and the ConfigMap: prefer urlSecretRef.
	// At most 512 characters (a bound of the CRD's cost estimate; a longer address goes in the Secret).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^https?://[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:[0-9]{1,5})?([/?#]([^%[:cntrl:][:space:]]|%[0-9A-Fa-f]{2})*)?$')",message="webhook url must be an http or https URL with a host name, without user information or spaces"
	URL string `json:"url,omitempty"`
	// SigningSecretRef names the Secret key holding this webhook's Standard Webhooks signing secret
	// ("whsec_" + base64 of 24 to 64 random bytes); its calls then carry webhook-signature.
	// +optional
	SigningSecretRef *SecretKeySelector `json:"signingSecretRef,omitempty"`
	// PreviousSigningSecretRef, during a rotation, names the secret signingSecretRef replaces: calls
	// carry a signature with each until it is removed.
	// +optional
	PreviousSigningSecretRef *SecretKeySelector `json:"previousSigningSecretRef,omitempty"`
	// Format is the markup the receiver renders "text" in: slack (mrkdwn) or markdown (Mattermost,
	// Rocket.Chat). Default: slack for an address on hooks.slack.com, markdown for any other.
	// +optional
	// +kubebuilder:validation:Enum=slack;markdown
	Format string `json:"format,omitempty"`
}

// AutoresponderSpec is the mail a declared form sends to the address in one of its email fields.
type AutoresponderSpec struct {
	// Field is the email field whose address gets the mail; default the form's unique field when it is
	// an email field, else its first email field.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Field string `json:"field,omitempty"`
	// Subject is one line of 1 to 200 bytes.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	// +kubebuilder:validation:XValidation:rule="size(self.trim()) > 0 && !self.matches('[\\r\\n]') && size(bytes(self)) <= 200",message="subject must be one line of 1 to 200 bytes, not only spaces"
	Subject string `json:"subject"`
	// Text is the mail's text, 1 to 20000 bytes; it may name the submission's fields as {{name}}, each
	// a field of the form. Those names are the service's check (the operator reports a wrong one as
	// Degraded): finding them in 100 texts of 20000 characters is beyond the CRD's CEL cost budget.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=20000
	// +kubebuilder:validation:XValidation:rule="size(self.trim()) > 0 && size(bytes(self)) <= 20000",message="text must be 1 to 20000 bytes, not only spaces"
	Text string `json:"text"`
}
