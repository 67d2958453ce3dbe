package forms

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Field limits from the spec (section 8), counted in Unicode code points after trimming.
const (
	MaxName         = 120
	MaxEmail        = 254
	MaxOrganization = 160
	MaxAssociation  = 160
	MinMessage      = 10
	MaxMessage      = 4000
)

// Error codes of the 400 body, a closed set (DESIGN.md).
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

// Contact is a validated contact message (spec 2.1).
type Contact struct {
	Name         string `json:"name"`
	Email        string `json:"email"`
	Organization string `json:"organization,omitempty"`
	Topic        string `json:"topic"`
	Message      string `json:"message"`
}

// WaitlistEntry is a validated waitlist submission (spec 2.2). Email is in lower case; consent is true by
// construction.
type WaitlistEntry struct {
	Email       string `json:"email"`
	Name        string `json:"name,omitempty"`
	Association string `json:"association,omitempty"`
	Role        string `json:"role,omitempty"`
	Size        string `json:"size,omitempty"`
}

// Topics, roles and sizes are the spec's enumerations. Sizes are keyed by every accepted spelling (the
// spec's en dash and the hyphen-minus a keyboard types) and map to the canonical, stored form.
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

// DecodeContact parses and validates a POST /contact body. honeypot reports a filled-in _gotcha field:
// the caller answers 201 and stores nothing, whatever else is wrong, so that a bot learns nothing.
func DecodeContact(body []byte) (c Contact, honeypot bool, errs Errors) {
	f, errs := parseObject(body)
	if errs != nil {
		return c, false, errs
	}
	if f.honeypot() {
		return c, true, nil
	}
	c.Name = f.text("name", true, 0, MaxName)
	c.Email = f.email("email")
	c.Organization = f.text("organization", false, 0, MaxOrganization)
	c.Topic = f.choice("topic", func(v string) (string, bool) { return v, topics[v] })
	if c.Topic == "" {
		c.Topic = DefaultTopic
	}
	c.Message = f.text("message", true, MinMessage, MaxMessage)
	return c, false, f.result()
}

// DecodeWaitlist parses and validates a POST /waitlist body; see DecodeContact for honeypot.
func DecodeWaitlist(body []byte) (w WaitlistEntry, honeypot bool, errs Errors) {
	f, errs := parseObject(body)
	if errs != nil {
		return w, false, errs
	}
	if f.honeypot() {
		return w, true, nil
	}
	w.Email = strings.ToLower(f.email("email"))
	f.consent("consent")
	w.Name = f.text("name", false, 0, MaxName)
	w.Association = f.text("association", false, 0, MaxAssociation)
	w.Role = f.choice("role", func(v string) (string, bool) { return v, roles[v] })
	w.Size = f.choice("size", func(v string) (string, bool) { s, ok := sizes[v]; return s, ok })
	return w, false, f.result()
}

// fields is a decoded JSON object: raw values by exact key (unknown keys are ignored) and the errors
// found so far.
type fields struct {
	raw  map[string]json.RawMessage
	errs Errors
}

func parseObject(body []byte) (*fields, Errors) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, Errors{BodyField: CodeInvalidJSON}
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, Errors{BodyField: CodeInvalidJSON}
	}
	return &fields{raw: raw}, nil
}

func (f *fields) fail(name, code string) {
	if f.errs == nil {
		f.errs = Errors{}
	}
	f.errs[name] = code
}

func (f *fields) result() Errors { return f.errs }

// value returns the raw JSON value of name, or nil when it is absent or null (both mean "not given").
func (f *fields) value(name string) json.RawMessage {
	v, ok := f.raw[name]
	if !ok || string(v) == "null" {
		return nil
	}
	return v
}

// str reads a string field, trimmed. ok is false (and the error recorded) when it is not a string.
func (f *fields) str(name string) (s string, given, ok bool) {
	v := f.value(name)
	if v == nil {
		return "", false, true
	}
	if v[0] != '"' {
		f.fail(name, CodeInvalidType)
		return "", true, false
	}
	if err := json.Unmarshal(v, &s); err != nil {
		f.fail(name, CodeInvalidType)
		return "", true, false
	}
	return strings.TrimSpace(s), true, true
}

// text reads a free-text field and checks its length in code points. Optional fields that are empty
// after trimming count as not given.
func (f *fields) text(name string, required bool, minLen, maxLen int) string {
	s, _, ok := f.str(name)
	if !ok {
		return ""
	}
	if s == "" {
		if required {
			f.fail(name, CodeRequired)
		}
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

// email reads a required e-mail address (see ValidEmail).
func (f *fields) email(name string) string {
	s, _, ok := f.str(name)
	switch {
	case !ok:
	case s == "":
		f.fail(name, CodeRequired)
	case utf8.RuneCountInString(s) > MaxEmail:
		f.fail(name, CodeTooLong)
	case !ValidEmail(s):
		f.fail(name, CodeInvalidEmail)
	default:
		return s
	}
	return ""
}

// choice reads an optional enumeration; canon maps an accepted spelling to the stored value.
func (f *fields) choice(name string, canon func(string) (string, bool)) string {
	s, _, ok := f.str(name)
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
	switch v := f.value(name); {
	case v == nil:
		f.fail(name, CodeRequired)
	case string(v) == "true":
	case string(v) == "false":
		f.fail(name, CodeMustBeTrue)
	default:
		f.fail(name, CodeInvalidType)
	}
}

// honeypot reports whether the hidden field carries anything: a non-blank string or any other non-null,
// non-false value.
func (f *fields) honeypot() bool {
	v := f.value(HoneypotField)
	if v == nil || string(v) == "false" {
		return false
	}
	if v[0] == '"' {
		var s string
		return json.Unmarshal(v, &s) != nil || strings.TrimSpace(s) != ""
	}
	return true
}
