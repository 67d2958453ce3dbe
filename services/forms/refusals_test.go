package forms

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/internal/testproc"
	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/forms/internal/verifytest"
	"github.com/formsservice/formsservice/services/platform/config"
)

// logLines are the JSON log lines with the given reason.
func logLines(t *testing.T, logs *testproc.Buffer, reason string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for l := range strings.SplitSeq(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["reason"] == reason {
			out = append(out, m)
		}
	}
	return out
}

// The issue: a refused origin got `403 {"status":"error"}` and nothing else, not even a log line, so the
// developer could not tell which origin was sent and which are allowed. The answer stays as the spec
// says; on the dev server the log says why, at info.
func TestRefusals_Dev_AnswerUnchanged_LogSaysWhatWasSentAndWhatIsAllowed(t *testing.T) {
	logs := &testproc.Buffer{}
	h := newHarness(t, harnessOpts{dev: true, log: logs})
	h.post("/waitlist", validWaitlist, "Origin", "http://localhost:5173").expect(t, 403, "error")
	h.post("/contact", validWaitlist, "Origin", "").expect(t, 403, "error")
	h.post("/waitlist", validWaitlist, "Content-Type", "text/plain;charset=UTF-8").expect(t, 415, "error")
	h.post("/waitlist", validWaitlist, "Content-Encoding", "gzip").expect(t, 415, "error")
	h.post("/waitlist", strings.Repeat(" ", MaxBodyBytes+1)).expect(t, 413, "error")
	if a := h.do("OPTIONS", "/waitlist", map[string]string{"Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST"}, ""); a.code != 403 {
		t.Fatalf("foreign preflight: %d", a.code)
	}

	origin := logLines(t, logs, "origin_not_allowed")
	if len(origin) != 2 {
		t.Fatalf("want the POST's and the preflight's origin refusal logged, got %v\n%s", origin, logs)
	}
	for _, l := range origin {
		allowed, _ := l["allowed"].([]any)
		if l["level"] != "INFO" || l["origin"] != "http://localhost:5173" || len(allowed) != 3 || allowed[0] != formstest.Origin ||
			l["path"] != "/waitlist" || !strings.Contains(l["msg"].(string), "add it to allowedOrigins") {
			t.Errorf("origin refusal: %v", l)
		}
	}
	for reason, want := range map[string]map[string]any{
		"origin_missing":   {"origin": "", "path": "/contact"},
		"content_type":     {"content_type": "text/plain;charset=UTF-8", "allowed": "application/json, application/x-www-form-urlencoded or multipart/form-data (charset, if given, utf-8)"},
		"content_encoding": {"content_encoding": "gzip"},
		"body_too_large":   {"limit_bytes": float64(MaxBodyBytes), "content_length": float64(MaxBodyBytes + 1)},
	} {
		lines := logLines(t, logs, reason)
		if len(lines) != 1 {
			t.Errorf("%s: %d log lines, want 1\n%s", reason, len(lines), logs)
			continue
		}
		for k, v := range want {
			if lines[0][k] != v {
				t.Errorf("%s: %s = %v, want %v (%v)", reason, k, lines[0][k], v, lines[0])
			}
		}
	}
	if n := h.counter("formsservice_forms_refusals_total", "reason", "origin_not_allowed"); n != 2 {
		t.Errorf("origin_not_allowed counted %v times, want 2", n)
	}
}

// In production the answer and the counter are the same, and the explanation waits for debug level: a
// hostile page must not be able to fill the logs at info.
func TestRefusals_Production_CountedByReasonOnly_NotLoggedAtInfo(t *testing.T) {
	logs := &testproc.Buffer{}
	h := newHarness(t, harnessOpts{log: logs})
	for range 3 {
		h.post("/waitlist", validWaitlist, "Origin", "https://evil.example").expect(t, 403, "error")
	}
	h.post("/waitlist", validWaitlist, "Content-Type", "text/plain").expect(t, 415, "error")
	if strings.Contains(logs.String(), "evil.example") || strings.Contains(logs.String(), "refused") {
		t.Errorf("production logged a refusal at info:\n%s", logs)
	}
	for reason, want := range map[string]float64{"origin_not_allowed": 3, "content_type": 1, "origin_missing": 0, "body_too_large": 0, "content_encoding": 0} {
		if n := h.counter("formsservice_forms_refusals_total", "reason", reason); n != want {
			t.Errorf("%s counted %v, want %v", reason, n, want)
		}
	}
	mfs, _ := h.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "formsservice_forms_refusals_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != 1 || m.GetLabel()[0].GetName() != "reason" {
				t.Errorf("the refusals counter has labels %v: only the reason may be one", m.GetLabel())
			}
		}
	}
}

// A plain form post from a foreign origin gets the page the person can read, and explains itself to the
// developer exactly as a JSON post does (the refusal is written before the answer's form is chosen).
func TestRefusals_Dev_FormPostFromForeignOrigin_PageForThePersonLogForTheDeveloper(t *testing.T) {
	logs := &testproc.Buffer{}
	h := newHarness(t, harnessOpts{dev: true, log: logs})
	a := h.postForm("/waitlist", "https://evil.example", formCT, urlencoded("email", "ada@example.com", "consent", "on"))
	if a.code != 403 || !strings.Contains(a.body, "cannot be sent from here") || strings.Contains(a.body, "evil.example") {
		t.Fatalf("got %d %s", a.code, a.body)
	}
	a = h.postForm("/contact", formstest.Origin, formCT+"; charset=iso-8859-1", urlencoded("name", "Ada"))
	if a.code != 415 {
		t.Fatalf("a Latin-1 form: %d %s", a.code, a.body)
	}
	lines := logLines(t, logs, "origin_not_allowed")
	if len(lines) != 1 || lines[0]["origin"] != "https://evil.example" || lines[0]["path"] != "/waitlist" || lines[0]["level"] != "INFO" {
		t.Errorf("the form post's origin refusal: %v\n%s", lines, logs)
	}
	lines = logLines(t, logs, "content_type")
	if len(lines) != 1 || lines[0]["content_type"] != formCT+"; charset=iso-8859-1" {
		t.Errorf("the Latin-1 form's refusal: %v\n%s", lines, logs)
	}
}

// A failed bot check answered 400 or 502 and logged nothing the developer could act on (which provider,
// which field, what the provider said). It explains itself now, the answer unchanged.
func TestRefusals_Dev_BotCheck_MissingRefusedUnavailable_EachExplained(t *testing.T) {
	logs := &testproc.Buffer{}
	verify := verifytest.Start(t, "site-secret")
	c := formstest.Config()
	c.Forms.Sites = []config.Site{{Origin: formstest.Origin, BotCheck: &config.BotCheck{
		Provider: "turnstile", SecretFile: secretFile(t, "site-secret"), VerifyURL: verify.URL}}}
	h := newHarness(t, harnessOpts{cfg: c, dev: true, log: logs})

	a := h.postForm("/waitlist", formstest.Origin, formCT, urlencoded("email", "ada@example.com", "consent", "on"))
	if a.code != 400 || !strings.Contains(a.body, "Verification") {
		t.Fatalf("no token: %d %s", a.code, a.body)
	}
	h.post("/waitlist", `{"email":"ada@example.com","consent":true,"cf-turnstile-response":"forged"}`).expect(t, 400, "invalid")
	verify.Issue("good", -1)
	verify.Fail(503)
	h.post("/waitlist", `{"email":"ada@example.com","consent":true,"cf-turnstile-response":"good"}`).expect(t, 502, "error")

	for reason, want := range map[string]map[string]any{
		"bot_check_missing":     {"field": "cf-turnstile-response", "provider": "turnstile", "origin": formstest.Origin},
		"bot_check_failed":      {"provider_said": "bot check: token refused: the provider said invalid-input-response"},
		"bot_check_unavailable": {"err": "bot check turnstile: the verifier answered HTTP 503"},
	} {
		lines := logLines(t, logs, reason)
		if len(lines) != 1 {
			t.Errorf("%s: %d log lines, want 1\n%s", reason, len(lines), logs)
			continue
		}
		for k, v := range want {
			if lines[0][k] != v {
				t.Errorf("%s: %s = %v, want %v (%v)", reason, k, lines[0][k], v, lines[0])
			}
		}
		if n := h.counter("formsservice_forms_refusals_total", "reason", reason); n != 1 {
			t.Errorf("%s counted %v times, want 1", reason, n)
		}
	}
	if strings.Contains(logs.String(), "site-secret") {
		t.Errorf("the secret reached the log:\n%s", logs)
	}
}
