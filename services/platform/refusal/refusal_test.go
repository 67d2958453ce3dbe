package refusal

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func recorder(t *testing.T, dev bool, level slog.Level) (*Recorder, *bytes.Buffer, *prometheus.Registry) {
	t.Helper()
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	r, err := New(Options{Service: "forms", Dev: dev, Registerer: reg, Reasons: []Reason{"origin_not_allowed", "content_type"},
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: level}))})
	if err != nil {
		t.Fatal(err)
	}
	return r, &logs, reg
}

func TestRefused_Dev_ExplainsAtInfo(t *testing.T) {
	r, logs, reg := recorder(t, true, slog.LevelInfo)
	r.Refused(context.Background(), "origin_not_allowed", "forms: refused", "origin", "http://localhost:3000", "allowed", []string{"http://localhost:8080"})
	var line map[string]any
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
		t.Fatalf("%v: %q", err, logs)
	}
	if line["level"] != "INFO" || line["reason"] != "origin_not_allowed" || line["origin"] != "http://localhost:3000" {
		t.Errorf("log line: %v", line)
	}
	want := `
# HELP formsservice_forms_refusals_total Requests refused by reason. The log explains each one (what was sent, what is allowed) at debug level, at info on the dev server.
# TYPE formsservice_forms_refusals_total counter
formsservice_forms_refusals_total{reason="content_type"} 0
formsservice_forms_refusals_total{reason="origin_not_allowed"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "formsservice_forms_refusals_total"); err != nil {
		t.Error(err)
	}
	if !r.Dev() || !r.Explains(context.Background()) {
		t.Error("a dev recorder explains, and says it is dev")
	}
}

func TestRefused_Production_DebugOnly_CountedEither_Way(t *testing.T) {
	r, logs, _ := recorder(t, false, slog.LevelInfo)
	if r.Explains(context.Background()) || r.Dev() {
		t.Fatal("production at info must not explain refusals")
	}
	r.Refused(context.Background(), "content_type", "forms: refused", "content_type", "text/plain")
	r.Count("content_type")
	if logs.Len() != 0 {
		t.Errorf("production logged a refusal at info: %q", logs)
	}
	if n := testutil.ToFloat64(r.counts["content_type"]); n != 2 {
		t.Errorf("counted %v, want 2", n)
	}
	r, logs, _ = recorder(t, false, slog.LevelDebug)
	r.Refused(context.Background(), "content_type", "forms: refused", "content_type", "text/plain")
	if !strings.Contains(logs.String(), `"level":"DEBUG"`) || !strings.Contains(logs.String(), `"content_type":"text/plain"`) {
		t.Errorf("production at debug: %q", logs)
	}
}

func TestNilRecorder_DoesNothing(t *testing.T) {
	var r *Recorder
	r.Refused(context.Background(), "x", "y")
	r.Count("x")
	if r.Explains(context.Background()) || r.Dev() {
		t.Error("a nil recorder explains nothing")
	}
}
