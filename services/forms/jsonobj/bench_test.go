package jsonobj

import (
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// These benchmarks weigh this package, the hand-written reader of the forms' flat objects, against
// github.com/go-json-experiment/json (encoding/json/v2), which also refuses duplicate member names and
// invalid UTF-8. Both do the same work: read one POST /contact body, pick out the members the form reads
// and decode their strings. Run:
//
//	go test -run '^$' -bench 'JSONObject' -benchmem -count 5 ./services/forms/jsonobj/
//
// The figures and the decision are in the package comment (jsonobj.go).

// The members the two forms read (package forms, validate.go), and bodies they get.
var (
	contactKeys  = []string{"name", "email", "organization", "topic", "message", "_gotcha"}
	waitlistKeys = []string{"email", "consent", "name", "association", "role", "size", "_gotcha"}
)

const (
	validContact = `{"name":"Ada Lovelace","email":"ada@example.com","message":"Hello there, a question about pricing."}`
	benchContact = `{"name":"Ada Lovelace","email":"ada.lovelace@example.com","organization":"Analytical Engines Ltd",` +
		`"topic":"sales","message":"Hello team, we would like to know more about pricing for a club of 120 members. Thanks!"}`
)

// contactV2 is the v2 equivalent of Read(body, contactKeys, ...): the members kept raw, so that
// the form can still tell a string from a number, null or an object (invalid_type).
type contactV2 struct {
	Name         jsontext.Value `json:"name"`
	Email        jsontext.Value `json:"email"`
	Organization jsontext.Value `json:"organization"`
	Topic        jsontext.Value `json:"topic"`
	Message      jsontext.Value `json:"message"`
	Gotcha       jsontext.Value `json:"_gotcha"`
}

// jsonObjectBodies are real bodies of the forms: a typical message, a long one near the 16 KB limit with
// escapes and non-ASCII text, and two the forms must refuse.
var jsonObjectBodies = []struct {
	name  string
	body  string
	valid bool
}{
	{"typical", benchContact, true},
	{"long", `{"name":"Zoë Ångström","email":"zoe@example.com","topic":"support","_gotcha":"","message":"` +
		strings.Repeat(`Grüße aus Köln \"quoted\" line\n`, 450) + `"}`, true},
	{"duplicate-name", `{"email":"a@example.com","message":"hello there, this is long enough","email":"b@example.com"}`, false},
	{"invalid-utf8", `{"name":"Ada","email":"ada@example.com","message":"bad byte ` + "\xff" + ` in here, long enough"}`, false},
}

func BenchmarkJSONObject(b *testing.B) {
	for _, c := range jsonObjectBodies {
		body := []byte(c.body)
		b.Run("hand/"+c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				var vals [6]Value
				err := Read(body, contactKeys, vals[:])
				if (err == nil) != c.valid {
					b.Fatalf("err = %v", err)
				}
				for _, v := range vals {
					if v.Kind == String {
						_ = v.Text()
					}
				}
			}
		})
		b.Run("v2/"+c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				var v contactV2
				err := jsonv2.Unmarshal(body, &v)
				if (err == nil) != c.valid {
					b.Fatalf("err = %v", err)
				}
				for _, raw := range []jsontext.Value{v.Name, v.Email, v.Organization, v.Topic, v.Message, v.Gotcha} {
					if raw.Kind() == '"' {
						var s string
						if err := jsonv2.Unmarshal(raw, &s); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
		})
	}
}

// TestJSONObjectBenchBodies_BothReadersAgree keeps the benchmark honest: both readers accept and refuse
// the same bodies and read the same strings.
func TestJSONObjectBenchBodies_BothReadersAgree(t *testing.T) {
	for _, c := range jsonObjectBodies {
		var vals [6]Value
		herr := Read([]byte(c.body), contactKeys, vals[:])
		var v contactV2
		verr := jsonv2.Unmarshal([]byte(c.body), &v)
		if (herr == nil) != c.valid || (verr == nil) != c.valid {
			t.Fatalf("%s: hand %v, v2 %v, want valid=%v", c.name, herr, verr, c.valid)
		}
		if !c.valid {
			continue
		}
		var msg string
		if err := jsonv2.Unmarshal(v.Message, &msg); err != nil || msg != vals[4].Text() {
			t.Fatalf("%s: message differs (%v)", c.name, err)
		}
	}
}
