package forms

import (
	"strings"
	"unicode"
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

// NextField is a form post's own thank-you address (docs/forms.md, "Plain HTML forms"): a path or a URL
// on the posting origin. JSON bodies do not read it.
const NextField = "_next"

// IdempotencyKeyField carries a form post's Idempotency-Key (docs/forms.md, "Plain HTML forms"): a form
// cannot send a header. It is read as the header is, and the header wins when both come; JSON bodies do
// not read it (their clients can send the header).
const IdempotencyKeyField = "_idempotency_key"

// extras are what a body carries besides its form's fields: the thank-you address a form post asks
// for and the bot-check token. Which of them a request reads depends on its format and its site, so
// that a JSON body from a site without a bot check is read exactly as the contract says.
type extras struct {
	next    string
	token   string
	idemKey string // the _idempotency_key field, trimmed; "" when absent
}

// wantExtras names the extra members a request reads: the _next field (form posts) and the bot-check
// token's field ("" for none).
type wantExtras struct {
	next       bool // _next and _idempotency_key: a form post's
	tokenField string
}

// maxKeys bounds a form's members plus the extras (the key arrays live on the stack).
const maxKeys = 10

// DecodeContact parses and validates a POST /contact JSON body. honeypot reports a filled-in _gotcha
// field: the caller answers 201 and stores nothing, whatever else is wrong, so that a bot learns nothing.
func DecodeContact(body []byte) (c Contact, honeypot bool, errs Errors) {
	c, _, honeypot, errs = decodeContact(bodyFormat{kind: kindJSON}, body, wantExtras{})
	return c, honeypot, errs
}

func decodeContact(bf bodyFormat, body []byte, want wantExtras) (c Contact, x extras, honeypot bool, errs Errors) {
	var keyBuf [maxKeys]string
	var vals [maxKeys]jsonobj.Value
	keys := withExtras(keyBuf[:0], contactKeys, want)
	f, errs := parseFields(bf, body, keys, vals[:len(keys)])
	if errs != nil {
		return c, x, false, errs
	}
	if f.honeypot() {
		return c, x, true, nil
	}
	c.Name = f.text("name", true, 0, MaxName, singleLine)
	c.Email = f.email("email")
	c.Organization = f.text("organization", false, 0, MaxOrganization, singleLine)
	c.Topic = f.choice("topic", func(v string) (string, bool) { return v, topics[v] })
	if c.Topic == "" {
		c.Topic = DefaultTopic
	}
	c.Message = f.text("message", true, MinMessage, MaxMessage, multiLine)
	x = f.extras(want)
	return c, x, false, f.errs
}

// DecodeWaitlist parses and validates a POST /waitlist JSON body; see DecodeContact for honeypot.
func DecodeWaitlist(body []byte) (w WaitlistEntry, honeypot bool, errs Errors) {
	w, _, honeypot, errs = decodeWaitlist(bodyFormat{kind: kindJSON}, body, wantExtras{})
	return w, honeypot, errs
}

func decodeWaitlist(bf bodyFormat, body []byte, want wantExtras) (w WaitlistEntry, x extras, honeypot bool, errs Errors) {
	var keyBuf [maxKeys]string
	var vals [maxKeys]jsonobj.Value
	keys := withExtras(keyBuf[:0], waitlistKeys, want)
	f, errs := parseFields(bf, body, keys, vals[:len(keys)])
	if errs != nil {
		return w, x, false, errs
	}
	if f.honeypot() {
		return w, x, true, nil
	}
	w.Email = strings.ToLower(f.email("email"))
	f.consent("consent")
	w.Name = f.text("name", false, 0, MaxName, singleLine)
	w.Association = f.text("association", false, 0, MaxAssociation, singleLine)
	w.Role = f.choice("role", func(v string) (string, bool) { return v, roles[v] })
	w.Size = f.choice("size", func(v string) (string, bool) { s, ok := sizes[v]; return s, ok })
	x = f.extras(want)
	return w, x, false, f.errs
}

func withExtras(dst, keys []string, want wantExtras) []string {
	dst = append(dst, keys...)
	if want.next {
		dst = append(dst, NextField, IdempotencyKeyField)
	}
	if want.tokenField != "" {
		dst = append(dst, want.tokenField)
	}
	return dst
}

// fields are the members of one form's object and the errors found so far.
type fields struct {
	keys []string
	vals []jsonobj.Value
	errs Errors
	// form says the values came from a form post: every value is a string, and consent is a checkbox.
	form bool
	// files are the files a multipart body brought, counted by field (a declared form's file fields).
	files map[string]int
}

// parseFields reads a body of either format. A JSON body that is not one valid object is
// _body: invalid_json (D4); a form body that cannot be read is _body: invalid_type: it has no JSON
// to be invalid, and invalid_type is the closed set's "this is not what it should be".
func parseFields(bf bodyFormat, body []byte, keys []string, vals []jsonobj.Value) (fields, Errors) {
	if bf.kind == kindJSON {
		if err := jsonobj.Read(body, keys, vals); err != nil {
			return fields{}, Errors{BodyField: CodeInvalidJSON}
		}
		return fields{keys: keys, vals: vals}, nil
	}
	if err := readForm(bf, body, keys, vals); err != nil {
		return fields{}, Errors{BodyField: CodeInvalidType}
	}
	return fields{keys: keys, vals: vals, form: true}, nil
}

// extras reads the extra members asked for. The handler checks _next against the posting origin.
func (f *fields) extras(want wantExtras) extras {
	var x extras
	if want.next {
		x.next, _ = f.str(NextField)
		x.idemKey, _ = f.str(IdempotencyKeyField)
	}
	if want.tokenField != "" {
		switch v := f.value(want.tokenField); v.Kind {
		case jsonobj.Absent:
		case jsonobj.String:
			x.token = strings.TrimSpace(v.Text())
		default:
			f.fail(want.tokenField, CodeInvalidType)
		}
	}
	return x
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
	if hasControl(s, shape == multiLine) || shape == singleLine && hasInvisibleFormat(s) {
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

// hasControl reports a C0 or C1 control character, DEL, or the line and paragraph separators U+2028 and
// U+2029 (line breaks outside the control ranges, which some readers of a subject or a CSV cell break
// on); lineBreaksAllowed allows tab, CR and LF only.
func hasControl(s string, lineBreaksAllowed bool) bool {
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			if !lineBreaksAllowed {
				return true
			}
		case r < 0x20, r >= 0x7f && r <= 0x9f, r == '\u2028', r == '\u2029':
			return true
		}
	}
	return false
}

// hasInvisibleFormat reports a Unicode format character (category Cf) that a single-line field refuses:
// the bidi embeddings, overrides and isolates that can make a name read backwards in a mail subject or
// a terminal (U+202A–U+202E, U+2066–U+2069, the marks U+200E, U+200F and U+061C), the zero-width space,
// word joiner and byte-order mark (U+200B, U+2060, U+FEFF), the soft hyphen and the other invisible
// ones. Zero-width non-joiner and joiner (U+200C, U+200D) are kept between two visible characters:
// Persian, the Indic scripts and emoji sequences need them there; at either end, or next to another
// format character, they only hide something.
func hasInvisibleFormat(s string) bool {
	ascii := true
	for i := 0; i < len(s) && ascii; i++ {
		ascii = s[i] < utf8.RuneSelf
	}
	if ascii { // no format character is ASCII: the common case costs one pass
		return false
	}
	prevVisible := false
	runes := []rune(s)
	for i, r := range runes {
		if !unicode.Is(unicode.Cf, r) {
			prevVisible = true
			continue
		}
		if (r == '\u200c' || r == '\u200d') && prevVisible && i+1 < len(runes) && !unicode.Is(unicode.Cf, runes[i+1]) {
			prevVisible = false
			continue
		}
		return true
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
	if f.form {
		f.checkbox(name)
		return
	}
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

// checkbox reads consent from a form post: a ticked checkbox sends its value, "on" unless the page
// gives another (value="accepted", value="2026-03 v1"), and an unticked one sends nothing (required). So
// any value is a tick except the spellings of a refusal, "off", "false", "no", "0" and "" (must_be_true),
// which only a select or a hidden field sends.
func (f *fields) checkbox(name string) {
	v := f.value(name)
	if v.Kind == jsonobj.Absent {
		f.fail(name, CodeRequired)
		return
	}
	switch strings.ToLower(strings.TrimSpace(v.Text())) {
	case "off", "false", "no", "0", "":
		f.fail(name, CodeMustBeTrue)
	}
}
