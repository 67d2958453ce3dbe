package forms

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

// body builds a JSON object from key/value pairs; values are encoded with encoding/json, so a Go string
// becomes a JSON string and a json.RawMessage is inserted as is.
func body(kv ...any) string {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// rep repeats a character that is two bytes in UTF-8, so that a byte count would fail every bound.
func rep(n int) string { return strings.Repeat("é", n) }

// emailOfLength builds a valid address of exactly n characters (n >= 10), with a local part of at most 64.
func emailOfLength(n int) string {
	local := strings.Repeat("a", min(64, n-6))
	rest := n - len(local) - 1 - 4 // "@" and ".com"
	var labels []string
	for rest > 0 {
		l := min(63, rest)
		if rest-l == 1 { // never leave a single character for a label plus its dot
			l--
		}
		labels = append(labels, strings.Repeat("b", l))
		rest -= l + 1
	}
	return local + "@" + strings.Join(labels, ".") + ".com"
}

func TestEmailOfLength_BuildsExactLengths(t *testing.T) {
	for _, n := range []int{10, 100, 253, 254, 255} {
		if got := len(emailOfLength(n)); got != n {
			t.Errorf("emailOfLength(%d) has %d characters", n, got)
		}
	}
}

func TestDecodeContact_FieldRules(t *testing.T) {
	base := []any{"name", "Ada", "email", "ada@example.com", "message", "Hello there, world"}
	with := func(kv ...any) string { return body(append(append([]any{}, base...), kv...)...) }
	without := func(field string) string {
		var kv []any
		for i := 0; i < len(base); i += 2 {
			if base[i] != field {
				kv = append(kv, base[i], base[i+1])
			}
		}
		return body(kv...)
	}
	cases := []struct {
		name string
		body string
		want Errors
	}{
		{"valid", with(), nil},
		{"name 119 characters", with("name", rep(119)), nil},
		{"name 120 characters", with("name", rep(120)), nil},
		{"name 121 characters", with("name", rep(121)), Errors{"name": CodeTooLong}},
		{"name missing", without("name"), Errors{"name": CodeRequired}},
		{"name null", with("name", nil), Errors{"name": CodeRequired}},
		{"name blank after trimming", with("name", " \t\n "), Errors{"name": CodeRequired}},
		{"name 120 plus surrounding spaces", with("name", "  "+rep(120)+"  "), nil},
		{"name a number", with("name", 42), Errors{"name": CodeInvalidType}},
		{"name an object", with("name", map[string]any{}), Errors{"name": CodeInvalidType}},
		{"message 9 characters", with("message", rep(9)), Errors{"message": CodeTooShort}},
		{"message 10 characters", with("message", rep(10)), nil},
		{"message 9 characters padded to 13", with("message", "  "+rep(9)+"  "), Errors{"message": CodeTooShort}},
		{"message 4000 characters", with("message", rep(4000)), nil},
		{"message 4001 characters", with("message", rep(4001)), Errors{"message": CodeTooLong}},
		{"message missing", without("message"), Errors{"message": CodeRequired}},
		{"message emoji count as one each", with("message", strings.Repeat("🙂", 10)), nil},
		{"organization 159", with("organization", rep(159)), nil},
		{"organization 160", with("organization", rep(160)), nil},
		{"organization 161", with("organization", rep(161)), Errors{"organization": CodeTooLong}},
		{"organization blank is absent", with("organization", "  "), nil},
		{"organization a bool", with("organization", true), Errors{"organization": CodeInvalidType}},
		{"email 254", with("email", emailOfLength(254)), nil},
		{"email 255", with("email", emailOfLength(255)), Errors{"email": CodeTooLong}},
		{"email missing", without("email"), Errors{"email": CodeRequired}},
		{"email blank", with("email", "   "), Errors{"email": CodeRequired}},
		{"email invalid", with("email", "ada.example.com"), Errors{"email": CodeInvalidEmail}},
		{"email an array", with("email", []string{"ada@example.com"}), Errors{"email": CodeInvalidType}},
		{"topic general", with("topic", "general"), nil},
		{"topic sales", with("topic", "sales"), nil},
		{"topic support", with("topic", "support"), nil},
		{"topic partnership", with("topic", "partnership"), nil},
		{"topic press", with("topic", "press"), nil},
		{"topic wrong", with("topic", "jobs"), Errors{"topic": CodeInvalidChoice}},
		{"topic wrong case", with("topic", "Sales"), Errors{"topic": CodeInvalidChoice}},
		{"topic a number", with("topic", 1), Errors{"topic": CodeInvalidType}},
		{"every field wrong at once", body("name", 1, "email", "x", "topic", "x", "message", "short"),
			Errors{"name": CodeInvalidType, "email": CodeInvalidEmail, "topic": CodeInvalidChoice, "message": CodeTooShort}},
		{"unknown fields are ignored", with("phone", "123", "Name", 5), nil},
		{"empty object", `{}`, Errors{"name": CodeRequired, "email": CodeRequired, "message": CodeRequired}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, honeypot, errs := DecodeContact([]byte(tc.body))
			if honeypot {
				t.Fatal("honeypot reported")
			}
			if !maps.Equal(errs, tc.want) {
				t.Fatalf("errors %v, want %v", errs, tc.want)
			}
		})
	}
}

func TestDecodeContact_TrimsAndDefaultsTopic(t *testing.T) {
	c, _, errs := DecodeContact([]byte(`{"name":"  Ada  ","email":" ada@example.com ","message":"  Hello there, world \n","organization":" ACME "}`))
	if errs != nil {
		t.Fatal(errs)
	}
	want := Contact{Name: "Ada", Email: "ada@example.com", Organization: "ACME", Topic: "general", Message: "Hello there, world"}
	if c != want {
		t.Fatalf("got %+v, want %+v", c, want)
	}
	for _, topic := range []string{`""`, `"  "`, `null`} {
		c, _, errs := DecodeContact([]byte(`{"name":"Ada","email":"ada@example.com","message":"Hello there, world","topic":` + topic + `}`))
		if errs != nil || c.Topic != DefaultTopic {
			t.Errorf("topic %s: got %q %v, want the default", topic, c.Topic, errs)
		}
	}
}

func TestDecodeWaitlist_FieldRules(t *testing.T) {
	base := []any{"email", "ada@example.com", "consent", true}
	with := func(kv ...any) string { return body(append(append([]any{}, base...), kv...)...) }
	cases := []struct {
		name string
		body string
		want Errors
	}{
		{"valid", with(), nil},
		{"consent false", with("consent", false), Errors{"consent": CodeMustBeTrue}},
		{"consent missing", body("email", "ada@example.com"), Errors{"consent": CodeRequired}},
		{"consent null", with("consent", nil), Errors{"consent": CodeRequired}},
		{"consent the string true", with("consent", "true"), Errors{"consent": CodeInvalidType}},
		{"consent the number 1", with("consent", 1), Errors{"consent": CodeInvalidType}},
		{"email missing", body("consent", true), Errors{"email": CodeRequired}},
		{"email 254", with("email", emailOfLength(254)), nil},
		{"email 255", with("email", emailOfLength(255)), Errors{"email": CodeTooLong}},
		{"email with display name", with("email", "Ada <ada@example.com>"), Errors{"email": CodeInvalidEmail}},
		{"name 119", with("name", rep(119)), nil},
		{"name 120", with("name", rep(120)), nil},
		{"name 121", with("name", rep(121)), Errors{"name": CodeTooLong}},
		{"name blank is absent", with("name", " "), nil},
		{"association 159", with("association", rep(159)), nil},
		{"association 160", with("association", rep(160)), nil},
		{"association 161", with("association", rep(161)), Errors{"association": CodeTooLong}},
		{"role admin", with("role", "admin"), nil},
		{"role officer", with("role", "officer"), nil},
		{"role member", with("role", "member"), nil},
		{"role other", with("role", "other"), nil},
		{"role wrong", with("role", "owner"), Errors{"role": CodeInvalidChoice}},
		{"role a number", with("role", 3), Errors{"role": CodeInvalidType}},
		{"size 1–50", with("size", "1–50"), nil},
		{"size 51–250", with("size", "51–250"), nil},
		{"size 251–1,000", with("size", "251–1,000"), nil},
		{"size 1,000+", with("size", "1,000+"), nil},
		{"size hyphen 1-50", with("size", "1-50"), nil},
		{"size hyphen 51-250", with("size", "51-250"), nil},
		{"size hyphen 251-1,000", with("size", "251-1,000"), nil},
		{"size wrong", with("size", "1000+"), Errors{"size": CodeInvalidChoice}},
		{"size em dash", with("size", "1—50"), Errors{"size": CodeInvalidChoice}},
		{"everything wrong", body("email", 5, "consent", "yes", "role", "x", "size", "x", "name", rep(121)),
			Errors{"email": CodeInvalidType, "consent": CodeInvalidType, "role": CodeInvalidChoice, "size": CodeInvalidChoice, "name": CodeTooLong}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, errs := DecodeWaitlist([]byte(tc.body))
			if !maps.Equal(errs, tc.want) {
				t.Fatalf("errors %v, want %v", errs, tc.want)
			}
		})
	}
}

func TestDecodeWaitlist_StoresLowerCaseAndCanonicalSize(t *testing.T) {
	for in, want := range map[string]string{"1-50": "1–50", "51-250": "51–250", "251-1,000": "251–1,000", "1–50": "1–50", "1,000+": "1,000+"} {
		w, _, errs := DecodeWaitlist([]byte(body("email", " Ada.Lovelace@Example.COM ", "consent", true, "size", in)))
		if errs != nil {
			t.Fatal(errs)
		}
		if w.Email != "ada.lovelace@example.com" || w.Size != want {
			t.Errorf("size %q: got %+v, want lower-case address and size %q", in, w, want)
		}
	}
}

func TestDecode_BodyThatIsNotAnObject_IsInvalidJSON(t *testing.T) {
	for _, b := range []string{``, ` `, `null`, `[]`, `[{"email":"a@b.co"}]`, `"text"`, `42`, `true`, `{`, `{"email":`,
		`{"email":"a@b.co",}`, `{"email":"a@b.co"} trailing`, "\xff\xfe", `{'email':'a@b.co'}`} {
		for name, decode := range map[string]func([]byte) Errors{
			"contact":  func(b []byte) Errors { _, _, e := DecodeContact(b); return e },
			"waitlist": func(b []byte) Errors { _, _, e := DecodeWaitlist(b); return e },
		} {
			if got := decode([]byte(b)); !maps.Equal(got, Errors{BodyField: CodeInvalidJSON}) {
				t.Errorf("%s %q: got %v, want _body invalid_json", name, b, got)
			}
		}
	}
}

func TestDecode_Honeypot(t *testing.T) {
	cases := []struct {
		gotcha any
		bot    bool
	}{
		{"I am a bot", true}, {"  x  ", true}, {1, true}, {true, true}, {map[string]any{}, true},
		{"", false}, {"   ", false}, {nil, false}, {false, false},
	}
	for _, tc := range cases {
		// A bot that fills the honeypot is answered as a success even when the rest is invalid.
		_, bot, errs := DecodeContact([]byte(body("_gotcha", tc.gotcha, "email", "nonsense")))
		if bot != tc.bot {
			t.Errorf("contact _gotcha=%#v: honeypot %v, want %v", tc.gotcha, bot, tc.bot)
		}
		if bot && errs != nil {
			t.Errorf("contact _gotcha=%#v: errors %v alongside the honeypot", tc.gotcha, errs)
		}
		_, bot, _ = DecodeWaitlist([]byte(body("_gotcha", tc.gotcha, "email", "a@example.com", "consent", true)))
		if bot != tc.bot {
			t.Errorf("waitlist _gotcha=%#v: honeypot %v, want %v", tc.gotcha, bot, tc.bot)
		}
	}
}
