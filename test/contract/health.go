package contract

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Health checks GET /health (the IETF health-check format, docs/architecture.md D6) at baseURL and returns the body.
// wantChecks are keys that must be reported, e.g. "redis:responseTime".
func Health(t *testing.T, baseURL string, wantChecks ...string) map[string]any {
	t.Helper()
	return HealthWith(t, &http.Client{Timeout: 10 * time.Second}, baseURL, wantChecks...)
}

// HealthWith is Health through the given client (one that reaches baseURL through an ingress, say).
func HealthWith(t *testing.T, hc *http.Client, baseURL string, wantChecks ...string) map[string]any {
	t.Helper()
	resp, err := hc.Get(strings.TrimRight(baseURL, "/") + "/health")
	if err != nil {
		t.Fatalf("GET /health: %v", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/health+json" {
		t.Errorf("GET /health Content-Type = %q, want application/health+json", resp.Header.Get("Content-Type"))
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("GET /health body is not JSON: %v\n%s", err, raw)
	}
	status, _ := body["status"].(string)
	switch {
	case (status == "pass" || status == "warn") && resp.StatusCode == http.StatusOK:
	case status == "fail" && resp.StatusCode == http.StatusServiceUnavailable:
		t.Errorf("the platform reports fail: %s", raw)
	default:
		t.Fatalf("GET /health: HTTP %d with status %q, want 200 pass|warn or 503 fail\n%s", resp.StatusCode, status, raw)
	}
	checks, _ := body["checks"].(map[string]any)
	for _, key := range wantChecks {
		list, ok := checks[key].([]any)
		if !ok || len(list) == 0 {
			t.Errorf("GET /health reports no %q check: %s", key, raw)
			continue
		}
		for _, c := range list {
			if m, _ := c.(map[string]any); m["status"] != "pass" && m["status"] != "warn" {
				t.Errorf("check %s: %v", key, m)
			}
		}
	}
	return body
}
