package forms

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/formsservice/formsservice/services/forms/store"
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
		var rec store.ContactRecord
		err := json.Unmarshal(store.AppendContactRecord(nil, contactRecord(c, time.Time{}, "")), &rec)
		if back := (Contact{Name: rec.Name, Email: rec.Email, Organization: rec.Organization, Topic: rec.Topic, Message: rec.Message}); err != nil || back != c {
			t.Fatalf("record of %+v reads back as %+v (%v)", c, back, err)
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
		var rec store.WaitlistRecord
		err := json.Unmarshal(store.AppendWaitlistRecord(nil, waitlistRecord(w, time.Time{}, "")), &rec)
		if back := (WaitlistEntry{Email: rec.Email, Name: rec.Name, Association: rec.Association, Role: rec.Role, Size: rec.Size}); err != nil || back != w {
			t.Fatalf("record of %+v reads back as %+v (%v)", w, back, err)
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
