package store

import (
	"bytes"
	"encoding/json"
	"errors"
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
}

// FieldValue is one field's value: a string, a bool, a json.Number or a []string.
type FieldValue struct {
	Name  string
	Value any
}

// Values are fields in order, written as one JSON object (a Go map would sort them).
type Values []FieldValue

// MarshalJSON writes the fields as an object, in order.
func (vs Values) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, v.Name)
		b = append(b, ':')
		enc, err := json.Marshal(v.Value)
		if err != nil {
			return nil, err
		}
		b = append(b, enc...)
	}
	return append(b, '}'), nil
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
