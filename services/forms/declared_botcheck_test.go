package forms

import (
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/forms/internal/verifytest"
	"github.com/formsservice/formsservice/services/platform/config"
)

// A declared form's own bot check (forms.declared[].botCheck): the form asks for a token whatever site
// posts it, another form of the same site does not, and the form's check replaces the site's.

// ticketForm is a small declared form; with a bot check when b is not nil.
func ticketForm(id string, b *config.BotCheck) config.DeclaredForm {
	return config.DeclaredForm{ID: id, Title: "Ticket", BotCheck: b, Fields: []config.FormField{
		{Name: "email", Type: config.FieldEmail, Required: true},
		{Name: "text", Type: config.FieldLongText, Required: true},
	}}
}

func formBotHarness(t *testing.T, provider string, edit func(*config.Config)) (*harness, *verifytest.Server) {
	t.Helper()
	verify := verifytest.Start(t, "form-secret")
	c := declaredConfig(
		ticketForm("ticket", &config.BotCheck{Provider: provider, SecretFile: secretFile(t, "form-secret"), VerifyURL: verify.URL}),
		ticketForm("plain", nil))
	if edit != nil {
		edit(c)
	}
	return newHarness(t, harnessOpts{cfg: c}), verify
}

const ticketBody = `{"email":"ada@example.com","text":"The export is empty."`

func TestDeclaredBotCheck_TheFormAsksForATokenAndOtherFormsDoNot(t *testing.T) {
	h, verify := formBotHarness(t, "turnstile", nil)
	const field = "cf-turnstile-response"
	// No site of this origin has a bot check: the form's own asks for the token.
	a := h.post("/f/ticket", ticketBody+`}`)
	a.expect(t, 400, "invalid")
	if a.errors[field] != CodeRequired || len(a.errors) != 1 {
		t.Fatalf("no token: %v", a.errors)
	}
	a = h.post("/f/ticket", ticketBody+`,"cf-turnstile-response":"forged"}`)
	if a.code != 400 || a.errors[field] != CodeMustBeTrue {
		t.Fatalf("a forged token: %d %v", a.code, a.errors)
	}
	verify.Issue("good", -1)
	h.post("/f/ticket", ticketBody+`,"cf-turnstile-response":"good"}`).expect(t, 201, "created")
	if calls := verify.Calls(); len(calls) != 2 || calls[1].Secret != "form-secret" || calls[1].Response != "good" {
		t.Fatalf("siteverify was asked %+v", calls)
	}
	// A token is good once.
	h.post("/f/ticket", strings.Replace(ticketBody, "ada@", "bob@", 1)+`,"cf-turnstile-response":"good"}`).expect(t, 400, "invalid")
	if n := len(storedForm(t, h, "ticket")); n != 1 {
		t.Fatalf("%d submissions stored, want 1", n)
	}
	// Another form of the same origin has no bot check: no token asked, and one sent is a field it does
	// not declare.
	h.post("/f/plain", ticketBody+`}`).expect(t, 201, "created")
	a = h.post("/f/plain", ticketBody+`,"cf-turnstile-response":"x"}`)
	if a.code != 400 || a.errors[field] != CodeUnknownField {
		t.Fatalf("a token sent to a form without a check: %d %v", a.code, a.errors)
	}
	// The built-in forms keep the site's (none here).
	h.post("/waitlist", validWaitlist).expect(t, 201, "created")
	if h.counter("formsservice_forms_declared_submissions_total", "form", "ticket", "result", "bot_refused") != 3 {
		t.Error("the form's refusals are not counted as bot_refused under its id")
	}
	// A plain HTML form post reads the widget's field from the form.
	verify.Issue("form-token", -1)
	p := h.postForm("/f/ticket", formstest.Origin, formCT, urlencoded("email", "cy@example.com", "text", "From a form.", field, "form-token"))
	if p.code != http.StatusCreated {
		t.Fatalf("a form post with a token: %d %s", p.code, p.body)
	}
	if n := len(storedForm(t, h, "ticket")); n != 2 {
		t.Fatalf("%d submissions stored after the form post, want 2", n)
	}
}

// The form's check replaces the posting site's: the site asks for hCaptcha, the form for Turnstile.
func TestDeclaredBotCheck_ReplacesTheSitesCheck(t *testing.T) {
	siteVerify := verifytest.Start(t, "site-secret")
	h, verify := formBotHarness(t, "turnstile", func(c *config.Config) {
		c.Forms.Sites = []config.Site{{Origin: formstest.Origin, BotCheck: &config.BotCheck{
			Provider: "hcaptcha", SecretFile: secretFile(t, "site-secret"), VerifyURL: siteVerify.URL}}}
	})
	siteVerify.Issue("site-token", -1)
	a := h.post("/f/ticket", ticketBody+`,"h-captcha-response":"site-token"}`)
	if a.code != 400 || a.errors["h-captcha-response"] != CodeUnknownField {
		t.Fatalf("the site's token on a form with its own check: %d %v", a.code, a.errors)
	}
	a = h.post("/f/ticket", ticketBody+`}`)
	if a.code != 400 || a.errors["cf-turnstile-response"] != CodeRequired {
		t.Fatalf("no token on a form with its own check: %d %v", a.code, a.errors)
	}
	verify.Issue("form-token", -1)
	h.post("/f/ticket", ticketBody+`,"cf-turnstile-response":"form-token"}`).expect(t, 201, "created")
	// A form without its own check takes the site's, as the built-in forms do.
	h.post("/f/plain", ticketBody+`}`).expect(t, 400, "invalid")
	h.post("/f/plain", ticketBody+`,"h-captcha-response":"site-token"}`).expect(t, 201, "created")
	if n := len(siteVerify.Calls()); n != 1 {
		t.Fatalf("the site's provider was asked %d times, want once", n)
	}
}

// Where and for what, as for a site's check: the answer's hostname must be the posting origin's host,
// and with action set, its action must be exactly that.
func TestDeclaredBotCheck_HostnameAndActionCompared(t *testing.T) {
	h, verify := formBotHarness(t, "turnstile", func(c *config.Config) {
		c.Forms.Declared[0].BotCheck.Action = "ticket"
	})
	// Issued with a score, the answers carry an action (as reCAPTCHA v3's and Turnstile's do).
	verify.Issue("t1", 0.9)
	verify.Answer("www.example.com", "signin") // solved on the site, for another page
	a := h.post("/f/ticket", ticketBody+`,"cf-turnstile-response":"t1"}`)
	if a.code != 400 || a.errors["cf-turnstile-response"] != CodeMustBeTrue {
		t.Fatalf("another action: %d %v", a.code, a.errors)
	}
	verify.Issue("t2", 0.9)
	verify.Answer("evil.example.net", "ticket") // the right action, on another site
	a = h.post("/f/ticket", ticketBody+`,"cf-turnstile-response":"t2"}`)
	if a.code != 400 || a.errors["cf-turnstile-response"] != CodeMustBeTrue {
		t.Fatalf("another hostname: %d %v", a.code, a.errors)
	}
	verify.Issue("t3", 0.9)
	verify.Answer("WWW.Example.COM", "ticket")
	h.post("/f/ticket", ticketBody+`,"cf-turnstile-response":"t3"}`).expect(t, 201, "created")
}

// The order of the built-in forms': after the fields, after the rate limit and after a known
// Idempotency-Key — a replay spends no token, a client past its rate limit asks the provider nothing.
func TestDeclaredBotCheck_AfterTheRateLimitAndTheReplay(t *testing.T) {
	h, verify := formBotHarness(t, "turnstile", func(c *config.Config) { c.Forms.RateLimitPerMinute = perMinute(3) })
	verify.Issue("once", -1)
	a := h.post("/f/ticket", `{"email":"nope","text":"x","cf-turnstile-response":"once"}`)
	if a.code != 400 || a.errors["email"] != CodeInvalidEmail || len(verify.Calls()) != 0 {
		t.Fatalf("field errors: %d %v, provider asked %d times", a.code, a.errors, len(verify.Calls()))
	}
	body := ticketBody + `,"cf-turnstile-response":"once"}`
	h.post("/f/ticket", body, "Idempotency-Key", "k-1").expect(t, 201, "created")
	a = h.post("/f/ticket", body, "Idempotency-Key", "k-1")
	a.expect(t, 201, "created")
	if a.header.Get(IdempotentReplayedHeader) != "true" || len(verify.Calls()) != 1 {
		t.Fatalf("a retry: replayed %q, provider asked %d times", a.header.Get(IdempotentReplayedHeader), len(verify.Calls()))
	}
	h.post("/f/ticket", strings.Replace(body, "empty", "full", 1), "Idempotency-Key", "k-1").expect(t, 422, "error")
	for range 10 {
		h.post("/f/ticket", strings.Replace(body, "once", "another", 1)).expect(t, 429, "error")
	}
	if n := len(verify.Calls()); n != 1 {
		t.Fatalf("the provider was asked %d times, want once", n)
	}
	if n := len(storedForm(t, h, "ticket")); n != 1 {
		t.Fatalf("%d submissions stored, want 1", n)
	}
}

// Fails closed: a provider that cannot be asked is 502 and nothing is stored; a secret file that cannot
// be read stops the start, and after a reload answers 502.
func TestDeclaredBotCheck_UnavailableAndUnreadableSecret(t *testing.T) {
	h, verify := formBotHarness(t, "recaptcha", nil)
	verify.Issue("good", 0.9)
	verify.Fail(http.StatusServiceUnavailable)
	h.post("/f/ticket", ticketBody+`,"g-recaptcha-response":"good"}`).expect(t, 502, "error")
	if n := len(storedForm(t, h, "ticket")); n != 0 {
		t.Fatalf("%d submissions stored without a check", n)
	}
	if h.counter("formsservice_forms_declared_submissions_total", "form", "ticket", "result", "bot_check_unavailable") != 1 {
		t.Error("not counted as bot_check_unavailable")
	}

	missing := filepath.Join(t.TempDir(), "missing")
	bad := declaredConfig(ticketForm("ticket", &config.BotCheck{Provider: "turnstile", SecretFile: missing}))
	src := &formstest.Source{}
	src.Set(t, bad)
	_, err := New(Options{Config: src, Redis: h.rdb, Logger: slog.New(slog.DiscardHandler), Registerer: prometheus.NewRegistry()})
	if err == nil || !strings.Contains(err.Error(), "forms.declared ticket: botCheck.secretFile") {
		t.Fatalf("New with an unreadable secret: %v", err)
	}
	h.src.Set(t, bad) // a reload
	h.post("/f/ticket", ticketBody+`,"cf-turnstile-response":"good"}`).expect(t, 502, "error")
	h.post("/f/plain", ticketBody+`}`).expect(t, 404, "error") // the reload dropped it: the new configuration is live
}
