package store

import (
	"encoding/json"
	"testing"
	"time"
)

var awkward = []string{"", "plain", `quote " backslash \ slash /`, "line\nbreak\r\ttab", "\x00\x01\x1f\x7f",
	"<script>&amp;", "ünïcödé 🙂 \u2028\u2029", "\xff invalid utf-8 \xc3\x28"}

func TestRecords_DecodeToWhatWasEncoded(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 890123456, time.UTC)
	for _, s := range awkward {
		w := WaitlistRecord{Email: "a@b.co", Name: s, Association: s, Role: "member", Size: "1–50",
			Consent: true, CreatedAt: at, Origin: s}
		var gotW WaitlistRecord
		if err := json.Unmarshal(AppendWaitlistRecord(nil, w), &gotW); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		want, _ := json.Marshal(w) // encoding/json's reading of the same record is the reference
		var wantW WaitlistRecord
		_ = json.Unmarshal(want, &wantW)
		if gotW != wantW {
			t.Errorf("waitlist %q: got %+v, want %+v", s, gotW, wantW)
		}

		c := ContactRecord{Name: s, Email: "a@b.co", Organization: s, Topic: "press", Message: s, ReceivedAt: at, Origin: s}
		var gotC, wantC ContactRecord
		if err := json.Unmarshal(AppendContactRecord(nil, c), &gotC); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		want, _ = json.Marshal(c)
		_ = json.Unmarshal(want, &wantC)
		if gotC != wantC {
			t.Errorf("contact %q: got %+v, want %+v", s, gotC, wantC)
		}
	}
}
