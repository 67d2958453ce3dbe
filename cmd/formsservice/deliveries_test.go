package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testredis"
)

// addDeadLetter puts a dead letter where the delivery worker puts one (docs/forms.md, Storage).
func addDeadLetter(t *testing.T, rdb *redis.Client, id, address string) {
	t.Helper()
	rec, _ := json.Marshal(map[string]any{"name": "Ada", "email": address, "topic": "general", "message": "Hello there, team.", "received_at": "2026-01-02T03:04:05Z"})
	err := rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: "fs:{contact}:dead", Values: []any{
		"id", id, "m", string(rec), "reason", "webhook answered 410:\ngone", "channel", "webhook", "attempts", "20"}}).Err()
	if err != nil {
		t.Fatal(err)
	}
}

func TestDeliveriesCommand_ListRetryDrop(t *testing.T) {
	rs := testredis.Start(t)
	rdb := rs.Client()
	addDeadLetter(t, rdb, "1767323045000-0", "ada@example.com")
	addDeadLetter(t, rdb, "1767323046000-0", "bob@example.com")
	addDeadLetter(t, rdb, "1767323047000-0", "eve@example.com")

	out, _, err := formsTool(t, rs.URL(), "deliveries", "list")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "1767323045000-0") || !strings.Contains(out, "webhook answered 410: gone") || strings.Count(out, "\n") != 4 {
		t.Fatalf("list:\n%s", out)
	}
	out, _, err = formsTool(t, rs.URL(), "deliveries", "retry", "1767323045000-0")
	if err != nil || !strings.HasPrefix(out, "1767323045000-0: queued again (same ID") {
		t.Fatalf("retry: %v %q", err, out)
	}
	if n := rdb.XLen(t.Context(), "fs:{contact}:messages").Val(); n != 1 {
		t.Fatalf("%d messages queued, want 1", n)
	}
	if _, _, err := formsTool(t, rs.URL(), "deliveries", "drop", "1767323045000-0"); err == nil {
		t.Fatal("dropping a dead letter that was retried: no error")
	}
	out, _, err = formsTool(t, rs.URL(), "deliveries", "drop", "--all")
	if err != nil || strings.Count(out, ": dropped") != 2 {
		t.Fatalf("drop --all: %v %q", err, out)
	}
	out, _, _ = formsTool(t, rs.URL(), "deliveries", "list", "--format", "jsonl")
	if out != "" {
		t.Fatalf("left: %q", out)
	}
	for _, args := range [][]string{{"deliveries"}, {"deliveries", "retry"}, {"deliveries", "drop", "1-0", "--all"}, {"deliveries", "list", "x"}, {"deliveries", "resend"}} {
		if _, _, err := formsTool(t, rs.URL(), args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
