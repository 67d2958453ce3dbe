package forms

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// formAnswer is a raw answer to a form post: no JSON to decode.
type formAnswer struct {
	code     int
	location string
	header   http.Header
	body     string
}

// postForm sends a form body from origin without following redirects.
func (h *harness) postForm(path, origin, contentType, body string, kv ...string) formAnswer {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.url+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		h.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return formAnswer{code: resp.StatusCode, location: resp.Header.Get("Location"), header: resp.Header, body: b.String()}
}

func urlencoded(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v.Encode()
}

// multipartBody builds a multipart/form-data body of fields and, when file is set, one file part.
func multipartBody(t *testing.T, file string, kv ...string) (contentType, body string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for i := 0; i+1 < len(kv); i += 2 {
		if err := w.WriteField(kv[i], kv[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if file != "" {
		fw, err := w.CreateFormFile("attachment", "notes.txt")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write([]byte(file))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.FormDataContentType(), b.String()
}

const formCT = "application/x-www-form-urlencoded"

func sitesConfig(sites ...config.Site) *config.Config {
	c := formstest.Config()
	c.Forms.Sites = sites
	return c
}

func storedWaitlist(t *testing.T, h *harness, addr string) (store.WaitlistRecord, bool) {
	t.Helper()
	raw, err := h.rdb.HGet(t.Context(), store.WaitlistEntries, addr).Result()
	if err != nil {
		return store.WaitlistRecord{}, false
	}
	var rec store.WaitlistRecord
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		t.Fatal(err)
	}
	return rec, true
}

func TestFormPost_Waitlist_StoresLikeJSONAndRedirectsToTheSitesThanksPage(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: sitesConfig(config.Site{Origin: formstest.Origin, ThanksURL: "/thanks?from=waitlist"})})
	a := h.postForm("/waitlist", formstest.Origin, formCT,
		urlencoded("email", "Ada@Example.COM", "consent", "on", "name", " Ada ", "size", "1-50", "role", "admin", "unknown", "ignored"))
	if a.code != http.StatusSeeOther || a.location != formstest.Origin+"/thanks?from=waitlist" {
		t.Fatalf("got %d Location %q, want 303 to the site's thanks page\n%s", a.code, a.location, a.body)
	}
	rec, ok := storedWaitlist(t, h, "ada@example.com")
	if !ok || rec.Name != "Ada" || rec.Size != "1–50" || rec.Role != "admin" || !rec.Consent || rec.Origin != formstest.Origin {
		t.Fatalf("stored %+v (%v)", rec, ok)
	}
	if h.counter("formsservice_forms_submissions_total", "endpoint", "waitlist", "result", "created") != 1 {
		t.Error("a form post is counted as created like a JSON one")
	}
	// The same address again: taken (200 duplicate in JSON), so the same thank-you page.
	a = h.postForm("/waitlist", formstest.Origin, formCT, urlencoded("email", "ada@example.com", "consent", "on"))
	if a.code != http.StatusSeeOther || h.counter("formsservice_forms_submissions_total", "endpoint", "waitlist", "result", "duplicate") != 1 {
		t.Fatalf("duplicate: %d", a.code)
	}
}

func TestFormPost_WithoutThanksURL_AnswersAThankYouPageWithTheJSONStatus(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	a := h.postForm("/waitlist", formstest.Origin, formCT, urlencoded("email", "ada@example.com", "consent", "on"))
	if a.code != http.StatusCreated || !strings.Contains(a.body, "You are on the waitlist") {
		t.Fatalf("got %d %s", a.code, a.body)
	}
	if ct := a.header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if csp := a.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	a = h.postForm("/waitlist", formstest.Origin, formCT, urlencoded("email", "ada@example.com", "consent", "on"))
	if a.code != http.StatusOK || !strings.Contains(a.body, "already on the list") {
		t.Fatalf("duplicate: %d %s", a.code, a.body)
	}
}

func TestFormPost_Next_IsFollowedOnTheSameOriginOnly(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: sitesConfig(config.Site{Origin: formstest.Origin, ThanksURL: "/configured"})})
	a := h.postForm("/waitlist", formstest.Origin, formCT, urlencoded("email", "a1@example.com", "consent", "on", "_next", "/welcome#top"))
	if a.code != http.StatusSeeOther || a.location != formstest.Origin+"/welcome#top" {
		t.Fatalf("a path: %d %q", a.code, a.location)
	}
	a = h.postForm("/waitlist", formstest.Origin, formCT, urlencoded("email", "a2@example.com", "consent", "on", "_next", formstest.Origin+":443/done"))
	if a.code != http.StatusSeeOther || a.location != formstest.Origin+":443/done" {
		t.Fatalf("an absolute URL on the origin: %d %q", a.code, a.location)
	}
	for _, next := range []string{"https://evil.example/", "//evil.example/x", "/\\evil.example", "http://www.example.com/x",
		"https://www.example.com.evil.example/", "https://user@www.example.com/", "javascript:alert(1)"} {
		a = h.postForm("/waitlist", formstest.Origin, formCT, urlencoded("email", "a3@example.com", "consent", "on", "_next", next))
		if a.code != http.StatusBadRequest || !strings.Contains(a.body, "_next") {
			t.Fatalf("_next %q: %d %q %s", next, a.code, a.location, a.body)
		}
	}
	if _, ok := storedWaitlist(t, h, "a3@example.com"); ok {
		t.Fatal("a submission with a foreign _next was stored")
	}
}

func TestFormPost_FieldErrors_PageListsThemWithLinksBackToTheFields(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: sitesConfig(config.Site{Origin: formstest.Origin, Name: "Example"})})
	a := h.postForm("/contact", formstest.Origin, formCT, urlencoded("name", "", "email", "nope", "message", "short"),
		"Referer", formstest.Origin+"/contact-us?x=1#form")
	if a.code != http.StatusBadRequest {
		t.Fatalf("got %d", a.code)
	}
	for _, want := range []string{
		`<a href="https://www.example.com/contact-us?x=1#name">Name</a>`,
		`<a href="https://www.example.com/contact-us?x=1#email">E-mail address</a>`,
		`<a href="https://www.example.com/contact-us?x=1#message">Message</a>`,
		"at least 10 characters", "Example",
	} {
		if !strings.Contains(a.body, want) {
			t.Errorf("the error page lacks %q:\n%s", want, a.body)
		}
	}
	// A Referer elsewhere is not linked to: the links go to the origin.
	a = h.postForm("/contact", formstest.Origin, formCT, urlencoded("email", "nope"), "Referer", "https://evil.example/form")
	if strings.Contains(a.body, "evil.example") || !strings.Contains(a.body, `href="https://www.example.com/#email"`) {
		t.Fatalf("a foreign Referer: %s", a.body)
	}
}

func TestFormPost_ErrorURL_RedirectsWithTheErrorsInTheQuery(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: sitesConfig(config.Site{Origin: formstest.Origin, ErrorURL: "/form-error?lang=en"})})
	a := h.postForm("/waitlist", formstest.Origin, formCT, urlencoded("email", "nope"))
	u, err := url.Parse(a.location)
	if a.code != http.StatusSeeOther || err != nil {
		t.Fatalf("got %d %q", a.code, a.location)
	}
	q := u.Query()
	if u.Host != "www.example.com" || u.Path != "/form-error" || q.Get("lang") != "en" ||
		q.Get("error_email") != CodeInvalidEmail || q.Get("error_consent") != CodeRequired {
		t.Fatalf("Location %q", a.location)
	}
}

func TestFormPost_Consent_IsACheckbox(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	cases := map[string]string{"on": "", "true": "", "yes": "", "1": "", "off": CodeMustBeTrue, "": CodeMustBeTrue, "No": CodeMustBeTrue, "maybe": ""}
	i := 0
	for value, code := range cases {
		i++
		addr := "c" + string(rune('a'+i)) + "@example.com"
		a := h.postForm("/waitlist", formstest.Origin, formCT, urlencoded("email", addr, "consent", value))
		if code == "" && a.code != http.StatusCreated || code != "" && (a.code != http.StatusBadRequest || !strings.Contains(a.body, "Consent")) {
			t.Errorf("consent=%q: %d, want %q", value, a.code, code)
		}
	}
	_, _, _, errs := decodeWaitlist(bodyFormat{kind: kindURLEncoded}, []byte("email=a%40example.com"), wantExtras{})
	if errs["consent"] != CodeRequired {
		t.Errorf("an unticked box: %v", errs)
	}
}

// A checkbox with its own value (<input type=checkbox name=consent value=accepted>) sends that value when
// ticked: "on" is only the default. Any value but the refusal spellings is a tick; JSON stays strict.
func TestFormPost_CheckboxWithItsOwnValue_CountsAsTicked(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for i, value := range []string{"accepted", "I agree", "2026-03 waitlist v1", "Y", "ON"} {
		addr := fmt.Sprintf("v%d@example.com", i)
		if a := h.postForm("/waitlist", formstest.Origin, formCT, urlencoded("email", addr, "consent", value)); a.code != http.StatusCreated {
			t.Errorf("consent=%q (urlencoded): %d %s, want 201", value, a.code, a.body)
		}
		ct, body := multipartBody(t, "", "email", "m"+addr, "consent", value)
		if a := h.postForm("/waitlist", formstest.Origin, ct, body); a.code != http.StatusCreated {
			t.Errorf("consent=%q (multipart): %d, want 201", value, a.code)
		}
	}
	if _, _, errs := DecodeWaitlist([]byte(`{"email":"a@example.com","consent":"accepted"}`)); errs["consent"] != CodeInvalidType {
		t.Errorf(`JSON "consent":"accepted": %v, want invalid_type`, errs)
	}
}

func TestFormPost_Multipart_Contact_StoredWithLineBreaksAsLF(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	ct, body := multipartBody(t, "", "name", "Ada", "email", "ada@example.com", "message", "Line one\r\nLine two, enough text.")
	if a := h.postForm("/contact", formstest.Origin, ct, body); a.code != http.StatusCreated {
		t.Fatalf("got %d %s", a.code, a.body)
	}
	msgs := h.rdb.XRange(t.Context(), store.ContactStream, "-", "+").Val()
	var rec store.ContactRecord
	if len(msgs) != 1 || json.Unmarshal([]byte(msgs[0].Values["m"].(string)), &rec) != nil || rec.Message != "Line one\nLine two, enough text." {
		t.Fatalf("stored %d messages: %+v", len(msgs), rec)
	}
}

func TestFormPost_FilePart_IsRefusedAndNothingStored(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	ct, body := multipartBody(t, "some file", "name", "Ada", "email", "ada@example.com", "message", "Hello there, a question.")
	a := h.postForm("/contact", formstest.Origin, ct, body)
	if a.code != http.StatusBadRequest || !strings.Contains(a.body, "only text fields are taken") {
		t.Fatalf("got %d %s", a.code, a.body)
	}
	if n := h.rdb.XLen(t.Context(), store.ContactStream).Val(); n != 0 {
		t.Fatalf("%d messages stored", n)
	}
	// An empty file input (no file chosen) sends an empty part with filename="": that is no file.
	raw := "--b\r\nContent-Disposition: form-data; name=\"attachment\"; filename=\"\"\r\nContent-Type: application/octet-stream\r\n\r\n\r\n" +
		"--b\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nada@example.com\r\n" +
		"--b\r\nContent-Disposition: form-data; name=\"consent\"\r\n\r\non\r\n--b--\r\n"
	if a := h.postForm("/waitlist", formstest.Origin, "multipart/form-data; boundary=b", raw); a.code != http.StatusCreated {
		t.Fatalf("an empty file input: %d %s", a.code, a.body)
	}
}

func TestFormPost_UnreadableBodies_AreBodyErrors(t *testing.T) {
	for name, c := range map[string]struct{ ct, body string }{
		"repeated field":       {formCT, "email=a%40example.com&consent=on&email=b%40example.com"},
		"bad percent-encoding": {formCT, "email=a%4&consent=on"},
		"not UTF-8":            {formCT, "email=a%40example.com&consent=on&name=%ff"},
		"no boundary":          {"multipart/form-data", "x"},
		"broken multipart":     {"multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nx"},
	} {
		_, _, _, errs := decodeWaitlist(formatOf([]byte(c.ct)), []byte(c.body), wantExtras{})
		if errs[BodyField] != CodeInvalidType || len(errs) != 1 {
			t.Errorf("%s: %v", name, errs)
		}
	}
}

func TestFormPost_Honeypot_IsTakenLikeASubmissionAndNothingStored(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: sitesConfig(config.Site{Origin: formstest.Origin, ThanksURL: "/thanks"})})
	a := h.postForm("/waitlist", formstest.Origin, formCT, urlencoded("email", "bot@example.com", "consent", "on", HoneypotField, "x"))
	if a.code != http.StatusSeeOther || a.location != formstest.Origin+"/thanks" {
		t.Fatalf("got %d %q", a.code, a.location)
	}
	if _, ok := storedWaitlist(t, h, "bot@example.com"); ok {
		t.Fatal("a honeypot hit was stored")
	}
}

func TestFormPost_Refusals_ArePagesWithTheJSONStatuses(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: sitesConfig(config.Site{Origin: formstest.Origin, Name: "Example", ThanksURL: "/thanks"})})
	body := urlencoded("email", "ada@example.com", "consent", "on")
	// A foreign origin, and the "null" origin of a sandboxed frame or a no-referrer page: 403, and the
	// page names no site.
	for _, origin := range []string{"https://evil.example", "null", ""} {
		a := h.postForm("/waitlist", origin, formCT, body)
		if a.code != http.StatusForbidden || !strings.Contains(a.body, "cannot be sent from here") || strings.Contains(a.body, "Example") {
			t.Errorf("origin %q: %d %s", origin, a.code, a.body)
		}
	}
	a := h.postForm("/waitlist", formstest.Origin, formCT, urlencoded("email", "ada@example.com", "name", strings.Repeat("x", MaxBodyBytes)))
	if a.code != http.StatusRequestEntityTooLarge || !strings.Contains(a.body, "more than 16 KB") {
		t.Errorf("too large: %d %s", a.code, a.body)
	}
	a = h.postForm("/waitlist", formstest.Origin, formCT+"; charset=windows-1252", body)
	if a.code != http.StatusUnsupportedMediaType {
		t.Errorf("another charset: %d", a.code)
	}
	h.redis.Stop()
	a = h.postForm("/waitlist", formstest.Origin, formCT, body)
	if a.code != http.StatusBadGateway || !strings.Contains(a.body, "could not be saved") {
		t.Errorf("store down: %d %s", a.code, a.body)
	}
	if _, err := h.rdb.Ping(t.Context()).Result(); err == nil {
		t.Fatal("the store should be down")
	}
}

func TestFormPost_RateLimited_PageSaysHowLongToWait(t *testing.T) {
	c := formstest.Config()
	c.Forms.RateLimitPerMinute = perMinute(1)
	h := newHarness(t, harnessOpts{cfg: c})
	h.postForm("/waitlist", formstest.Origin, formCT, urlencoded("email", "r1@example.com", "consent", "on"))
	a := h.postForm("/waitlist", formstest.Origin, formCT, urlencoded("email", "r2@example.com", "consent", "on"))
	if a.code != http.StatusTooManyRequests || a.header.Get("Retry-After") == "" || !strings.Contains(a.body, "again in "+a.header.Get("Retry-After")+" seconds") {
		t.Fatalf("got %d %s", a.code, a.body)
	}
}

// A plain HTML form cannot send a header, so its retry (a second click after a timeout, a reload that
// posts again) carries the key in a hidden _idempotency_key field, read exactly as the header: replayed,
// bound to the submission, the header winning when both come, the header's codes for a bad key. A JSON
// body does not read the field.
func TestFormPost_IdempotencyKeyField_HasTheHeadersSemantics(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: sitesConfig(config.Site{Origin: formstest.Origin, ErrorURL: "/form-error"})})
	stored := func() int64 { return h.rdb.XLen(t.Context(), store.ContactStream).Val() }
	contact := func(message string, kv ...string) string {
		return urlencoded(append([]string{"name", "Ada", "email", "ada@example.com", "message", message}, kv...)...)
	}
	const msg = "A question about pricing, long enough."

	a := h.postForm("/contact", formstest.Origin, formCT, contact(msg, IdempotencyKeyField, "k-1"))
	if a.code != http.StatusSeeOther && a.code != http.StatusCreated || a.header.Get(IdempotentReplayedHeader) != "" {
		t.Fatalf("first post: %d %v", a.code, a.header)
	}
	a = h.postForm("/contact", formstest.Origin, formCT, contact(msg, IdempotencyKeyField, `"k-1"`)) // the header's quoted form is the same key
	if a.header.Get(IdempotentReplayedHeader) != "true" || stored() != 1 {
		t.Fatalf("the same post again: %d, replayed %q, %d stored, want a replay of one", a.code, a.header.Get(IdempotentReplayedHeader), stored())
	}
	ct, body := multipartBody(t, "", "name", "Ada", "email", "ada@example.com", "message", msg, IdempotencyKeyField, "k-1")
	if a = h.postForm("/contact", formstest.Origin, ct, body); a.header.Get(IdempotentReplayedHeader) != "true" || stored() != 1 {
		t.Fatalf("the same post as multipart: %d, replayed %q, %d stored", a.code, a.header.Get(IdempotentReplayedHeader), stored())
	}
	if a = h.postForm("/contact", formstest.Origin, formCT, contact("Another message, long enough.", IdempotencyKeyField, "k-1")); a.code != http.StatusUnprocessableEntity || stored() != 1 {
		t.Fatalf("the key with another message: %d, %d stored, want 422 and one", a.code, stored())
	}
	// The header wins: with a new key in the header, the field's used key does not make this a 422.
	a = h.postForm("/contact", formstest.Origin, formCT, contact("Another message, long enough.", IdempotencyKeyField, "k-1"), IdempotencyKeyHeader, "k-2")
	if a.code == http.StatusUnprocessableEntity || a.header.Get(IdempotentReplayedHeader) != "" || stored() != 2 {
		t.Fatalf("header k-2 and field k-1: %d, %d stored, want a new message under k-2", a.code, stored())
	}
	for value, code := range map[string]string{strings.Repeat("k", MaxIdempotencyKey+1): CodeTooLong, "k 3": CodeInvalidType} {
		a = h.postForm("/contact", formstest.Origin, formCT, contact(msg, IdempotencyKeyField, value))
		u, _ := url.Parse(a.location)
		if a.code != http.StatusSeeOther || u == nil || u.Query().Get("error_"+IdempotencyKeyField) != code || stored() != 2 {
			t.Errorf("field key %q: %d %q, %d stored, want error_%s=%s and nothing stored", value, a.code, a.location, stored(), IdempotencyKeyField, code)
		}
	}
	// JSON reads the header only: the field is an unknown member there.
	jsonBody := `{"name":"Ada","email":"ada@example.com","message":"` + msg + `","_idempotency_key":"k-1"}`
	h.post("/contact", jsonBody).expect(t, 201, "created")
	h.post("/contact", jsonBody).expect(t, 201, "created")
	if stored() != 4 {
		t.Fatalf("%d stored, want 4: JSON ignores the field", stored())
	}
}
