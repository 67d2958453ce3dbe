package forms

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// FuzzDecodeDeclared holds the declared forms' reader to its promises for any body in any format: no
// panic; an accepted submission holds only declared fields (or, with keep, bounded text of others),
// each within its declaration, and its record survives the store's JSON round trip.
func FuzzDecodeDeclared(f *testing.F) {
	for _, seed := range []string{validDemo, `{}`, `{"interests":["forms","forms"]}`, `{"budget":1e999}`, `{"company":"\u2028"}`,
		"company=Acme&email=a%40example.com&consent=on&interests=forms&interests=health", "a=1&a=2", `{"x":{"y":[1]}}`} {
		f.Add([]byte(seed), uint8(0), true)
		f.Add([]byte(seed), uint8(1), false)
	}
	form := demoForm()
	kept := demoForm()
	kept.AdditionalFields = config.AdditionalFieldsKeep
	f.Fuzz(func(t *testing.T, body []byte, kind uint8, keep bool) {
		decl := &form
		if keep {
			decl = &kept
		}
		bf := bodyFormat{kind: kindJSON}
		if kind%2 == 1 {
			bf = bodyFormat{kind: kindURLEncoded}
		}
		d, _, honeypot, errs := decodeDeclared(decl, bf, body, wantExtras{next: bf.kind != kindJSON})
		if honeypot || errs != nil {
			return
		}
		for _, v := range d.fields {
			fd := fieldOf(decl, v.Name)
			if fd == nil {
				t.Fatalf("stored the undeclared field %q", v.Name)
			}
			switch x := v.Value.(type) {
			case string:
				if !utf8.ValidString(x) || utf8.RuneCountInString(x) > max(fd.MaxLen(), 2000) || x != strings.TrimSpace(x) {
					t.Fatalf("%s: %q", v.Name, x)
				}
				if fd.Type == config.FieldOneOf && !slices.Contains(fd.Choices, x) {
					t.Fatalf("%s: %q is not a choice", v.Name, x)
				}
			case []string:
				if fd.Type != config.FieldManyOf || len(x) == 0 || fd.MaxChoices > 0 && len(x) > fd.MaxChoices {
					t.Fatalf("%s: %q", v.Name, x)
				}
			}
		}
		if !decl.Keep() && len(d.additional) > 0 || len(d.additional) > config.MaxKeptFields {
			t.Fatalf("kept %d undeclared fields", len(d.additional))
		}
		for _, fd := range decl.Fields {
			if fd.Required && d.fields.Get(fd.Name) == nil {
				t.Fatalf("accepted without the required %s", fd.Name)
			}
		}
		rec, err := json.Marshal(store.FormRecord{Form: decl.ID, Fields: d.fields, Additional: d.additional})
		if err != nil {
			t.Fatal(err)
		}
		var back store.FormRecord
		if err := json.Unmarshal(rec, &back); err != nil || len(back.Fields) != len(d.fields) || len(back.Additional) != len(d.additional) {
			t.Fatalf("round trip of %s: %v", rec, err)
		}
	})
}
