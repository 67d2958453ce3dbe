package forms

import (
	"strings"
	"testing"
)

func TestWaitlist_IdempotencyKey_ReplaysTheFirstAnswerWithIdempotentReplayed(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	a := h.post("/waitlist", validWaitlist, "Idempotency-Key", "k1")
	a.expect(t, 201, "created")
	if a.header.Get(IdempotentReplayedHeader) != "" {
		t.Fatal("a first answer marked as replayed")
	}
	// The same entry, spelled differently: a replay of the 201, not a duplicate.
	a = h.post("/waitlist", `{ "consent": true, "email": "ada@example.com" }`, "Idempotency-Key", "k1")
	a.expect(t, 201, "created")
	if a.header.Get(IdempotentReplayedHeader) != "true" {
		t.Fatalf("a replay lacks %s: %v", IdempotentReplayedHeader, a.header)
	}
	// The same key with another entry: 422.
	h.post("/waitlist", `{"email":"bob@example.com","consent":true}`, "Idempotency-Key", "k1").expect(t, 422, "error")
	// A key whose first answer was "duplicate" replays that.
	h.post("/waitlist", validWaitlist, "Idempotency-Key", "k2").expect(t, 200, "duplicate")
	a = h.post("/waitlist", validWaitlist, "Idempotency-Key", "k2")
	a.expect(t, 200, "duplicate")
	if a.header.Get(IdempotentReplayedHeader) != "true" {
		t.Fatal("a replayed duplicate lacks the header")
	}
	if n := h.rdb.HLen(t.Context(), "fs:{waitlist}:entries").Val(); n != 1 {
		t.Fatalf("%d entries", n)
	}
	if h.counter("formsservice_forms_submissions_total", "endpoint", "waitlist", "result", "replayed") != 2 {
		t.Error("replays not counted")
	}
	// A page may read the header (CORS).
	if got := a.header.Get("Access-Control-Expose-Headers"); !strings.Contains(got, IdempotentReplayedHeader) {
		t.Errorf("Access-Control-Expose-Headers %q", got)
	}
}

func TestContact_Replay_CarriesIdempotentReplayed(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.post("/contact", validContact, "Idempotency-Key", `"abc"`).expect(t, 201, "created")
	// The legacy unquoted spelling is the same key as the structured-field string.
	a := h.post("/contact", validContact, "Idempotency-Key", "abc")
	a.expect(t, 201, "created")
	if a.header.Get(IdempotentReplayedHeader) != "true" {
		t.Fatal("not marked as a replay")
	}
	if n := h.rdb.XLen(t.Context(), "fs:{contact}:messages").Val(); n != 1 {
		t.Fatalf("%d messages", n)
	}
}

func TestParseIdempotencyKey_StructuredFieldString(t *testing.T) {
	cases := []struct{ raw, key, code string }{
		{``, "", ""},
		{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`, "8e03978e-40d5-43e8-bc93-6894a57f9324", ""},
		{`8e03978e-40d5-43e8-bc93-6894a57f9324`, "8e03978e-40d5-43e8-bc93-6894a57f9324", ""}, // legacy
		{`"with space"`, "", CodeInvalidType},                                                // a valid sf-string, but not a visible-ASCII key
		{`"a\"b\\c"`, `a"b\c`, ""},                                                           // escapes
		{`"abc";v=1`, "abc", ""},                                                             // parameters are ignored
		{`"abc`, "", CodeInvalidType},                                                        // unterminated
		{`"a\x"`, "", CodeInvalidType},                                                       // a bad escape
		{`"abc" junk`, "", CodeInvalidType},                                                  // trailing characters
		{`""`, "", CodeRequired},                                                             // a quoted empty string
		{`"` + strings.Repeat("k", 256) + `"`, "", CodeTooLong},
		{"caf\xc3\xa9", "", CodeInvalidType},
	}
	for _, c := range cases {
		key, code := parseIdempotencyKey([]byte(c.raw))
		if code != c.code || (code == "" && key != c.key) {
			t.Errorf("%q: got %q %q, want %q %q", c.raw, key, code, c.key, c.code)
		}
	}
}

func TestNames_BidiOverridesAndZeroWidthCharacters_AreInvalidType(t *testing.T) {
	for _, name := range []string{
		"Ada\u202eecalevol", "\u2066Ada\u2069", "Ada\u200bLovelace", "Ada\ufeff", "Ada\u2060", "Ada\u00ad",
		"\u200dAda", "Ada\u200c", "Ada\u200c\u200dB", "Ada\u200e", "\U000e0041",
	} {
		_, _, errs := DecodeContact([]byte(`{"name":"` + name + `","email":"ada@example.com","message":"Hello there, a question."}`))
		if errs["name"] != CodeInvalidType {
			t.Errorf("name %+q: %v", name, errs)
		}
		_, _, errs = DecodeWaitlist([]byte(`{"email":"ada@example.com","consent":true,"association":"` + name + `"}`))
		if errs["association"] != CodeInvalidType {
			t.Errorf("association %+q: %v", name, errs)
		}
	}
	// Joiners between letters are writing, not hiding: Persian with a zero-width non-joiner, an emoji
	// sequence with a zero-width joiner.
	for _, name := range []string{"می\u200cخواهم", "Ada 👩\u200d💻", "José Ñúñez"} {
		if _, _, errs := DecodeContact([]byte(`{"name":"` + name + `","email":"ada@example.com","message":"Hello there, a question."}`)); errs != nil {
			t.Errorf("name %+q refused: %v", name, errs)
		}
	}
	// A message is free text: a bidi mark there does not reach a header.
	if _, _, errs := DecodeContact([]byte(`{"name":"Ada","email":"ada@example.com","message":"Hello \u200fthere, a question."}`)); errs != nil {
		t.Errorf("message: %v", errs)
	}
}
