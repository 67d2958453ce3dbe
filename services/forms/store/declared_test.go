package store

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/redis/go-redis/v9"
)

func addForm(t *testing.T, st *Store, form string, unique string, fields Values, additional Values) Result {
	t.Helper()
	rec, _ := json.Marshal(FormRecord{Form: form, Fields: fields, Additional: additional, ReceivedAt: time.Now().UTC(), Origin: "https://www.example.com"})
	r, err := st.AddSubmission(t.Context(), Submission{Form: form, Client: netip.MustParseAddr("127.0.0.1"), Record: rec, Unique: unique},
		config.DurabilityProcess)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Erasure finds an address in every declared form that ever stored a submission — declared now or not —
// in its fields and in the fields a form kept without declaring them, with the form's delivery state,
// dead letters and unique values; other people's submissions stay.
func TestForget_ErasesTheAddressFromEveryDeclaredForm(t *testing.T) {
	st, srv := testStore(t)
	rdb := srv.Client()
	addForm(t, st, "demo", "ada@example.com", Values{{Name: "email", Value: "Ada@Example.com"}, {Name: "company", Value: "Acme"}}, nil)
	addForm(t, st, "demo", "bob@example.com", Values{{Name: "email", Value: "bob@example.com"}}, nil)
	addForm(t, st, "jobs", "", Values{{Name: "cv_link", Value: "https://cv.example"}}, Values{{Name: "contact", Value: "ada@example.com"}})
	if err := FormQueue("demo").EnsureGroup(t.Context(), rdb); err != nil {
		t.Fatal(err)
	}
	// One of Ada's is read by a worker and pending; a dead letter of hers waits in the form's dead letters.
	msgs := rdb.XReadGroup(t.Context(), &redis.XReadGroupArgs{Group: DeliveryGroup, Consumer: "w1", Streams: []string{FormStream("demo"), ">"}, Count: 1}).Val()
	if len(msgs) != 1 {
		t.Fatal("no message read")
	}
	rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: FormQueue("demo").DeadLetters, Values: []any{"m", msgs[0].Messages[0].Values[RecordField]}})

	rep, err := Forget(t.Context(), rdb, "ada@EXAMPLE.com")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.FormSubmissions["demo"]) != 1 || len(rep.FormSubmissions["jobs"]) != 1 || rep.FormDeadLetters != 1 {
		t.Fatalf("report %+v", rep)
	}
	if n := rdb.XLen(t.Context(), FormStream("demo")).Val(); n != 1 {
		t.Errorf("demo holds %d submissions, want Bob's", n)
	}
	if n := rdb.XLen(t.Context(), FormStream("jobs")).Val(); n != 0 {
		t.Errorf("jobs holds %d submissions", n)
	}
	if p := rdb.XPending(t.Context(), FormStream("demo"), DeliveryGroup).Val(); p.Count != 0 {
		t.Errorf("%d still pending", p.Count)
	}
	if rdb.HExists(t.Context(), FormUnique("demo"), "ada@example.com").Val() || !rdb.HExists(t.Context(), FormUnique("demo"), "bob@example.com").Val() {
		t.Errorf("unique values after erasure: %v", rdb.HKeys(t.Context(), FormUnique("demo")).Val())
	}
	// Ada may sign up again.
	if r := addForm(t, st, "demo", "ada@example.com", Values{{Name: "email", Value: "ada@example.com"}}, nil); r.Outcome != Stored {
		t.Errorf("a sign-up after erasure: %+v", r)
	}
}

func TestExportForm_WritesAColumnPerFieldAndKeepsFormulasInert(t *testing.T) {
	st, srv := testStore(t)
	rdb := srv.Client()
	addForm(t, st, "demo", "", Values{{Name: "company", Value: "=HYPERLINK(\"x\")"}, {Name: "interests", Value: []string{"a", "b"}}}, Values{{Name: "utm", Value: "mail"}})
	addForm(t, st, "demo", "", Values{{Name: "company", Value: "Acme"}, {Name: "budget", Value: json.Number("12.5")}, {Name: "newsletter", Value: true}}, nil)
	var csv, jsonl bytes.Buffer
	if n, err := ExportForm(t.Context(), rdb, &csv, FormatCSV, "demo"); err != nil || n != 2 {
		t.Fatalf("csv: %d %v", n, err)
	}
	lines := strings.Split(strings.TrimSpace(csv.String()), "\n")
	if len(lines) != 3 || lines[0] != "id,received_at,company,interests,budget,newsletter,additional,origin" {
		t.Fatalf("csv:\n%s", csv.String())
	}
	if !strings.Contains(lines[1], `'=HYPERLINK`) || !strings.Contains(lines[1], "a; b") || !strings.Contains(lines[1], `{""utm"":""mail""}`) ||
		!strings.Contains(lines[2], ",12.5,true,,") {
		t.Errorf("csv rows:\n%s", csv.String())
	}
	if n, err := ExportForm(t.Context(), rdb, &jsonl, FormatJSONL, "demo"); err != nil || n != 2 {
		t.Fatalf("jsonl: %d %v", n, err)
	}
	var first struct {
		ID string `json:"id"`
		FormRecord
	}
	if err := json.Unmarshal([]byte(strings.Split(jsonl.String(), "\n")[0]), &first); err != nil || first.ID == "" ||
		first.Fields.Get("company") != `=HYPERLINK("x")` || first.Additional.Get("utm") != "mail" {
		t.Errorf("jsonl %q (%v)", jsonl.String(), err)
	}
	if ids, err := KnownForms(t.Context(), rdb); err != nil || strings.Join(ids, ",") != "demo" {
		t.Errorf("known forms %v %v", ids, err)
	}
}

// The record's own encoder writes the JSON encoding/json writes of it (the same values; encoding/json
// also escapes <, > and & for HTML, which a stored record does not need).
func TestAppendFormRecord_WritesWhatEncodingJSONWrites(t *testing.T) {
	r := FormRecord{Form: "demo", Fields: Values{{Name: "name", Value: "Zoë <\"q\">\u2028&"}, {Name: "n", Value: json.Number("-1.5e3")},
		{Name: "ok", Value: true}, {Name: "picked", Value: []string{"a", "b\\c"}}, {Name: "none", Value: []string{}}},
		Additional: Values{{Name: "utm", Value: "x"}}, ReceivedAt: time.Date(2026, 11, 29, 6, 0, 0, 123, time.UTC), Origin: "https://www.example.com"}
	for _, rec := range []FormRecord{r, {Form: "f", Fields: Values{}}} {
		want, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendFormRecord(nil, rec)
		var a, b any
		if err != nil || json.Unmarshal(got, &a) != nil || json.Unmarshal(want, &b) != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("got  %s (%v)\nwant %s", got, err, want)
		}
	}
}
