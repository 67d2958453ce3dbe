// Package contract holds the end-to-end checks of the platform's public interface (docs/forms.md,
// docs/auth.md, docs/health.md; docs/architecture.md D7) that every way of running it must pass: the local processes (test/local) and a kind
// cluster (test/e2e) run the same checks against their own addresses.
package contract

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Forms is where the forms service is reached and what it allows.
type Forms struct {
	// BaseURL serves POST /contact and POST /waitlist, e.g. http://127.0.0.1:8081.
	BaseURL string
	// Origin is one of the allowed origins.
	Origin string
	// Client defaults to a client with a 10 s timeout.
	Client *http.Client
}

// response is one answer, with the JSON body decoded when there is one.
type response struct {
	Code   int
	Header http.Header
	Body   map[string]any
	Raw    string
}

func (f Forms) client() *http.Client {
	if f.Client != nil {
		return f.Client
	}
	return &http.Client{Timeout: 10 * time.Second}
}

func (f Forms) do(t *testing.T, method, path, origin, contentType string, body []byte) response {
	t.Helper()
	req, err := http.NewRequest(method, strings.TrimRight(f.BaseURL, "/")+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if method == http.MethodOptions {
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type")
	}
	resp, err := f.client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	r := response{Code: resp.StatusCode, Header: resp.Header, Raw: string(raw)}
	_ = json.Unmarshal(raw, &r.Body)
	return r
}

func (f Forms) post(t *testing.T, path string, v any) response {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return f.do(t, http.MethodPost, path, f.Origin, "application/json", b)
}

// UniqueEmail returns an address no earlier run used, so the checks pass against a store that persists.
func UniqueEmail(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b) + "@example.com"
}

func expect(t *testing.T, what string, r response, code int, status string) {
	t.Helper()
	if r.Code != code || r.Body["status"] != status {
		t.Fatalf("%s: HTTP %d %s, want %d with status %q", what, r.Code, r.Raw, code, status)
	}
}

// Check runs the forms contract: the spec's response table for both endpoints, from an allowed origin
// and from others, plus the CORS answers a browser needs.
func (f Forms) Check(t *testing.T) {
	t.Run("waitlist/created then duplicate in other case", func(t *testing.T) {
		email := UniqueEmail("waitlist")
		expect(t, "first submission", f.post(t, "/waitlist", map[string]any{"email": email, "consent": true, "role": "member", "size": "1–50"}), 201, "created")
		expect(t, "same address in upper case", f.post(t, "/waitlist", map[string]any{"email": strings.ToUpper(email), "consent": true}), 200, "duplicate")
	})
	t.Run("waitlist/invalid fields are named", func(t *testing.T) {
		r := f.post(t, "/waitlist", map[string]any{"email": "not-an-address", "consent": false, "role": "king"})
		expect(t, "invalid waitlist", r, 400, "invalid")
		errs, _ := r.Body["errors"].(map[string]any)
		for _, field := range []string{"email", "consent", "role"} {
			if _, ok := errs[field]; !ok {
				t.Errorf("errors lack %q: %s", field, r.Raw)
			}
		}
	})
	t.Run("contact/created", func(t *testing.T) {
		expect(t, "contact", f.post(t, "/contact", map[string]any{
			"name": "Ada Lovelace", "email": UniqueEmail("contact"), "topic": "support",
			"message": "The analytical engine weaves algebraic patterns.",
		}), 201, "created")
	})
	t.Run("contact/message too short", func(t *testing.T) {
		r := f.post(t, "/contact", map[string]any{"name": "Ada", "email": UniqueEmail("contact"), "message": "short"})
		expect(t, "short message", r, 400, "invalid")
		if errs, _ := r.Body["errors"].(map[string]any); errs["message"] == nil {
			t.Errorf("errors lack message: %s", r.Raw)
		}
	})
	t.Run("origin not allowed is 403", func(t *testing.T) {
		body := []byte(`{"email":"` + UniqueEmail("evil") + `","consent":true}`)
		for _, origin := range []string{"https://evil.example", "null", ""} {
			expect(t, "origin "+origin, f.do(t, http.MethodPost, "/waitlist", origin, "application/json", body), 403, "error")
		}
	})
	t.Run("body over 16 KB is 413", func(t *testing.T) {
		big := `{"name":"Ada","email":"` + UniqueEmail("big") + `","message":"` + strings.Repeat("x", 17*1024) + `"}`
		expect(t, "17 KB body", f.do(t, http.MethodPost, "/contact", f.Origin, "application/json", []byte(big)), 413, "error")
	})
	t.Run("wrong content type is 415", func(t *testing.T) {
		r := f.do(t, http.MethodPost, "/waitlist", f.Origin, "text/plain", []byte(`{"email":"a@example.com","consent":true}`))
		expect(t, "text/plain", r, 415, "error")
	})
	t.Run("CORS preflight from an allowed origin", func(t *testing.T) {
		r := f.do(t, http.MethodOptions, "/waitlist", f.Origin, "", nil)
		if r.Code != 204 {
			t.Fatalf("preflight: HTTP %d %s, want 204", r.Code, r.Raw)
		}
		if got := r.Header.Get("Access-Control-Allow-Origin"); got != f.Origin {
			t.Errorf("Access-Control-Allow-Origin = %q, want the origin itself", got)
		}
		if !strings.Contains(strings.ToLower(r.Header.Get("Access-Control-Allow-Headers")), "content-type") {
			t.Errorf("Access-Control-Allow-Headers = %q, want content-type", r.Header.Get("Access-Control-Allow-Headers"))
		}
		created := f.post(t, "/waitlist", map[string]any{"email": UniqueEmail("cors"), "consent": true})
		if got := created.Header.Get("Access-Control-Allow-Origin"); got != f.Origin {
			t.Errorf("a POST from the allowed origin carries Access-Control-Allow-Origin %q", got)
		}
	})
}
