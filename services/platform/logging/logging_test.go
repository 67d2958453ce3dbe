package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestNew_WritesJSONLinesAtTheLevel(t *testing.T) {
	var b bytes.Buffer
	log := New(&b, "warn")
	log.Info("hidden")
	log.Warn("shown", "key", "value")
	var line map[string]any
	if err := json.Unmarshal(b.Bytes(), &line); err != nil || line["msg"] != "shown" || line["key"] != "value" {
		t.Fatalf("%v: %q", err, b.String())
	}
}

func TestNewWith_Text_IsOneReadableLineWithoutColourUnlessAsked(t *testing.T) {
	var b bytes.Buffer
	NewWith(&b, Options{Text: true}).Info("dev server ready", "url", "http://127.0.0.1:8080")
	out := b.String()
	if strings.HasPrefix(out, "{") || !strings.Contains(out, "INF dev server ready url=http://127.0.0.1:8080\n") || strings.Contains(out, "\x1b[") {
		t.Fatalf("text line: %q", out)
	}
	b.Reset()
	NewWith(&b, Options{Text: true, Color: true}).Warn("careful")
	if !strings.Contains(b.String(), "\x1b[") {
		t.Fatalf("coloured text has no colour: %q", b.String())
	}
}
