package forms

import (
	"strings"
	"unicode/utf8"

	"github.com/formsservice/formsservice/services/forms/jsonobj"
	"github.com/formsservice/formsservice/services/platform/email"
)

// Field limits of the forms (docs/forms.md), counted in Unicode code points after trimming.
const (
	MaxName         = 120
	MaxEmail        = email.MaxLen
	MaxOrganization = 160
	MaxAssociation  = 160
	MinMessage      = 10
	MaxMessage      = 4000
)

// Error codes of the 400 body, a closed set (docs/architecture.md, D4).
const (
	CodeRequired      = "required"
	CodeInvalidType   = "invalid_type"
	CodeTooShort      = "too_short"
	CodeTooLong       = "too_long"
	CodeInvalidEmail  = "invalid_email"
	CodeInvalidChoice = "invalid_choice"
	CodeMustBeTrue    = "must_be_true"
	CodeInvalidJSON   = "invalid_json"
)

// BodyField is the errors key for a body that is not a JSON object.
const BodyField = "_body"

// Errors maps a field name to an error code; it is exactly the "errors" object of the 400 answer.
type Errors map[string]string

// Contact is a validated contact message (docs/forms.md, POST /contact).
type Contact struct {
	Name         string `json:"name"`
	Email        string `json:"email"`
	Organization string `json:"organization,omitempty"`
	Topic        string `json:"topic"`
	Message      string `json:"message"`
}

// WaitlistEntry is a validated waitlist submission (docs/forms.md, POST /waitlist). Email is in lower case; consent is true by
// construction.
type WaitlistEntry struct {
	Email       string `json:"email"`
	Name        string `json:"name,omitempty"`
	Association string `json:"association,omitempty"`
	Role        string `json:"role,omitempty"`
	Size        string `json:"size,omitempty"`
}

// Topics, roles and sizes are the documented enumerations (docs/forms.md). Sizes are keyed by every
// accepted spelling (the documented en dash and the hyphen-minus a keyboard types) and map to the
// canonical, stored form.
var (
	topics = map[string]bool{"general": true, "sales": true, "support": true, "partnership": true, "press": true}
	roles  = map[string]bool{"admin": true, "officer": true, "member": true, "other": true}
	sizes  = map[string]string{
		"1–50": "1–50", "51–250": "51–250", "251–1,000": "251–1,000", "1,000+": "1,000+",
		"1-50": "1–50", "51-250": "51–250", "251-1,000": "251–1,000",
	}
)

// DefaultTopic is used when a contact message names none.
const DefaultTopic = "general"

// HoneypotField is a field that people never see and bots fill in.
const HoneypotField = "_gotcha"

// The members each form reads; everything else in the object is ignored.
var (
	contactKeys  = []string{"name", "email", "organization", "topic", "message", HoneypotField}
	waitlistKeys = []string{"email", "consent", "name", "association", "role", "size", HoneypotField}
)

// DecodeContact parses and validates a POST /contact body. honeypot reports a filled-in _gotcha field:
// the caller answers 201 and stores nothing, whatever else is wrong, so that a bot learns nothing.
func DecodeContact(body []byte) (c Contact, honeypot bool, errs Errors) {
	var vals [6]jsonobj.Value
	f, errs := parseObject(body, contactKeys, vals[:])
	if errs != nil {
		return c, false, errs
	}
	if f.honeypot() {
		return c, true, nil
	}
	c.Name = f.text("name", true, 0, MaxName, singleLine)
	c.Email = f.email("email")
	c.Organization = f.text("organization", false, 0, MaxOrganization, singleLine)
	c.Topic = f.choice("topic", func(v string) (string, bool) { return v, topics[v] })
	if c.Topic == "" {
		c.Topic = DefaultTopic
	}
	c.Message = f.text("message", true, MinMessage, MaxMessage, multiLine)
	return c, false, f.errs
}

// DecodeWaitlist parses and validates a POST /waitlist body; see DecodeContact for honeypot.
func DecodeWaitlist(body []byte) (w WaitlistEntry, honeypot bool, errs Errors) {
	var vals [7]jsonobj.Value
	f, errs := parseObject(body, waitlistKeys, vals[:])
	if errs != nil {
		return w, false, errs
	}
	if f.honeypot() {
		return w, true, nil
	}
	w.Email = strings.ToLower(f.email("email"))
	f.consent("consent")
	w.Name = f.text("name", false, 0, MaxName, singleLine)
	w.Association = f.text("association", false, 0, MaxAssociation, singleLine)
	w.Role = f.choice("role", func(v string) (string, bool) { return v, roles[v] })
	w.Size = f.choice("size", func(v string) (string, bool) { s, ok := sizes[v]; return s, ok })
	return w, false, f.errs
}

// fields are the members of one form's object and the errors found so far.
type fields struct {
	keys []string
	vals []jsonobj.Value
	errs Errors
}

func parseObject(body []byte, keys []string, vals []jsonobj.Value) (fields, Errors) {
	if err := jsonobj.Read(body, keys, vals); err != nil {
		return fields{}, Errors{BodyField: CodeInvalidJSON}
	}
	return fields{keys: keys, vals: vals}, nil
}

func (f *fields) fail(name, code string) {
	if f.errs == nil {
		f.errs = Errors{}
	}
	f.errs[name] = code
}

// value returns name's value; absent and null both mean "not given" (jsonobj.Absent).
func (f *fields) value(name string) jsonobj.Value {
	for i, k := range f.keys {
		if k == name {
			if f.vals[i].Kind == jsonobj.Null {
				return jsonobj.Value{}
			}
			return f.vals[i]
		}
	}
	return jsonobj.Value{}
}

// str reads a string field, trimmed. ok is false (and the error recorded) when it is not a string.
func (f *fields) str(name string) (s string, ok bool) {
	switch v := f.value(name); v.Kind {
	case jsonobj.Absent:
		return "", true
	case jsonobj.String:
		return strings.TrimSpace(v.Text()), true
	}
	f.fail(name, CodeInvalidType)
	return "", false
}

// text reads a free-text field and checks its length in code points. Optional fields that are empty
// after trimming count as not given. Control characters are refused (invalid_type: not text): in a
// single-line field any of them, in a multi-line one all but tab and line breaks. A NUL or a line break
// in a name has no business there, and would reach a mail header, a CSV export or a terminal.
func (f *fields) text(name string, required bool, minLen, maxLen int, shape textShape) string {
	s, ok := f.str(name)
	if !ok {
		return ""
	}
	if s == "" {
		if required {
			f.fail(name, CodeRequired)
		}
		return ""
	}
	if hasControl(s, shape == multiLine) {
		f.fail(name, CodeInvalidType)
		return ""
	}
	switch n := utf8.RuneCountInString(s); {
	case n > maxLen:
		f.fail(name, CodeTooLong)
	case n < minLen:
		f.fail(name, CodeTooShort)
	default:
		return s
	}
	return ""
}

// textShape says whether a free-text field may span lines (a message) or not (a name).
type textShape bool

const (
	singleLine textShape = false
	multiLine  textShape = true
)

// hasControl reports a C0 or C1 control character or DEL; lineBreaksAllowed allows tab, CR and LF.
func hasControl(s string, lineBreaksAllowed bool) bool {
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			if !lineBreaksAllowed {
				return true
			}
		case r < 0x20, r >= 0x7f && r <= 0x9f:
			return true
		}
	}
	return false
}

// email reads a required e-mail address (see ValidEmail).
func (f *fields) email(name string) string {
	s, ok := f.str(name)
	switch {
	case !ok:
	case s == "":
		f.fail(name, CodeRequired)
	case utf8.RuneCountInString(s) > MaxEmail:
		f.fail(name, CodeTooLong)
	case !email.Valid(s):
		f.fail(name, CodeInvalidEmail)
	default:
		return s
	}
	return ""
}

// choice reads an optional enumeration; canon maps an accepted spelling to the stored value.
func (f *fields) choice(name string, canon func(string) (string, bool)) string {
	s, ok := f.str(name)
	if !ok || s == "" {
		return ""
	}
	v, ok := canon(s)
	if !ok {
		f.fail(name, CodeInvalidChoice)
		return ""
	}
	return v
}

// consent must be the JSON literal true: false is refused, and so is the string "true", which is what a
// form serialised without care sends and what a person did not necessarily tick.
func (f *fields) consent(name string) {
	switch f.value(name).Kind {
	case jsonobj.Absent:
		f.fail(name, CodeRequired)
	case jsonobj.True:
	case jsonobj.False:
		f.fail(name, CodeMustBeTrue)
	default:
		f.fail(name, CodeInvalidType)
	}
}

// honeypot reports whether the hidden field carries anything: a non-blank string or any other non-null,
// non-false value.
func (f *fields) honeypot() bool {
	switch v := f.value(HoneypotField); v.Kind {
	case jsonobj.Absent, jsonobj.False:
		return false
	case jsonobj.String:
		return strings.TrimSpace(v.Text()) != ""
	}
	return true
}
