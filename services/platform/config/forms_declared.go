package config

import (
	"fmt"
	"math"
	"net/mail"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DeclaredForm is a form a team declares as data (forms.declared, docs/forms.md "Your own forms"): it is
// posted to /f/<id> and takes exactly the fields it declares. /contact and /waitlist are the two
// built-in forms; their ids are taken.
type DeclaredForm struct {
	// ID names the form in its path (/f/<id>), its keys, its metrics and its export.
	ID string `json:"id"`
	// Title names the form to people: the subject of its notification mail and its pages.
	Title string `json:"title,omitempty"`
	// Fields are the form's fields, in the order its notifications and export show them.
	Fields []FormField `json:"fields"`
	// AdditionalFields says what becomes of a field the form does not declare: "refuse" (the default:
	// 400 naming it) or "keep" (stored as text, bounded, shown in the export).
	AdditionalFields string `json:"additionalFields,omitempty"`
	// Origins narrow the sites that may post this form to some of allowedOrigins (default: all).
	Origins []string `json:"origins,omitempty"`
	// Unique names a field whose value a submission may carry once: a second one is answered 200
	// {"status":"duplicate"}, as the waitlist answers an address it has. An e-mail field compares the
	// canonical address; other fields their trimmed text.
	Unique string `json:"unique,omitempty"`
	// Notify says who hears of each submission: mail recipients and webhooks (each with its own
	// signing secret). Without it, submissions are stored and exported only.
	Notify *FormNotify `json:"notify,omitempty"`
	// Autoresponder answers the sender by mail, through the shared mail component (mail.smtp).
	Autoresponder *Autoresponder `json:"autoresponder,omitempty"`
	// ThanksURL and ErrorURL are the form's own thank-you and error pages for plain HTML posts (as a
	// site's, which they override for this form): a path on the posting origin or an absolute http(s) URL.
	ThanksURL string `json:"thanksURL,omitempty"`
	ErrorURL  string `json:"errorURL,omitempty"`
	// Durability is what this form's 201 survives (forms.durability's levels); default forms.durability.
	Durability Durability `json:"durability,omitempty"`
	// Retention erases the form's submissions (and dead letters) stored longer ago than this, never one
	// still waiting for delivery, with their unique values. 0 (the default) keeps them until `formsservice
	// forget` erases them.
	Retention Duration `json:"retention,omitempty"`
	// Spam replaces forms.spam for this form (forms_spam.go).
	Spam *Spam `json:"spam,omitempty"`
	// BotCheck is the form's own CAPTCHA check (forms_sites.go's BotCheck): every submission of the
	// form, from any of its origins, carries a token verified with the provider before anything is
	// stored. It replaces the posting site's bot check for this form; without it the site's applies.
	BotCheck *BotCheck `json:"botCheck,omitempty"`
	// DoubleOptIn keeps each submission pending until the address in the form's unique field (an
	// e-mail field) confirms it from a mail, as the waitlist's forms.doubleOptIn does: only a
	// confirmed submission is stored, delivered and exported; one left unconfirmed is erased.
	DoubleOptIn *DoubleOptIn `json:"doubleOptIn,omitempty"`
	// MaxFileBytes bounds the bytes of all the files of one submission together (file fields,
	// forms_files.go); default DefaultFormFileBytes.
	MaxFileBytes int64 `json:"maxFileBytes,omitempty"`
}

// FormNotify is where a declared form's submissions are delivered.
type FormNotify struct {
	// MailTo get each submission as a mail through the shared mail component (mail.smtp), with the
	// sender's address as Reply-To when the form has an e-mail field.
	MailTo []string `json:"mailTo,omitempty"`
	// Webhooks each get each submission (Standard Webhooks, signed with their own secretFile).
	Webhooks []Webhook `json:"webhooks,omitempty"`
}

// Autoresponder is the mail a declared form sends to the address in one of its e-mail fields.
type Autoresponder struct {
	// Field is the e-mail field whose address gets the mail; default the form's unique field when it
	// is an e-mail field, else its first e-mail field.
	Field string `json:"field,omitempty"`
	// Subject and Text are the mail's; Text may name the submission's fields as {{name}}.
	Subject string `json:"subject"`
	Text    string `json:"text"`
}

// FormField is one field of a declared form.
type FormField struct {
	// Name is the field's name in the JSON body or the form post: [a-z][a-z0-9_]*, at most 64.
	Name string `json:"name"`
	// Label names the field to people (the error page, the notification); default: Name.
	Label string `json:"label,omitempty"`
	// Type is one of the FieldType constants.
	Type FieldType `json:"type"`
	// Required: the field must be present and not empty (a consent field is always required).
	Required bool `json:"required,omitempty"`
	// MinLength and MaxLength bound a text's length in characters (code points, after trimming).
	// MaxLength defaults to 200 for one line and 4000 for long text.
	MinLength int `json:"minLength,omitempty"`
	MaxLength int `json:"maxLength,omitempty"`
	// Min and Max bound a number, or a date (written YYYY-MM-DD).
	Min string `json:"min,omitempty"`
	Max string `json:"max,omitempty"`
	// Choices are the values a one-of or many-of field takes.
	Choices []string `json:"choices,omitempty"`
	// MaxChoices bounds how many choices a many-of field may carry (default: all of them).
	MaxChoices int `json:"maxChoices,omitempty"`
	// MaxSize bounds each file of a file field, in bytes (default DefaultFileSize); MaxFiles how many
	// files it takes (default 1); Accept the content types it takes, as the bytes show them (sniffed,
	// never the name or the declared type): "application/pdf", "image/*". Empty: any. forms_files.go.
	MaxSize  int64    `json:"maxSize,omitempty"`
	MaxFiles int      `json:"maxFiles,omitempty"`
	Accept   []string `json:"accept,omitempty"`
}

// FieldType is a declared field's kind: what it accepts and how it is checked.
type FieldType string

const (
	FieldText     FieldType = "text"     // one line of text
	FieldLongText FieldType = "longtext" // several lines of text
	FieldEmail    FieldType = "email"    // an e-mail address, checked as the built-in forms check it
	FieldURL      FieldType = "url"      // an http(s) URL with a host
	FieldPhone    FieldType = "phone"    // a phone number: 7 to 15 digits, with + ( ) - . and spaces
	FieldNumber   FieldType = "number"   // a decimal number (a JSON number, or a string of one)
	FieldDate     FieldType = "date"     // a calendar date, YYYY-MM-DD
	FieldOneOf    FieldType = "oneof"    // one of Choices
	FieldManyOf   FieldType = "manyof"   // some of Choices (a JSON array, or the same name repeated)
	FieldCheckbox FieldType = "checkbox" // yes or no (absent is no)
	FieldConsent  FieldType = "consent"  // a box that must be ticked
	FieldFile     FieldType = "file"     // uploaded files (multipart/form-data only; forms_files.go)
)

// FieldTypes lists every field type, in the order docs/forms.md documents them.
var FieldTypes = []FieldType{FieldText, FieldLongText, FieldEmail, FieldURL, FieldPhone, FieldNumber, FieldDate,
	FieldOneOf, FieldManyOf, FieldCheckbox, FieldConsent, FieldFile}

// Limits of a declared form, so that a declaration cannot make the 16 KB body or the record unbounded.
const (
	MaxDeclaredForms      = 100
	MaxFormFields         = 50
	MaxFieldChoices       = 100
	MaxFieldLength        = 4000
	DefaultTextLength     = 200
	MaxKeptFields         = 20 // additionalFields: keep
	MaxKeptFieldLength    = 1000
	AdditionalFieldsKeep  = "keep"
	AdditionalFieldsRefus = "refuse"
)

var (
	formIDPattern    = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)
	fieldNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	// builtInForms are the ids /contact and /waitlist answer to under /f/ as well.
	builtInForms = []string{"contact", "waitlist"}
)

// ValidFormID reports whether id can name a declared form.
func ValidFormID(id string) bool { return formIDPattern.MatchString(id) }

// BuiltInForm reports whether id is one of the built-in forms (/f/contact is /contact).
func BuiltInForm(id string) bool { return slices.Contains(builtInForms, id) }

// DateLayout is how a date field is written.
const DateLayout = time.DateOnly

func validateDeclared(forms []DeclaredForm, allowed []string) []error {
	var errs []error
	if len(forms) > MaxDeclaredForms {
		errs = append(errs, fmt.Errorf("forms.declared: at most %d forms", MaxDeclaredForms))
	}
	ids := map[string]bool{}
	for i, f := range forms {
		at := fmt.Sprintf("forms.declared[%d]", i)
		switch {
		case !formIDPattern.MatchString(f.ID):
			errs = append(errs, fmt.Errorf("%s.id %q: want 1 to 40 of a-z, 0-9 and -, starting with a letter or digit", at, f.ID))
		case BuiltInForm(f.ID):
			errs = append(errs, fmt.Errorf("%s.id %q: taken by the built-in form /%s", at, f.ID, f.ID))
		case ids[f.ID]:
			errs = append(errs, fmt.Errorf("%s.id %q: declared twice", at, f.ID))
		}
		ids[f.ID] = true
		at = fmt.Sprintf("forms.declared[%s]", f.ID)
		errs = append(errs, f.validate(at, allowed)...)
	}
	return errs
}

func (f DeclaredForm) validate(at string, allowed []string) []error {
	var errs []error
	switch {
	case len(f.Fields) == 0:
		errs = append(errs, fmt.Errorf("%s.fields: a form needs at least one field", at))
	case len(f.Fields) > MaxFormFields:
		errs = append(errs, fmt.Errorf("%s.fields: at most %d fields", at, MaxFormFields))
	}
	switch f.AdditionalFields {
	case "", AdditionalFieldsRefus, AdditionalFieldsKeep:
	default:
		errs = append(errs, fmt.Errorf("%s.additionalFields %q: want refuse or keep", at, f.AdditionalFields))
	}
	for _, o := range f.Origins {
		if !slices.Contains(allowed, o) {
			errs = append(errs, fmt.Errorf("%s.origins: %q is not in allowedOrigins (a form's origins narrow them)", at, o))
		}
	}
	names := map[string]bool{}
	for i, fd := range f.Fields {
		fat := fmt.Sprintf("%s.fields[%d]", at, i)
		if !fieldNamePattern.MatchString(fd.Name) {
			errs = append(errs, fmt.Errorf("%s.name %q: want [a-z][a-z0-9_]*, at most 64 (a leading _ is the service's own)", fat, fd.Name))
		} else if names[fd.Name] {
			errs = append(errs, fmt.Errorf("%s.name %q: declared twice", fat, fd.Name))
		}
		names[fd.Name] = true
		errs = append(errs, fd.validate(fat)...)
	}
	switch f.Durability {
	case "", DurabilityProcess, DurabilityMachine, DurabilityPrimary, DurabilityReplicated, DurabilityUnchecked:
	default:
		errs = append(errs, fmt.Errorf("%s.durability %q: want one of forms.durability's levels (process, machine, primary, replicated, unchecked)", at, f.Durability))
	}
	if f.Retention < 0 {
		errs = append(errs, fmt.Errorf("%s.retention: must not be negative", at))
	}
	errs = append(errs, f.Spam.validate(at+".spam")...)
	errs = append(errs, f.validateFileBytes(at)...)
	if d := f.DoubleOptIn; d != nil {
		errs = append(errs, d.validateAt(at+".doubleOptIn")...)
		if i := slices.IndexFunc(f.Fields, func(fd FormField) bool { return fd.Name == f.Unique }); f.Unique == "" || i < 0 || f.Fields[i].Type != FieldEmail {
			errs = append(errs, fmt.Errorf("%s.doubleOptIn: needs unique naming an e-mail field, the address the confirmation mail goes to", at))
		}
		if slices.ContainsFunc(f.Fields, func(fd FormField) bool { return fd.Type == FieldFile }) {
			errs = append(errs, fmt.Errorf("%s.doubleOptIn: not for a form with file fields (the files of a submission never confirmed would outlive it)", at))
		}
	}
	if f.BotCheck != nil {
		// The token's field (cf-turnstile-response…) has a dash, so no declared field can take its name.
		errs = append(errs, f.BotCheck.validate(at+".botCheck")...)
	}
	for _, u := range []struct{ key, v string }{{"thanksURL", f.ThanksURL}, {"errorURL", f.ErrorURL}} {
		if u.v != "" {
			if err := CheckSiteURL(u.v); err != nil {
				errs = append(errs, fmt.Errorf("%s.%s %q: %w", at, u.key, u.v, err))
			}
		}
	}
	if n := f.Notify; n != nil {
		if len(n.MailTo)+len(n.Webhooks) == 0 {
			errs = append(errs, fmt.Errorf("%s.notify: name mailTo addresses or webhooks (or leave notify out)", at))
		}
		if len(n.MailTo) > 20 || len(n.Webhooks) > 10 {
			errs = append(errs, fmt.Errorf("%s.notify: at most 20 mailTo addresses and 10 webhooks", at))
		}
		for i, to := range n.MailTo {
			if a, err := mail.ParseAddress(to); err != nil || a.Name != "" || strings.ContainsAny(to, "<>") {
				errs = append(errs, fmt.Errorf("%s.notify.mailTo[%d] %q: want a bare address like team@example.com", at, i, to))
			}
		}
		for i, w := range n.Webhooks {
			errs = append(errs, w.validateAt(fmt.Sprintf("%s.notify.webhooks[%d]", at, i))...)
		}
	}
	if a := f.Autoresponder; a != nil {
		field := a.ResponderField(f)
		switch {
		case field == "":
			errs = append(errs, fmt.Errorf("%s.autoresponder: the form has no e-mail field to answer to", at))
		case slices.IndexFunc(f.Fields, func(fd FormField) bool { return fd.Name == field && fd.Type == FieldEmail }) < 0:
			errs = append(errs, fmt.Errorf("%s.autoresponder.field %q: not an e-mail field of the form", at, field))
		}
		if strings.TrimSpace(a.Subject) == "" || strings.ContainsAny(a.Subject, "\r\n") || len(a.Subject) > 200 {
			errs = append(errs, fmt.Errorf("%s.autoresponder.subject: one line of 1 to 200 bytes", at))
		}
		if strings.TrimSpace(a.Text) == "" || len(a.Text) > 20000 {
			errs = append(errs, fmt.Errorf("%s.autoresponder.text: 1 to 20000 bytes", at))
		}
		for _, name := range Placeholders(a.Text) {
			if slices.IndexFunc(f.Fields, func(fd FormField) bool { return fd.Name == name }) < 0 {
				errs = append(errs, fmt.Errorf("%s.autoresponder.text: {{%s}} is not a field of the form", at, name))
			}
		}
	}
	if f.Unique != "" {
		i := slices.IndexFunc(f.Fields, func(fd FormField) bool { return fd.Name == f.Unique })
		switch {
		case i < 0:
			errs = append(errs, fmt.Errorf("%s.unique %q: not a field of the form", at, f.Unique))
		case !slices.Contains([]FieldType{FieldText, FieldEmail, FieldPhone, FieldURL}, f.Fields[i].Type):
			errs = append(errs, fmt.Errorf("%s.unique %q: must be a text, email, phone or url field", at, f.Unique))
		case !f.Fields[i].Required:
			errs = append(errs, fmt.Errorf("%s.unique %q: must be a required field", at, f.Unique))
		}
	}
	return errs
}

func (fd FormField) validate(at string) []error {
	var errs []error
	if !slices.Contains(FieldTypes, fd.Type) {
		errs = append(errs, fmt.Errorf("%s.type %q: want one of %v", at, fd.Type, FieldTypes))
		return errs
	}
	if len([]rune(fd.Label)) > 200 {
		errs = append(errs, fmt.Errorf("%s.label: at most 200 characters", at))
	}
	text := fd.Type == FieldText || fd.Type == FieldLongText
	if (fd.MinLength != 0 || fd.MaxLength != 0) && !text {
		errs = append(errs, fmt.Errorf("%s: minLength and maxLength are for text and longtext fields", at))
	}
	if fd.MinLength < 0 || fd.MaxLength < 0 || fd.MaxLength > MaxFieldLength || fd.MaxLength != 0 && fd.MinLength > fd.MaxLength {
		errs = append(errs, fmt.Errorf("%s: want 0 <= minLength <= maxLength <= %d", at, MaxFieldLength))
	}
	choices := fd.Type == FieldOneOf || fd.Type == FieldManyOf
	switch {
	case choices && (len(fd.Choices) == 0 || len(fd.Choices) > MaxFieldChoices):
		errs = append(errs, fmt.Errorf("%s.choices: a %s field needs 1 to %d choices", at, fd.Type, MaxFieldChoices))
	case !choices && len(fd.Choices) > 0:
		errs = append(errs, fmt.Errorf("%s.choices: only oneof and manyof fields have choices", at))
	}
	seen := map[string]bool{}
	for _, c := range fd.Choices {
		if c == "" || len(c) > 200 || seen[c] {
			errs = append(errs, fmt.Errorf("%s.choices: each choice must be 1 to 200 bytes and listed once", at))
			break
		}
		seen[c] = true
	}
	if fd.MaxChoices != 0 && (fd.Type != FieldManyOf || fd.MaxChoices < 1) {
		errs = append(errs, fmt.Errorf("%s.maxChoices: a positive count, for manyof fields", at))
	}
	errs = append(errs, fd.validateFile(at)...)
	if fd.Min != "" || fd.Max != "" {
		switch fd.Type {
		case FieldNumber:
			lo, okLo := ParseFormNumber(fd.Min)
			hi, okHi := ParseFormNumber(fd.Max)
			if fd.Min != "" && !okLo || fd.Max != "" && !okHi || fd.Min != "" && fd.Max != "" && lo > hi {
				errs = append(errs, fmt.Errorf("%s: min and max must be numbers, min <= max", at))
			}
		case FieldDate:
			lo, errLo := time.Parse(DateLayout, fd.Min)
			hi, errHi := time.Parse(DateLayout, fd.Max)
			if fd.Min != "" && errLo != nil || fd.Max != "" && errHi != nil || fd.Min != "" && fd.Max != "" && lo.After(hi) {
				errs = append(errs, fmt.Errorf("%s: min and max must be dates (YYYY-MM-DD), min <= max", at))
			}
		default:
			errs = append(errs, fmt.Errorf("%s: min and max are for number and date fields", at))
		}
	}
	return errs
}

// MaxLen is the field's longest accepted text.
func (fd FormField) MaxLen() int {
	switch {
	case fd.MaxLength > 0:
		return fd.MaxLength
	case fd.Type == FieldLongText:
		return MaxFieldLength
	}
	return DefaultTextLength
}

// DisplayLabel is what people read for the field.
func (fd FormField) DisplayLabel() string {
	if fd.Label != "" {
		return fd.Label
	}
	return fd.Name
}

// Keep reports whether the form stores fields it does not declare.
func (f DeclaredForm) Keep() bool { return f.AdditionalFields == AdditionalFieldsKeep }

// FindDeclared returns the declared form with id, or nil.
func (f *Forms) FindDeclared(id string) *DeclaredForm {
	for i := range f.Declared {
		if f.Declared[i].ID == id {
			return &f.Declared[i]
		}
	}
	return nil
}

// ParseFormNumber reads a number field's value (or a declared bound): a finite decimal of at most 40
// characters, written as JSON writes a number (no hex, no Inf or NaN, no leading + or 0, digits on both
// sides of a point).
func ParseFormNumber(s string) (float64, bool) {
	if len(s) == 0 || len(s) > 40 || !jsonNumber(s) {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil && !math.IsInf(v, 0)
}

// jsonNumber reports whether s is -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? (a scan: this runs on
// every submission of a form with a number field).
func jsonNumber(s string) bool {
	i := 0
	digits := func() int {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// ResponderField is the e-mail field an autoresponder answers to (see Autoresponder.Field); "" when the
// form has none.
func (a *Autoresponder) ResponderField(f DeclaredForm) string {
	if a.Field != "" {
		return a.Field
	}
	for _, fd := range f.Fields {
		if fd.Name == f.Unique && fd.Type == FieldEmail {
			return fd.Name
		}
	}
	for _, fd := range f.Fields {
		if fd.Type == FieldEmail {
			return fd.Name
		}
	}
	return ""
}

var placeholder = regexp.MustCompile(`\{\{\s*([a-z][a-z0-9_]*)\s*\}\}`)

// Placeholders lists the field names a text names as {{name}}, in order.
func Placeholders(text string) []string {
	var out []string
	for _, m := range placeholder.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// FillPlaceholders writes each {{name}} of text as value(name).
func FillPlaceholders(text string, value func(name string) string) string {
	return placeholder.ReplaceAllStringFunc(text, func(m string) string {
		return value(placeholder.FindStringSubmatch(m)[1])
	})
}

// DurabilityOf is the durability a declared form keeps: its own, else the forms'.
func (f *Forms) DurabilityOf(form *DeclaredForm) Durability {
	if form != nil && form.Durability != "" {
		return form.Durability
	}
	return f.Durability
}
