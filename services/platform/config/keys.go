package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"
)

// checkKeys walks a decoded document beside the Go type it will be read into and reports every key
// that type does not have, matched in its exact case, with the key path and the closest known key.
//
// Why not the YAML library's strict mode alone: it converts YAML to JSON and asks encoding/json, which
// matches names case-insensitively (`clientId` silently fills ClientID, and the operator would render it
// back as `clientID`: a file that is not what its author wrote) and speaks of "json: unknown field"
// without a path. This walk runs first, so the decoder only ever sees keys that are exactly ours.
func checkKeys(doc any, t reflect.Type, path string) []error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil // a type that reads itself (Duration) says what it wants
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := doc.(map[string]any)
		if !ok {
			return shapeError(doc, path, "a mapping of keys")
		}
		fields := jsonFields(t)
		var errs []error
		for _, k := range slices.Sorted(maps.Keys(m)) { // sorted: the same document, the same message
			f, ok := fields[k]
			if !ok {
				errs = append(errs, unknownKey(join(path, k), k, fields))
				continue
			}
			errs = append(errs, checkKeys(m[k], f.Type, join(path, k))...)
		}
		return errs
	case reflect.Map:
		m, ok := doc.(map[string]any)
		if !ok {
			return shapeError(doc, path, "a mapping of keys")
		}
		var errs []error
		for _, k := range slices.Sorted(maps.Keys(m)) {
			errs = append(errs, checkKeys(m[k], t.Elem(), join(path, k))...)
		}
		return errs
	case reflect.Slice, reflect.Array:
		l, ok := doc.([]any)
		if !ok {
			return shapeError(doc, path, "a list")
		}
		var errs []error
		for i, e := range l {
			errs = append(errs, checkKeys(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))...)
		}
		return errs
	}
	return nil // scalars: the decoder checks them
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// jsonFields maps each key a struct reads to its field, as encoding/json names them (embedded structs
// without a tag are flattened into their parent).
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			maps.Copy(out, jsonFields(f.Type))
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f
	}
	return out
}

func unknownKey(path, key string, fields map[string]reflect.StructField) error {
	known := slices.Sorted(maps.Keys(fields))
	if s := closestKey(key, known); s != "" {
		return fmt.Errorf("%s: unknown key (did you mean %s?)", path, s)
	}
	return fmt.Errorf("%s: unknown key (known keys here: %s)", path, strings.Join(known, ", "))
}

// closestKey is the known key that differs from key only in case, or else the one within a few edits
// (a third of its length, at least two), or "" when none is that close.
func closestKey(key string, known []string) string {
	best, bestDist := "", 0
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return k
		}
		d := levenshtein.ComputeDistance(strings.ToLower(key), strings.ToLower(k))
		if d <= max(2, len(k)/3) && (best == "" || d < bestDist) {
			best, bestDist = k, d
		}
	}
	return best
}

func shapeError(doc any, path, want string) []error {
	if doc == nil {
		return nil // an empty value ("clients:") reads as unset
	}
	return []error{fmt.Errorf("%s: want %s, found %s", pathOrRoot(path), want, describe(doc))}
}

// describe names a decoded YAML value's kind for an error message.
func describe(v any) string {
	switch v := v.(type) {
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return fmt.Sprintf("the text %q", v)
	case bool:
		return fmt.Sprintf("the boolean %t", v)
	case float64, int64, int, json.Number:
		return fmt.Sprintf("the number %v", v)
	}
	return fmt.Sprintf("%v", v)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// decodeError turns the YAML library's messages into ours: no "json:" for a YAML file, and the key path
// of a value of the wrong type.
func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("%s: a %s cannot be read as %s", te.Field, te.Value, goKind(te.Type))
	}
	msg := err.Error()
	for _, p := range []string{"error converting YAML to JSON: ", "error unmarshaling JSON: ", "while decoding JSON: ", "json: "} {
		msg = strings.ReplaceAll(msg, p, "")
	}
	return errors.New(msg)
}

func goKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "text"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number of at least 0 (within range)"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "a mapping of keys"
	}
	return t.String()
}
