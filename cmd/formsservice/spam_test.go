package main

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
)

// addSpam puts kept spam where the forms service keeps it (docs/forms.md, Spam).
func addSpam(t *testing.T, rdb *redis.Client, folder, id, record string) {
	t.Helper()
	err := rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: folder, ID: id, Values: []any{
		"m", record, "v", `{"score":9,"reasons":["links","phrases"]}`}}).Err()
	if err != nil {
		t.Fatal(err)
	}
}

func TestSpamCommand_ListReleaseDelete(t *testing.T) {
	rs := testredis.Start(t)
	rdb := rs.Client()
	addSpam(t, rdb, "fs:{contact}:spam", "1767323045000-0", `{"name":"Eve","email":"eve@example.com","topic":"general","message":"Cheap pills at https://x.example","received_at":"2026-01-02T03:04:05Z"}`)
	addSpam(t, rdb, "fs:{form:demo}:spam", "1767323046000-0", `{"form":"demo","fields":{"email":"bot@example.com","notes":"Buy backlinks now"},"received_at":"2026-01-02T03:04:06Z"}`)
	addSpam(t, rdb, "fs:{form:demo}:spam", "1767323047000-0", `{"form":"demo","fields":{"email":"bot2@example.com","notes":"Casino"},"received_at":"2026-01-02T03:04:07Z"}`)

	out, _, err := formsTool(t, rs.URL(), "spam", "list", "contact")
	if err != nil || !strings.Contains(out, "1767323045000-0") || !strings.Contains(out, "links,phrases") ||
		!strings.Contains(out, "eve@example.com") || strings.Count(out, "\n") != 2 {
		t.Fatalf("list contact: %v\n%s", err, out)
	}
	out, _, err = formsTool(t, rs.URL(), "spam", "list", "demo", "--format", "jsonl")
	if err != nil || strings.Count(out, "\n") != 2 || !strings.Contains(out, `"record":{"form":"demo"`) || !strings.Contains(out, `"score":9`) {
		t.Fatalf("list demo: %v\n%s", err, out)
	}
	out, _, err = formsTool(t, rs.URL(), "spam", "release", "demo", "1767323046000-0")
	if err != nil || !strings.HasPrefix(out, "1767323046000-0: released") {
		t.Fatalf("release: %v %q", err, out)
	}
	msgs := rdb.XRange(t.Context(), "fs:{form:demo}:messages", "-", "+").Val()
	if len(msgs) != 1 || msgs[0].Values["id"] != "1767323046000-0" {
		t.Fatalf("the form's delivery stream: %v, want the released submission under its ID", msgs)
	}
	if _, _, err := formsTool(t, rs.URL(), "spam", "release", "demo", "1767323046000-0"); err == nil {
		t.Fatal("a second release: no error")
	}
	if n := rdb.XLen(t.Context(), "fs:{form:demo}:messages").Val(); n != 1 {
		t.Fatalf("a second release queued it again: %d", n)
	}
	out, _, err = formsTool(t, rs.URL(), "spam", "delete", "demo", "1767323047000-0")
	if err != nil || out != "1767323047000-0: deleted\n" || rdb.XLen(t.Context(), "fs:{form:demo}:spam").Val() != 0 {
		t.Fatalf("delete: %v %q", err, out)
	}
	for _, args := range [][]string{{"spam"}, {"spam", "list"}, {"spam", "list", "waitlist"}, {"spam", "list", "Not A Form"},
		{"spam", "release", "contact"}, {"spam", "delete", "contact", "nonsense"}, {"spam", "purge", "contact"}} {
		if _, _, err := formsTool(t, rs.URL(), args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

func TestExportCommand_SpamExcludedIncludedOrAlone(t *testing.T) {
	rs := testredis.Start(t)
	rdb := rs.Client()
	rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: "fs:{contact}:messages", ID: "1767323044000-0", Values: []any{"m",
		`{"name":"Ada","email":"ada@example.com","topic":"general","message":"A genuine question","received_at":"2026-01-02T03:04:04Z"}`}})
	addSpam(t, rdb, "fs:{contact}:spam", "1767323045000-0", `{"name":"Eve","email":"eve@example.com","topic":"general","message":"Cheap pills","received_at":"2026-01-02T03:04:05Z"}`)

	out, _, err := formsTool(t, rs.URL(), "export", "contact", "--format", "jsonl")
	if err != nil || strings.Count(out, "\n") != 1 || strings.Contains(out, "eve@") {
		t.Fatalf("export without spam: %v\n%s", err, out)
	}
	out, _, err = formsTool(t, rs.URL(), "export", "contact", "--format", "jsonl", "--spam", "include")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 2 || !strings.Contains(lines[0], "ada@") ||
		!strings.Contains(lines[1], `"email":"eve@example.com"`) || !strings.Contains(lines[1], `"spam":{"score":9,"reasons":["links","phrases"]}`) ||
		!strings.Contains(lines[1], `"id":"1767323045000-0"`) {
		t.Fatalf("export with spam: %v\n%s", err, out)
	}
	out, _, err = formsTool(t, rs.URL(), "export", "contact", "--spam", "only")
	if err != nil || !strings.HasPrefix(out, "id,received_at,score,reasons,record\n1767323045000-0,2026-01-02T03:04:05Z,9,links phrases,") || strings.Contains(out, "ada@") {
		t.Fatalf("export of the folder as CSV: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"export", "contact", "--spam", "include"}, {"export", "waitlist", "--spam", "only"}, {"export", "contact", "--spam", "maybe"}} {
		if _, _, err := formsTool(t, rs.URL(), args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
