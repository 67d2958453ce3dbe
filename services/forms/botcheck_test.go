package forms

import (
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/forms/internal/verifytest"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

func secretFile(t *testing.T, secret string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// botHarness runs the forms with a bot check by provider for formstest.Origin, against a local
// siteverify endpoint.
func botHarness(t *testing.T, provider string) (*harness, *verifytest.Server) {
	t.Helper()
	verify := verifytest.Start(t, "site-secret")
	c := formstest.Config()
	c.Forms.Sites = []config.Site{{Origin: formstest.Origin, BotCheck: &config.BotCheck{
		Provider: provider, SecretFile: secretFile(t, "site-secret"), VerifyURL: verify.URL}}}
	return newHarness(t, harnessOpts{cfg: c}), verify
}

func TestBotCheck_Turnstile_TokenVerifiedBeforeStoring(t *testing.T) {
	h, verify := botHarness(t, "turnstile")
	const field = "cf-turnstile-response"
	// No token, or one the provider refuses: 400 under the widget's field, nothing stored.
	a := h.post("/waitlist", validWaitlist)
	a.expect(t, 400, "invalid")
	if a.errors[field] != CodeRequired || len(a.errors) != 1 {
		t.Fatalf("no token: %v", a.errors)
	}
	a = h.post("/waitlist", `{"email":"ada@example.com","consent":true,"cf-turnstile-response":"forged"}`)
	a.expect(t, 400, "invalid")
	if a.errors[field] != CodeMustBeTrue {
		t.Fatalf("a forged token: %v", a.errors)
	}
	a = h.post("/waitlist", `{"email":"ada@example.com","consent":true,"cf-turnstile-response":12}`)
	if a.errors[field] != CodeInvalidType {
		t.Fatalf("a number: %v", a.errors)
	}
	// Field errors come first: a token is not spent on a submission that would be refused anyway.
	verify.Issue("good", -1)
	a = h.post("/waitlist", `{"email":"nope","consent":true,"cf-turnstile-response":"good"}`)
	if a.errors["email"] != CodeInvalidEmail || len(verify.Calls()) != 1 {
		t.Fatalf("field errors: %v, provider asked %d times", a.errors, len(verify.Calls()))
	}
	if n := h.rdb.HLen(t.Context(), store.WaitlistEntries).Val(); n != 0 {
		t.Fatalf("%d entries stored", n)
	}
	h.post("/waitlist", `{"email":"ada@example.com","consent":true,"cf-turnstile-response":"good"}`).expect(t, 201, "created")
	// A token is good once (the provider says so): a bot cannot replay a person's.
	h.post("/waitlist", `{"email":"bob@example.com","consent":true,"cf-turnstile-response":"good"}`).expect(t, 400, "invalid")
	if h.counter("formsservice_forms_submissions_total", "endpoint", "waitlist", "result", "bot_refused") != 3 {
		t.Error("refusals not counted as bot_refused")
	}
}

func TestBotCheck_FormPostAndContact_hCaptchaAndReCAPTCHA(t *testing.T) {
	for provider, field := range map[string]string{"hcaptcha": "h-captcha-response", "recaptcha": "g-recaptcha-response"} {
		t.Run(provider, func(t *testing.T) {
			h, verify := botHarness(t, provider)
			verify.Issue("tok", -1)
			a := h.postForm("/contact", formstest.Origin, formCT, urlencoded("name", "Ada", "email", "ada@example.com",
				"message", "Hello there, a question.", field, "tok"))
			if a.code != http.StatusCreated {
				t.Fatalf("got %d %s", a.code, a.body)
			}
			a = h.postForm("/contact", formstest.Origin, formCT, urlencoded("name", "Ada", "email", "ada@example.com",
				"message", "Hello there, a question."))
			if a.code != http.StatusBadRequest || !strings.Contains(a.body, "Verification") {
				t.Fatalf("no token: %d %s", a.code, a.body)
			}
			if n := h.rdb.XLen(t.Context(), store.ContactStream).Val(); n != 1 {
				t.Fatalf("%d messages stored, want 1", n)
			}
		})
	}
}

func TestBotCheck_ProviderUnreachable_502AndNothingStored(t *testing.T) {
	h, verify := botHarness(t, "turnstile")
	verify.Issue("good", -1)
	verify.Fail(http.StatusServiceUnavailable)
	h.post("/waitlist", `{"email":"ada@example.com","consent":true,"cf-turnstile-response":"good"}`).expect(t, 502, "error")
	verify.Close()
	h.post("/waitlist", `{"email":"ada@example.com","consent":true,"cf-turnstile-response":"good"}`).expect(t, 502, "error")
	if n := h.rdb.HLen(t.Context(), store.WaitlistEntries).Val(); n != 0 {
		t.Fatalf("%d entries stored without a check", n)
	}
	if h.counter("formsservice_forms_submissions_total", "endpoint", "waitlist", "result", "bot_check_unavailable") != 2 {
		t.Error("not counted as bot_check_unavailable")
	}
}

func TestBotCheck_OtherOriginsAndJSONWithoutTheCheck_AreUnchanged(t *testing.T) {
	h, _ := botHarness(t, "turnstile")
	// Another allowed origin without a site: no token asked, and a repeated token member is ignored as
	// any unknown member is.
	h.post("/waitlist", `{"email":"ada@example.com","consent":true,"cf-turnstile-response":1,"cf-turnstile-response":2}`,
		"Origin", "http://localhost:3000").expect(t, 201, "created")
}

func TestBotCheck_UnreadableSecretFile_RefusesToStart(t *testing.T) {
	c := formstest.Config()
	c.Forms.Sites = []config.Site{{Origin: formstest.Origin, BotCheck: &config.BotCheck{Provider: "turnstile", SecretFile: filepath.Join(t.TempDir(), "missing")}}}
	src := &formstest.Source{}
	src.Set(t, c)
	_, err := New(Options{Config: src, Redis: newHarness(t, harnessOpts{}).rdb, Logger: slog.New(slog.DiscardHandler), Registerer: prometheus.NewRegistry()})
	if err == nil || !strings.Contains(err.Error(), "secretFile") {
		t.Fatalf("got %v", err)
	}
}

// The bot check runs after the rate limit and after an Idempotency-Key replay is known: a retry of a
// stored submission (its token is spent: tokens are good once) gets the first answer again instead of
// a 400, and a client past its rate limit gets 429 without the provider being asked, so siteverify
// calls are bounded per client by the rate limit.
func TestBotCheck_AfterTheRateLimitAndTheReplay_AReplaySpendsNoToken(t *testing.T) {
	verify := verifytest.Start(t, "site-secret")
	c := formstest.Config()
	c.Forms.RateLimitPerMinute = perMinute(3)
	c.Forms.Sites = []config.Site{{Origin: formstest.Origin, BotCheck: &config.BotCheck{
		Provider: "turnstile", SecretFile: secretFile(t, "site-secret"), VerifyURL: verify.URL}}}
	h := newHarness(t, harnessOpts{cfg: c})
	body := `{"name":"Ada","email":"ada@example.com","message":"A question about pricing.","cf-turnstile-response":"once"}`

	verify.Issue("once", -1)
	h.post("/contact", body, "Idempotency-Key", "k-1").expect(t, 201, "created")
	a := h.post("/contact", body, "Idempotency-Key", "k-1") // the client retries: the answer was lost
	a.expect(t, 201, "created")
	if a.header.Get(IdempotentReplayedHeader) != "true" || len(verify.Calls()) != 1 {
		t.Fatalf("a retry with the same key: replayed %q, provider asked %d times, want a replay and once",
			a.header.Get(IdempotentReplayedHeader), len(verify.Calls()))
	}
	// The same key with another message is refused as before (422), without asking the provider.
	other := strings.Replace(body, "pricing", "support", 1)
	h.post("/contact", other, "Idempotency-Key", "k-1").expect(t, 422, "error")
	for range 20 {
		h.post("/contact", strings.Replace(body, "once", "another", 1)).expect(t, 429, "error")
	}
	if n := len(verify.Calls()); n != 1 {
		t.Fatalf("the provider was asked %d times, want once: a client past its rate limit asks it no more", n)
	}
	if n := h.rdb.XLen(t.Context(), store.ContactStream).Val(); n != 1 {
		t.Fatalf("%d messages stored, want 1", n)
	}
}
