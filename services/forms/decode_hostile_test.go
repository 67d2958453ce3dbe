package forms

import (
	"testing"
)

// A member the form reads appears once: encoding/json keeps the last copy, a WAF or proxy in front of us
// may check the first, so "last one wins" lets a body pass a check with one value and be stored with
// another (parameter pollution). Repeats of members the form ignores change nothing and stay allowed.
func TestDecode_DuplicateKeys_Refused(t *testing.T) {
	refused := []string{
		`{"email":"a@example.com","consent":false,"consent":true}`,
		`{"email":"not an address","email":"a@example.com","consent":true}`,
		`{"email":"a@example.com","\u0065mail":"b@example.com","consent":true}`,
		`{"email":"a@example.com","consent":true,"name":null,"name":"Ada"}`,
		`{"email":"a@example.com","consent":true,"_gotcha":"","_gotcha":"spam"}`,
	}
	for _, body := range refused {
		if _, bot, errs := DecodeWaitlist([]byte(body)); bot || errs[BodyField] != CodeInvalidJSON || len(errs) != 1 {
			t.Errorf("%s: honeypot %v, errors %v, want only _body invalid_json", body, bot, errs)
		}
	}
	if _, _, errs := DecodeContact([]byte(`{"name":"A","name":"B","email":"a@b.co","message":"0123456789"}`)); errs[BodyField] != CodeInvalidJSON {
		t.Errorf("contact with name twice: %v", errs)
	}
	ok := `{"email":"a@example.com","consent":true,"utm":"x","utm":"y","nested":{"email":1,"email":2}}`
	if _, _, errs := DecodeWaitlist([]byte(ok)); errs != nil {
		t.Errorf("repeats of members the form ignores: %v", errs)
	}
}

// JSON text is UTF-8 (RFC 8259 8.1). encoding/json would replace invalid bytes with U+FFFD and store a
// name nobody typed; the body is refused instead, wherever the bytes are.
func TestDecode_InvalidUTF8_Refused(t *testing.T) {
	for _, body := range []string{
		"{\"email\":\"a@example.com\",\"consent\":true,\"name\":\"Ada \xff\"}",
		"{\"email\":\"a@example.com\",\"consent\":true,\"name\":\"\xc0\xaf\"}",         // overlong '/'
		"{\"email\":\"a@example.com\",\"consent\":true,\"name\":\"\xed\xa0\x80\"}",     // UTF-8 encoded surrogate
		"{\"email\":\"a@example.com\",\"consent\":true,\"ignored\xfe\":1}",             // in a key the form ignores
		"{\"email\":\"a@example.com\",\"consent\":true,\"name\":\"\xf4\x90\x80\x80\"}", // beyond U+10FFFF
	} {
		if _, _, errs := DecodeWaitlist([]byte(body)); errs[BodyField] != CodeInvalidJSON {
			t.Errorf("%q: %v, want _body invalid_json", body, errs)
		}
	}
	// Escapes are ASCII: a lone surrogate escape is valid JSON and decodes to U+FFFD, as in encoding/json.
	if w, _, errs := DecodeWaitlist([]byte(`{"email":"a@example.com","consent":true,"name":"\ud800"}`)); errs != nil || w.Name != "\uFFFD" {
		t.Errorf("lone surrogate escape: %q %v", w.Name, errs)
	}
}

// Control characters are refused (invalid_type): any of them in a single-line field, all but tab and
// line breaks in the message. A NUL or CRLF in a name would otherwise reach the mail to the team, the
// CSV export and whoever reads them in a terminal.
func TestDecode_ControlCharacters_Refused(t *testing.T) {
	const msg = `hello there, this is long enough`
	cases := []struct {
		body, field string
	}{
		{`{"name":"Ada\u0000Lovelace","email":"a@example.com","message":"` + msg + `"}`, "name"},
		{`{"name":"Ada\r\nBcc: x@evil.test","email":"a@example.com","message":"` + msg + `"}`, "name"},
		{`{"name":"Ada\tLovelace","email":"a@example.com","message":"` + msg + `"}`, "name"},
		{`{"name":"Ada","organization":"Club\nX-Spam: yes","email":"a@example.com","message":"` + msg + `"}`, "organization"},
		{`{"name":"Ada\u007f","email":"a@example.com","message":"` + msg + `"}`, "name"},
		{`{"name":"Ad\u0085a","email":"a@example.com","message":"` + msg + `"}`, "name"},
		{`{"name":"Ada","email":"a@example.com","message":"hello\u0000there, long enough"}`, "message"},
		{`{"name":"Ada","email":"a@example.com","message":"hello\u001bthere, long enough"}`, "message"},
	}
	for _, tc := range cases {
		if _, _, errs := DecodeContact([]byte(tc.body)); errs[tc.field] != CodeInvalidType {
			t.Errorf("%s: %v, want %s invalid_type", tc.body, errs, tc.field)
		}
	}
	for _, body := range []string{
		`{"email":"a@example.com","consent":true,"name":"Ada\u0000"}`,
		`{"email":"a@example.com","consent":true,"association":"A\r\nB"}`,
	} {
		if _, _, errs := DecodeWaitlist([]byte(body)); len(errs) != 1 || (errs["name"] != CodeInvalidType && errs["association"] != CodeInvalidType) {
			t.Errorf("%s: %v, want invalid_type", body, errs)
		}
	}
	// A message has lines and may have tabs; surrounding whitespace is trimmed as before.
	c, _, errs := DecodeContact([]byte(`{"name":" Ada ","email":"a@example.com","message":"Hello,\r\n\tline two\nline three\n"}`))
	if errs != nil || c.Message != "Hello,\r\n\tline two\nline three" || c.Name != "Ada" {
		t.Errorf("multi-line message: %q %q %v", c.Name, c.Message, errs)
	}
}

// U+2028 and U+2029 are line breaks that the C0/C1 ranges miss: in a name they split a mail subject or
// a CSV cell for some readers, and a JavaScript string before ES2019. They are refused wherever control
// characters are, the message included (it takes only tab, CR and LF, as it refuses VT and FF).
func TestDecode_LineAndParagraphSeparators_RefusedLikeControlCharacters(t *testing.T) {
	const msg = `hello there, this is long enough`
	for _, sep := range []string{`\u2028`, `\u2029`} {
		for _, tc := range []struct{ body, field string }{
			{`{"name":"Ada` + sep + `Lovelace","email":"a@example.com","message":"` + msg + `"}`, "name"},
			{`{"name":"Ada","organization":"Club` + sep + `X","email":"a@example.com","message":"` + msg + `"}`, "organization"},
			{`{"name":"Ada","email":"a@example.com","message":"hello` + sep + `there, long enough"}`, "message"},
		} {
			if _, _, errs := DecodeContact([]byte(tc.body)); errs[tc.field] != CodeInvalidType {
				t.Errorf("%s: %v, want %s invalid_type", tc.body, errs, tc.field)
			}
		}
		for _, field := range []string{"name", "association"} {
			body := `{"email":"a@example.com","consent":true,"` + field + `":"A` + sep + `B"}`
			if _, _, errs := DecodeWaitlist([]byte(body)); errs[field] != CodeInvalidType {
				t.Errorf("%s: %v, want %s invalid_type", body, errs, field)
			}
		}
	}
	// A plain form post reads the same rule.
	form := []byte("email=a%40example.com&consent=on&name=Ada%E2%80%A8Lovelace")
	if _, _, _, errs := decodeWaitlist(bodyFormat{kind: kindURLEncoded}, form, wantExtras{}); errs["name"] != CodeInvalidType {
		t.Errorf("form post with U+2028 in name: %v", errs)
	}
}
