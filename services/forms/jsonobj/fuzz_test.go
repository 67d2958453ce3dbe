package jsonobj

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// The seed corpus lives in testdata/fuzz/<target>/ (checked in); `go test` runs it as regular tests,
// and `go test -fuzz FuzzJSONObject_AgreesWithEncodingJSON ./services/forms/jsonobj/` explores from it.

// FuzzJSONObject_AgreesWithEncodingJSON holds the hand-written reader to encoding/json: the same
// documents are objects (except the two refusals the package comment documents: invalid UTF-8 and a
// repeated known member), and every known member decodes to the same value.
func FuzzJSONObject_AgreesWithEncodingJSON(f *testing.F) {
	f.Add([]byte(validContact))
	f.Fuzz(func(t *testing.T, body []byte) {
		keys := append(append([]string{}, contactKeys...), waitlistKeys...)
		vals := make([]Value, len(keys))
		err := Read(body, keys, vals)
		var m map[string]json.RawMessage
		jerr := json.Unmarshal(body, &m)
		// The deliberate differences (see the package comment): invalid UTF-8, and a member the forms
		// read twice.
		isObject := jerr == nil && m != nil && utf8.Valid(body) && !repeatsKnownMember(body, keys)
		if (err == nil) != isObject {
			t.Fatalf("Read: %v; encoding/json: %v (object %v) for %q", err, jerr, isObject, body)
		}
		if err != nil {
			return
		}
		for i, k := range keys {
			raw, ok := m[k]
			v := vals[i]
			if !ok {
				if v.Kind != Absent {
					t.Fatalf("%q: found %v, encoding/json did not", k, v.Kind)
				}
				continue
			}
			// Numbers as json.Number: a number too large for a float64 (1e1000) is valid JSON, which
			// encoding/json refuses only when asked for a float64.
			var want any
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			if err := dec.Decode(&want); err != nil {
				t.Fatal(err)
			}
			switch w := want.(type) {
			case string:
				if v.Kind != String || v.Text() != w {
					t.Fatalf("%q: %q, encoding/json %q", k, v.Text(), w)
				}
			case nil:
				if v.Kind != Null {
					t.Fatalf("%q: kind %v, want null", k, v.Kind)
				}
			case bool:
				if (w && v.Kind != True) || (!w && v.Kind != False) {
					t.Fatalf("%q: kind %v, want %v", k, v.Kind, w)
				}
			case json.Number:
				if v.Kind != Number {
					t.Fatalf("%q: kind %v, want number", k, v.Kind)
				}
			case map[string]any:
				if v.Kind != Object {
					t.Fatalf("%q: kind %v, want object", k, v.Kind)
				}
			case []any:
				if v.Kind != Array {
					t.Fatalf("%q: kind %v, want array", k, v.Kind)
				}
			}
		}
	})
}

// repeatsKnownMember reports whether a JSON object (already known to be valid) names one of keys twice at
// its top level, compared after unescaping, as encoding/json's tokenizer sees them.
func repeatsKnownMember(body []byte, keys []string) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		k, _ := tok.(string)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return false
		}
		if slices.Contains(keys, k) {
			if seen[k] {
				return true
			}
			seen[k] = true
		}
	}
	return false
}

func TestJSONObject_NestingLimitLikeEncodingJSON(t *testing.T) {
	for _, depth := range []int{9999, 10000, 10001} {
		// depth counts the top-level object: {"a": [[[...]]]} with depth-1 arrays
		body := `{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
		var m map[string]json.RawMessage
		jerr := json.Unmarshal([]byte(body), &m)
		err := Read([]byte(body), []string{"a"}, make([]Value, 1))
		if (err == nil) != (jerr == nil) {
			t.Errorf("depth %d: ours %v, encoding/json %v", depth, err, jerr)
		}
	}
}
