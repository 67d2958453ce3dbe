package forms

import (
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/formsservice/formsservice/services/forms/jsonobj"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Error codes that only declared forms answer (docs/forms.md "Your own forms"); the built-in forms keep
// the closed set above.
const (
	CodeUnknownField  = "unknown_field"  // a field the form does not declare (additionalFields: refuse)
	CodeInvalidFormat = "invalid_format" // not a URL, a phone number, a number or a date
	CodeOutOfRange    = "out_of_range"   // a number or date outside min..max, or too many choices
)

// maxNamedUnknown bounds how many undeclared fields a 400 names.
const maxNamedUnknown = 20

// keptName is what a field a form keeps without declaring it may be called.
var keptName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// declaredSubmission is a declared form's validated submission.
type declaredSubmission struct {
	fields     store.Values
	additional store.Values
	unique     string // the canonical value of the form's unique field; "" when it has none
}

// decodeDeclared reads and checks a declared form's body, in either format. Every member is read, so
// that one the form does not declare is named (400 unknown_field) or, with additionalFields: keep,
// kept as text. honeypot is as for the built-in forms.
func decodeDeclared(form *config.DeclaredForm, bf bodyFormat, body []byte, want wantExtras) (d declaredSubmission, x extras, honeypot bool, errs Errors) {
	return decodeDeclaredFiles(form, bf, body, want, nil)
}

// decodeDeclaredFiles is decodeDeclared of a body that brought files (upload.go): they count for the
// file fields' required.
func decodeDeclaredFiles(form *config.DeclaredForm, bf bodyFormat, body []byte, want wantExtras, uploaded []store.File) (d declaredSubmission, x extras, honeypot bool, errs Errors) {
	known := make([]string, 0, len(form.Fields)+4)
	for _, fd := range form.Fields {
		known = append(known, fd.Name)
	}
	keys := withExtras(known, []string{HoneypotField}, want)
	vals := make([]jsonobj.Value, len(keys))
	var many map[string][]string // a form post's repeated many-of fields
	var unknown []string
	var unknownVals []jsonobj.Value
	take := func(key string, v jsonobj.Value) error {
		i := slices.Index(keys, key)
		if i < 0 {
			unknown = append(unknown, key)
			unknownVals = append(unknownVals, v)
			return nil
		}
		if vals[i].Kind != jsonobj.Absent {
			return errForm // a field sent twice that is not a many-of field
		}
		vals[i] = v
		return nil
	}
	if bf.kind == kindJSON {
		if err := jsonobj.Each(body, take); err != nil {
			return d, x, false, Errors{BodyField: CodeInvalidJSON}
		}
	} else {
		err := eachFormField(bf, body, func(key string, value []byte) error {
			if !utf8.ValidString(key) || !utf8.Valid(value) {
				return errForm
			}
			text := lineBreaks.Replace(string(value))
			if fd := fieldOf(form, key); fd != nil && fd.Type == config.FieldManyOf {
				if many == nil {
					many = map[string][]string{}
				}
				many[key] = append(many[key], text)
				return nil
			}
			return take(key, jsonobj.StringOf([]byte(text)))
		})
		if err != nil {
			return d, x, false, Errors{BodyField: CodeInvalidType}
		}
	}
	f := fields{keys: keys, vals: vals, form: bf.kind != kindJSON}
	for _, u := range uploaded {
		if f.files == nil {
			f.files = map[string]int{}
		}
		f.files[u.Field]++
	}
	if f.honeypot() {
		return d, x, true, nil
	}
	d.fields = make(store.Values, 0, len(form.Fields))
	for i := range form.Fields {
		fd := &form.Fields[i]
		if v, ok := f.declared(fd, many[fd.Name]); ok && v != nil {
			d.fields = append(d.fields, store.FieldValue{Name: fd.Name, Value: v})
			if fd.Name == form.Unique {
				d.unique = store.UniqueValue(fd.Type, v.(string)) // one rule with erasure's (store)
			}
		}
	}
	named := 0 // unknown fields named in the answer: a hostile body of thousands gets the first ones
	for i, name := range unknown {
		v := unknownVals[i]
		switch {
		case !form.Keep() || !keptName.MatchString(name) || len(d.additional) >= config.MaxKeptFields:
			if named < maxNamedUnknown {
				f.fail(name, CodeUnknownField)
			}
			named++
		case v.Kind == jsonobj.Null:
		case v.Kind != jsonobj.String:
			f.fail(name, CodeInvalidType)
		default:
			s := strings.TrimSpace(v.Text())
			switch {
			case hasControl(s, true):
				f.fail(name, CodeInvalidType)
			case utf8.RuneCountInString(s) > config.MaxKeptFieldLength:
				f.fail(name, CodeTooLong)
			case s != "":
				d.additional = append(d.additional, store.FieldValue{Name: name, Value: s})
			}
		}
	}
	x = f.extras(want)
	return d, x, false, f.errs
}

func fieldOf(form *config.DeclaredForm, name string) *config.FormField {
	for i := range form.Fields {
		if form.Fields[i].Name == name {
			return &form.Fields[i]
		}
	}
	return nil
}

// declared checks one declared field. It returns the value to store (nil: not given) and false when
// the field is in error (recorded in f.errs).
func (f *fields) declared(fd *config.FormField, repeated []string) (any, bool) {
	name := fd.Name
	before := len(f.errs)
	var out any
	switch fd.Type {
	case config.FieldText, config.FieldLongText:
		shape := singleLine
		if fd.Type == config.FieldLongText {
			shape = multiLine
		}
		if s := f.text(name, fd.Required, fd.MinLength, fd.MaxLen(), shape); s != "" {
			out = s
		}
	case config.FieldEmail:
		if s, ok := f.str(name); ok && (s != "" || fd.Required) {
			if s = f.email(name); s != "" {
				out = s
			}
		}
	case config.FieldURL:
		if s := f.text(name, fd.Required, 0, 2000, singleLine); s != "" {
			if u, err := url.Parse(s); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				f.fail(name, CodeInvalidFormat)
			} else {
				out = s
			}
		}
	case config.FieldPhone:
		if s := f.text(name, fd.Required, 0, 40, singleLine); s != "" {
			if !validPhone(s) {
				f.fail(name, CodeInvalidFormat)
			} else {
				out = s
			}
		}
	case config.FieldNumber:
		out = f.number(fd)
	case config.FieldDate:
		if s := f.text(name, fd.Required, 0, 10, singleLine); s != "" {
			day, err := time.Parse(config.DateLayout, s)
			switch {
			case err != nil:
				f.fail(name, CodeInvalidFormat)
			case fd.Min != "" && day.Format(config.DateLayout) < fd.Min, fd.Max != "" && day.Format(config.DateLayout) > fd.Max:
				f.fail(name, CodeOutOfRange)
			default:
				out = s
			}
		}
	case config.FieldOneOf:
		if s := f.choice(name, func(v string) (string, bool) { return v, slices.Contains(fd.Choices, v) }); s != "" {
			out = s
		} else if fd.Required && len(f.errs) == before {
			f.fail(name, CodeRequired)
		}
	case config.FieldManyOf:
		out = f.manyOf(fd, repeated)
	case config.FieldCheckbox:
		out = f.flag(fd)
	case config.FieldConsent:
		f.consent(name)
		out = true
	case config.FieldFile:
		// Files come only as multipart file parts (upload.go), and are the record's files, not its
		// fields. A value of another kind is an error of the field: a JSON string, a urlencoded form's
		// file name. Empty is what a urlencoded form sends for an empty file input: nothing.
		switch v := f.value(name); {
		case v.Kind != jsonobj.Absent && v.Kind != jsonobj.Null && !(v.Kind == jsonobj.String && v.Text() == ""):
			f.fail(name, CodeInvalidType)
		case fd.Required && f.files[name] == 0:
			f.fail(name, CodeRequired)
		}
	}
	if len(f.errs) != before {
		return nil, false
	}
	return out, true
}

// number reads a number: a JSON number, or a string holding one (a form post's, or a script's).
func (f *fields) number(fd *config.FormField) any {
	var raw string
	switch v := f.value(fd.Name); v.Kind {
	case jsonobj.Absent:
	case jsonobj.Number:
		raw = v.Raw()
	case jsonobj.String:
		raw = strings.TrimSpace(v.Text())
	default:
		f.fail(fd.Name, CodeInvalidType)
		return nil
	}
	if raw == "" {
		if fd.Required {
			f.fail(fd.Name, CodeRequired)
		}
		return nil
	}
	n, ok := config.ParseFormNumber(raw)
	if !ok {
		f.fail(fd.Name, CodeInvalidFormat)
		return nil
	}
	lo, hasLo := config.ParseFormNumber(fd.Min)
	hi, hasHi := config.ParseFormNumber(fd.Max)
	if hasLo && n < lo || hasHi && n > hi {
		f.fail(fd.Name, CodeOutOfRange)
		return nil
	}
	return json.Number(raw)
}

// manyOf reads some of the choices: a JSON array of strings, or a form post's repeated field.
func (f *fields) manyOf(fd *config.FormField, repeated []string) any {
	picked := repeated
	if !f.form {
		switch v := f.value(fd.Name); v.Kind {
		case jsonobj.Absent:
		case jsonobj.Array:
			ss, ok := v.Strings()
			if !ok {
				f.fail(fd.Name, CodeInvalidType)
				return nil
			}
			picked = ss
		default:
			f.fail(fd.Name, CodeInvalidType)
			return nil
		}
	}
	out := make([]string, 0, len(picked))
	for _, p := range picked {
		p = strings.TrimSpace(p)
		if p == "" {
			continue // a form's hidden "nothing picked" value
		}
		if !slices.Contains(fd.Choices, p) || slices.Contains(out, p) {
			f.fail(fd.Name, CodeInvalidChoice)
			return nil
		}
		out = append(out, p)
	}
	switch {
	case len(out) == 0 && fd.Required:
		f.fail(fd.Name, CodeRequired)
		return nil
	case fd.MaxChoices > 0 && len(out) > fd.MaxChoices:
		f.fail(fd.Name, CodeOutOfRange)
		return nil
	case len(out) == 0:
		return nil
	}
	return out
}

// flag reads a checkbox: JSON true or false; in a form post, a ticked box sends its value (any but the
// spellings of a refusal) and an unticked one nothing.
func (f *fields) flag(fd *config.FormField) any {
	v := f.value(fd.Name)
	switch {
	case v.Kind == jsonobj.Absent:
		if fd.Required {
			f.fail(fd.Name, CodeRequired)
			return nil
		}
		return false
	case v.Kind == jsonobj.True:
		return true
	case v.Kind == jsonobj.False:
		if fd.Required {
			f.fail(fd.Name, CodeMustBeTrue)
			return nil
		}
		return false
	case f.form && v.Kind == jsonobj.String:
		switch strings.ToLower(strings.TrimSpace(v.Text())) {
		case "off", "false", "no", "0", "":
			if fd.Required {
				f.fail(fd.Name, CodeMustBeTrue)
				return nil
			}
			return false
		}
		return true
	}
	f.fail(fd.Name, CodeInvalidType)
	return nil
}

// validPhone takes what people write for a phone number: 7 to 15 digits (E.164's most), an optional
// leading +, and spaces, dots, dashes and parentheses between them.
func validPhone(s string) bool {
	digits := 0
	for i, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r == '+' && i == 0:
		case r == ' ' || r == '.' || r == '-' || r == '(' || r == ')':
		default:
			return false
		}
	}
	return digits >= 7 && digits <= 15
}
