package forms

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/formsservice/formsservice/services/platform/email"
)

// The seed corpus lives in testdata/fuzz/<target>/ (checked in); `go test` runs it as regular tests,
// and `go test -fuzz FuzzDecodeContact ./services/forms/` explores from it.

var knownCodes = []string{CodeRequired, CodeInvalidType, CodeTooShort, CodeTooLong, CodeInvalidEmail, CodeInvalidChoice, CodeMustBeTrue, CodeInvalidJSON}

func checkErrors(t *testing.T, errs Errors, fields ...string) {
	t.Helper()
	for f, code := range errs {
		if !slices.Contains(knownCodes, code) {
			t.Fatalf("field %q: code %q outside the closed set", f, code)
		}
		if f != BodyField && !slices.Contains(fields, f) {
			t.Fatalf("error for unknown field %q", f)
		}
	}
	if _, ok := errs[BodyField]; ok && len(errs) != 1 {
		t.Fatalf("_body error alongside field errors: %v", errs)
	}
}

func runes(s string) int { return utf8.RuneCountInString(s) }

func FuzzDecodeContact(f *testing.F) {
	f.Add([]byte(validContact))
	f.Fuzz(func(t *testing.T, body []byte) {
		c, bot, errs := DecodeContact(body)
		checkErrors(t, errs, "name", "email", "organization", "topic", "message")
		if bot || errs != nil {
			return
		}
		// Whatever was accepted obeys every rule of the spec...
		if hasControl(c.Name, false) || hasControl(c.Organization, false) || hasControl(c.Message, true) {
			t.Fatalf("accepted control characters: %+v", c)
		}
		if n := runes(c.Name); n < 1 || n > MaxName || runes(c.Organization) > MaxOrganization ||
			runes(c.Message) < MinMessage || runes(c.Message) > MaxMessage || !topics[c.Topic] ||
			runes(c.Email) > MaxEmail || !email.Valid(c.Email) {
			t.Fatalf("accepted %+v", c)
		}
		// ...is stored as a record that reads back the same...
		var rec contactRecord
		if err := json.Unmarshal(appendContactRecord(nil, contactRecord{Contact: c}), &rec); err != nil || rec.Contact != c {
			t.Fatalf("record of %+v reads back as %+v (%v)", c, rec.Contact, err)
		}
		// ...and decodes to itself when sent again.
		again, _ := json.Marshal(c)
		c2, bot2, errs2 := DecodeContact(again)
		if bot2 || errs2 != nil || c2 != c {
			t.Fatalf("round trip: %+v -> %+v %v", c, c2, errs2)
		}
	})
}

func FuzzDecodeWaitlist(f *testing.F) {
	f.Add([]byte(validWaitlist))
	f.Fuzz(func(t *testing.T, body []byte) {
		w, bot, errs := DecodeWaitlist(body)
		checkErrors(t, errs, "email", "consent", "name", "association", "role", "size")
		if bot || errs != nil {
			return
		}
		if hasControl(w.Name, false) || hasControl(w.Association, false) {
			t.Fatalf("accepted control characters: %+v", w)
		}
		canonicalSizes := slices.Collect(maps.Values(sizes))
		if runes(w.Name) > MaxName || runes(w.Association) > MaxAssociation || runes(w.Email) > MaxEmail ||
			!email.Valid(w.Email) || (w.Role != "" && !roles[w.Role]) || (w.Size != "" && !slices.Contains(canonicalSizes, w.Size)) {
			t.Fatalf("accepted %+v", w)
		}
		if _, ok := email.Canonical(w.Email); !ok {
			t.Fatalf("accepted address %q has no canonical form", w.Email)
		}
		var rec waitlistRecord
		if err := json.Unmarshal(appendWaitlistRecord(nil, waitlistRecord{WaitlistEntry: w, Consent: true}), &rec); err != nil || rec.WaitlistEntry != w {
			t.Fatalf("record of %+v reads back as %+v (%v)", w, rec.WaitlistEntry, err)
		}
		again, _ := json.Marshal(struct {
			WaitlistEntry
			Consent bool `json:"consent"`
		}{w, true})
		w2, bot2, errs2 := DecodeWaitlist(again)
		if bot2 || errs2 != nil || w2 != w {
			t.Fatalf("round trip: %+v -> %+v %v", w, w2, errs2)
		}
	})
}

// FuzzJSONObject_AgreesWithEncodingJSON holds the hand-written reader to encoding/json: the same
// documents are objects (except the two refusals jsonobj.go documents: invalid UTF-8 and a repeated known
// member), and every known member decodes to the same value.
func FuzzJSONObject_AgreesWithEncodingJSON(f *testing.F) {
	f.Add([]byte(validContact))
	f.Fuzz(func(t *testing.T, body []byte) {
		keys := append(append([]string{}, contactKeys...), waitlistKeys...)
		vals := make([]jsonValue, len(keys))
		err := readJSONObject(body, keys, vals)
		var m map[string]json.RawMessage
		jerr := json.Unmarshal(body, &m)
		// The deliberate differences (see jsonobj.go): invalid UTF-8, and a member the forms read twice.
		isObject := jerr == nil && m != nil && utf8.Valid(body) && !repeatsKnownMember(body, keys)
		if (err == nil) != isObject {
			t.Fatalf("readJSONObject: %v; encoding/json: %v (object %v) for %q", err, jerr, isObject, body)
		}
		if err != nil {
			return
		}
		for i, k := range keys {
			raw, ok := m[k]
			v := vals[i]
			if !ok {
				if v.kind != jsonAbsent {
					t.Fatalf("%q: found %v, encoding/json did not", k, v.kind)
				}
				continue
			}
			var want any
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			switch w := want.(type) {
			case string:
				if v.kind != jsonString || v.text() != w {
					t.Fatalf("%q: %q, encoding/json %q", k, v.text(), w)
				}
			case nil:
				if v.kind != jsonNull {
					t.Fatalf("%q: kind %v, want null", k, v.kind)
				}
			case bool:
				if (w && v.kind != jsonTrue) || (!w && v.kind != jsonFalse) {
					t.Fatalf("%q: kind %v, want %v", k, v.kind, w)
				}
			case float64:
				if v.kind != jsonNumber {
					t.Fatalf("%q: kind %v, want number", k, v.kind)
				}
			case map[string]any:
				if v.kind != jsonObject {
					t.Fatalf("%q: kind %v, want object", k, v.kind)
				}
			case []any:
				if v.kind != jsonArray {
					t.Fatalf("%q: kind %v, want array", k, v.kind)
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
		err := readJSONObject([]byte(body), []string{"a"}, make([]jsonValue, 1))
		if (err == nil) != (jerr == nil) {
			t.Errorf("depth %d: ours %v, encoding/json %v", depth, err, jerr)
		}
	}
}
