package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"time"
)

// FormRecord is a declared form's stored submission: its fields in the order the form declares them,
// the fields it kept without declaring them (additionalFields: keep), and where and when it came from.
type FormRecord struct {
	Form       string    `json:"form"`
	Fields     Values    `json:"fields"`
	Additional Values    `json:"additional,omitempty"`
	ReceivedAt time.Time `json:"received_at"`
	Origin     string    `json:"origin,omitempty"`
	// Files are the files of the form's file fields, whose bytes are in the object store (D77).
	Files []File `json:"files,omitempty"`
	// ConfirmedAt is when the address confirmed a submission of a form with the double opt-in (the
	// confirmation adds it to the stored record, formoptin.go).
	ConfirmedAt *time.Time `json:"confirmed_at,omitempty"`
}

// File is one uploaded file of a submission: where its bytes are and what they are.
type File struct {
	Field string `json:"field"` // the file field it came in
	Key   string `json:"key"`   // the object's key in forms.files.bucket
	Name  string `json:"name"`  // the name the sender's computer gave it, made safe to show
	Size  int64  `json:"size"`
	// Type is the media type its bytes show (sniffed), never what the sender said it was.
	Type   string `json:"type"`
	SHA256 string `json:"sha256"` // hex
}

// FieldValue is one field's value: a string, a bool, a json.Number or a []string.
type FieldValue struct {
	Name  string
	Value any
}

// Values are fields in order, written as one JSON object (a Go map would sort them).
type Values []FieldValue

// MarshalJSON writes the fields as an object, in order.
func (vs Values) MarshalJSON() ([]byte, error) { return vs.appendJSON(nil) }

// appendJSON appends the object without reflection for the value types a form stores.
func (vs Values) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, v.Name)
		b = append(b, ':')
		switch x := v.Value.(type) {
		case string:
			b = appendJSONString(b, x)
		case bool:
			b = strconv.AppendBool(b, x)
		case json.Number:
			b = append(b, x...) // checked as a JSON number when it was read
		case []string:
			b = append(b, '[')
			for k, s := range x {
				if k > 0 {
					b = append(b, ',')
				}
				b = appendJSONString(b, s)
			}
			b = append(b, ']')
		default:
			enc, err := json.Marshal(v.Value)
			if err != nil {
				return nil, err
			}
			b = append(b, enc...)
		}
	}
	return append(b, '}'), nil
}

// AppendFormRecord appends r's JSON to dst (as encoding/json writes it, without its reflection: a
// declared form's submission is encoded on every request).
func AppendFormRecord(dst []byte, r FormRecord) ([]byte, error) {
	dst = append(dst, `{"form":`...)
	dst = appendJSONString(dst, r.Form)
	dst = append(dst, `,"fields":`...)
	dst, err := r.Fields.appendJSON(dst)
	if err != nil {
		return nil, err
	}
	if len(r.Additional) > 0 {
		dst = append(dst, `,"additional":`...)
		if dst, err = r.Additional.appendJSON(dst); err != nil {
			return nil, err
		}
	}
	dst = append(dst, `,"received_at":"`...)
	dst = r.ReceivedAt.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, '"')
	dst = appendOptional(dst, `,"origin":`, r.Origin)
	if len(r.Files) > 0 {
		files, err := json.Marshal(r.Files)
		if err != nil {
			return nil, err
		}
		dst = append(append(dst, `,"files":`...), files...)
	}
	return append(dst, '}'), nil
}

// UnmarshalJSON reads an object of fields, keeping their order.
func (vs *Values) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("fields: not an object")
	}
	*vs = (*vs)[:0]
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := t.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if list, ok := v.([]any); ok {
			ss := make([]string, 0, len(list))
			for _, e := range list {
				s, _ := e.(string)
				ss = append(ss, s)
			}
			v = ss
		}
		*vs = append(*vs, FieldValue{Name: name, Value: v})
	}
	_, err := dec.Token()
	return err
}

// Get returns the value of the field name, or nil.
func (vs Values) Get(name string) any {
	for _, v := range vs {
		if v.Name == name {
			return v.Value
		}
	}
	return nil
}
