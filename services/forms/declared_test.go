package forms

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/redis/go-redis/v9"
)

// demoForm is a "request a demo" form with a field of every type.
func demoForm() config.DeclaredForm {
	return config.DeclaredForm{
		ID: "demo", Title: "Request a demo", Unique: "email",
		Fields: []config.FormField{
			{Name: "company", Label: "Company", Type: config.FieldText, Required: true, MaxLength: 80},
			{Name: "email", Label: "Work e-mail", Type: config.FieldEmail, Required: true},
			{Name: "role", Type: config.FieldOneOf, Choices: []string{"engineer", "manager", "other"}},
			{Name: "budget", Type: config.FieldNumber, Min: "0", Max: "1000000"},
			{Name: "phone", Type: config.FieldPhone},
			{Name: "website", Type: config.FieldURL},
			{Name: "start", Type: config.FieldDate, Min: "2026-01-01"},
			{Name: "interests", Type: config.FieldManyOf, Choices: []string{"forms", "sign-in", "health"}, MaxChoices: 2},
			{Name: "newsletter", Type: config.FieldCheckbox},
			{Name: "notes", Type: config.FieldLongText, MinLength: 5},
			{Name: "consent", Type: config.FieldConsent},
		},
	}
}

func declaredConfig(forms ...config.DeclaredForm) *config.Config {
	c := formstest.Config()
	c.Forms.Declared = forms
	return c
}

// storedForm returns the records of a declared form's stream, oldest first.
func storedForm(t *testing.T, h *harness, id string) []store.FormRecord {
	t.Helper()
	msgs, err := h.rdb.XRange(context.Background(), store.FormStream(id), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []store.FormRecord
	for _, m := range msgs {
		var r store.FormRecord
		if err := json.Unmarshal([]byte(m.Values[store.RecordField].(string)), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

const validDemo = `{"company":"Acme","email":"Ada@Example.com","role":"engineer","budget":25000.5,"phone":"+44 20 7946 0018",
"website":"https://acme.example","start":"2026-03-31","interests":["forms","health"],"newsletter":true,
"notes":"Line one\nline two","consent":true}`

func TestDeclared_StoresEveryFieldTypeInDeclaredOrder(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: declaredConfig(demoForm())})
	h.post("/f/demo", validDemo).expect(t, http.StatusCreated, "created")

	recs := storedForm(t, h, "demo")
	if len(recs) != 1 {
		t.Fatalf("stored %d records, want 1", len(recs))
	}
	r := recs[0]
	var names []string
	for _, f := range r.Fields {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, ","); got != "company,email,role,budget,phone,website,start,interests,newsletter,notes,consent" {
		t.Errorf("fields in order %s", got)
	}
	if r.Form != "demo" || r.Origin != formstest.Origin || r.ReceivedAt.IsZero() {
		t.Errorf("record %+v", r)
	}
	for name, want := range map[string]string{"budget": "25000.5", "interests": "[forms health]", "newsletter": "true", "notes": "Line one\nline two", "email": "Ada@Example.com"} {
		if got := strings.TrimSpace(strings.ReplaceAll(jsonText(r.Fields.Get(name)), "\"", "")); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if got := h.counter("formsservice_forms_declared_submissions_total", "form", "demo", "result", "created"); got != 1 {
		t.Errorf("declared created counter = %v", got)
	}
}

func jsonText(v any) string {
	switch x := v.(type) {
	case []string:
		return "[" + strings.Join(x, " ") + "]"
	case json.Number:
		return string(x)
	case bool:
		if x {
			return "true"
		}
		return "false"
	case string:
		return x
	}
	return "<nil>"
}

func TestDeclared_UniqueFieldAnswersDuplicate(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: declaredConfig(demoForm())})
	h.post("/f/demo", `{"company":"Acme","email":"ada@example.com","consent":true}`).expect(t, http.StatusCreated, "created")
	// The same address in another case is the same person.
	h.post("/f/demo", `{"company":"Acme 2","email":"ADA@example.com","consent":true}`).expect(t, http.StatusOK, "duplicate")
	h.post("/f/demo", `{"company":"Acme","email":"bob@example.com","consent":true}`).expect(t, http.StatusCreated, "created")
	if n := len(storedForm(t, h, "demo")); n != 2 {
		t.Fatalf("stored %d records, want 2", n)
	}
}

func TestDeclared_RefusesEachBadFieldByName(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: declaredConfig(demoForm())})
	base := map[string]any{"company": "Acme", "email": "ada@example.com", "consent": true}
	for _, tc := range []struct {
		field string
		value any
		code  string
	}{
		{"fax", "+1 555 0100", CodeUnknownField},
		{"company", "", CodeRequired},
		{"company", strings.Repeat("x", 81), CodeTooLong},
		{"company", "Acme\u2028Corp", CodeInvalidType},
		{"email", "not-an-address", CodeInvalidEmail},
		{"role", "ceo", CodeInvalidChoice},
		{"budget", "lots", CodeInvalidFormat},
		{"budget", 2000000, CodeOutOfRange},
		{"budget", -1, CodeOutOfRange},
		{"budget", true, CodeInvalidType},
		{"phone", "12", CodeInvalidFormat},
		{"phone", "call me", CodeInvalidFormat},
		{"website", "ftp://acme.example", CodeInvalidFormat},
		{"website", "https://", CodeInvalidFormat},
		{"start", "2026-13-01", CodeInvalidFormat},
		{"start", "2025-12-31", CodeOutOfRange},
		{"interests", []string{"forms", "billing"}, CodeInvalidChoice},
		{"interests", []string{"forms", "forms"}, CodeInvalidChoice},
		{"interests", []string{"forms", "sign-in", "health"}, CodeOutOfRange},
		{"interests", "forms", CodeInvalidType},
		{"newsletter", "yes", CodeInvalidType},
		{"notes", "hey", CodeTooShort},
		{"consent", false, CodeMustBeTrue},
	} {
		body := map[string]any{}
		for k, v := range base {
			body[k] = v
		}
		body[tc.field] = tc.value
		b, _ := json.Marshal(body)
		a := h.post("/f/demo", string(b))
		if a.code != http.StatusBadRequest || a.status != "invalid" || a.errors[tc.field] != tc.code || len(a.errors) != 1 {
			t.Errorf("%s=%v: got %d %s, want 400 {%s: %s}", tc.field, tc.value, a.code, a.raw, tc.field, tc.code)
		}
	}
	if n := len(storedForm(t, h, "demo")); n != 0 {
		t.Fatalf("stored %d records of refused submissions", n)
	}
	if got := h.counter("formsservice_forms_declared_submissions_total", "form", "demo", "result", "invalid"); got != 23 {
		t.Errorf("declared invalid counter = %v, want 23", got)
	}
}

func TestDeclared_AdditionalFieldsKeepStoresThemBounded(t *testing.T) {
	f := demoForm()
	f.AdditionalFields = config.AdditionalFieldsKeep
	h := newHarness(t, harnessOpts{cfg: declaredConfig(f)})
	h.post("/f/demo", `{"company":"Acme","email":"ada@example.com","consent":true,"utm_source":" newsletter ","fax":""}`).
		expect(t, http.StatusCreated, "created")
	recs := storedForm(t, h, "demo")
	if len(recs) != 1 || len(recs[0].Additional) != 1 || recs[0].Additional.Get("utm_source") != "newsletter" {
		t.Fatalf("kept %+v", recs)
	}
	a := h.post("/f/demo", `{"company":"Acme","email":"bob@example.com","consent":true,"utm_source":"`+strings.Repeat("x", config.MaxKeptFieldLength+1)+`"}`)
	if a.code != http.StatusBadRequest || a.errors["utm_source"] != CodeTooLong {
		t.Errorf("an over-long kept field: %d %s", a.code, a.raw)
	}
	a = h.post("/f/demo", `{"company":"Acme","email":"bob@example.com","consent":true,"utm":{"a":1}}`)
	if a.code != http.StatusBadRequest || a.errors["utm"] != CodeInvalidType {
		t.Errorf("a kept field that is not text: %d %s", a.code, a.raw)
	}
	var many []string
	for i := range config.MaxKeptFields + 1 {
		many = append(many, `"x`+strings.Repeat("y", i)+`":"v"`)
	}
	a = h.post("/f/demo", `{"company":"Acme","email":"bob@example.com","consent":true,`+strings.Join(many, ",")+`}`)
	if a.code != http.StatusBadRequest || len(a.errors) != 1 {
		t.Errorf("more kept fields than the bound: %d %s", a.code, a.raw)
	}
}

func TestDeclared_UnknownFormOriginsAndBuiltIns(t *testing.T) {
	f := demoForm()
	f.Origins = []string{"http://localhost:3000", "https://*.example.org"}
	h := newHarness(t, harnessOpts{cfg: declaredConfig(f)})
	// A pattern of allowedOrigins in the form's origins matches as it does there.
	h.post("/f/demo", `{"company":"Acme","email":"pat@example.com","consent":true}`, "Origin", "https://shop.example.org").
		expect(t, http.StatusCreated, "created")

	a := h.post("/f/nope", `{}`)
	if a.code != http.StatusNotFound || !strings.Contains(a.raw, `"unknown_form"`) || a.header.Get("Access-Control-Allow-Origin") != formstest.Origin {
		t.Errorf("unknown form: %d %s %v", a.code, a.raw, a.header)
	}
	// An origin of allowedOrigins that the form does not list.
	a = h.post("/f/demo", validDemo)
	a.expect(t, http.StatusForbidden, "error")
	if a.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("a 403 for an unlisted origin allows it to read the answer")
	}
	h.post("/f/demo", validDemo, "Origin", "http://localhost:3000").expect(t, http.StatusCreated, "created")
	// A foreign origin is refused before anything else, as on the built-in forms.
	h.post("/f/nope", `{}`, "Origin", "https://evil.example").expect(t, http.StatusForbidden, "error")

	// The built-in forms answer under their ids exactly as at their own paths.
	h.post("/f/contact", validContact).expect(t, http.StatusCreated, "created")
	h.post("/f/waitlist", validWaitlist).expect(t, http.StatusCreated, "created")
	h.post("/f/waitlist", validWaitlist).expect(t, http.StatusOK, "duplicate")
	if n, _ := h.rdb.XLen(context.Background(), store.ContactStream).Result(); n != 1 {
		t.Errorf("contact stream holds %d, want 1", n)
	}
}

func TestDeclared_IdempotencyKeyReplaysTheFirstAnswer(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: declaredConfig(demoForm())})
	body := `{"company":"Acme","email":"ada@example.com","consent":true}`
	h.post("/f/demo", body, "Idempotency-Key", "k1").expect(t, http.StatusCreated, "created")
	a := h.post("/f/demo", body, "Idempotency-Key", "k1")
	a.expect(t, http.StatusCreated, "created")
	if a.header.Get(IdempotentReplayedHeader) != "true" {
		t.Errorf("a replay is not marked")
	}
	h.post("/f/demo", `{"company":"Other","email":"ada@example.com","consent":true}`, "Idempotency-Key", "k1").
		expect(t, http.StatusUnprocessableEntity, "error")
	// A duplicate's key replays the duplicate.
	h.post("/f/demo", `{"company":"Acme 2","email":"ada@example.com","consent":true}`, "Idempotency-Key", "k2").expect(t, http.StatusOK, "duplicate")
	a = h.post("/f/demo", `{"company":"Acme 2","email":"ada@example.com","consent":true}`, "Idempotency-Key", "k2")
	a.expect(t, http.StatusOK, "duplicate")
	if a.header.Get(IdempotentReplayedHeader) != "true" {
		t.Errorf("a duplicate's replay is not marked")
	}
	if n := len(storedForm(t, h, "demo")); n != 1 {
		t.Fatalf("stored %d records, want 1", n)
	}
}

func TestDeclared_PlainHTMLFormPosts(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: declaredConfig(demoForm())})
	// A group of checkboxes sends its name once per ticked box; a ticked box its own value.
	a := h.postForm("/f/demo", formstest.Origin, formCT, urlencoded("company", "Acme", "email", "ada@example.com",
		"interests", "forms", "interests", "sign-in", "newsletter", "subscribe", "consent", "accepted", "budget", "12",
		"_next", "/thanks"))
	if a.code != http.StatusSeeOther || a.location != formstest.Origin+"/thanks" {
		t.Fatalf("urlencoded: %d %q %s", a.code, a.location, a.body)
	}
	ct, body := multipartBody(t, "", "company", "Acme", "email", "bob@example.com", "interests", "health", "consent", "on")
	if a := h.postForm("/f/demo", formstest.Origin, ct, body); a.code != http.StatusCreated {
		t.Fatalf("multipart: %d %s", a.code, a.body)
	}
	recs := storedForm(t, h, "demo")
	if len(recs) != 2 {
		t.Fatalf("stored %d", len(recs))
	}
	if got := jsonText(recs[0].Fields.Get("interests")); got != "[forms sign-in]" {
		t.Errorf("interests %s", got)
	}
	if recs[0].Fields.Get("newsletter") != true || recs[1].Fields.Get("newsletter") != false {
		t.Errorf("newsletter %v, %v", recs[0].Fields.Get("newsletter"), recs[1].Fields.Get("newsletter"))
	}
	if got := jsonText(recs[0].Fields.Get("budget")); got != "12" {
		t.Errorf("budget %s", got)
	}
	// An error page names the declared label and the bound.
	a = h.postForm("/f/demo", formstest.Origin, formCT, urlencoded("company", strings.Repeat("x", 81), "email", "carol@example.com", "consent", "on", "fax", "1"))
	if a.code != http.StatusBadRequest || !strings.Contains(a.body, "Company") || !strings.Contains(a.body, "at most 80 characters") ||
		!strings.Contains(a.body, "fax") || !strings.Contains(a.body, "does not take this field") {
		t.Errorf("error page: %d %s", a.code, a.body)
	}
	// A field sent twice that is not a group is refused, as on the built-in forms.
	a = h.postForm("/f/demo", formstest.Origin, formCT, urlencoded("company", "A", "company", "B", "email", "dan@example.com", "consent", "on"))
	if a.code != http.StatusBadRequest {
		t.Errorf("a repeated field: %d", a.code)
	}
}

func TestDeclared_SharedChecksComeFirst(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: declaredConfig(demoForm())})
	big := `{"company":"` + strings.Repeat("x", MaxBodyBytes) + `"}`
	h.post("/f/demo", big).expect(t, http.StatusRequestEntityTooLarge, "error")
	h.post("/f/nope", big).expect(t, http.StatusRequestEntityTooLarge, "error")
	h.post("/f/demo", validDemo, "Content-Type", "text/plain").expect(t, http.StatusUnsupportedMediaType, "error")
	h.post("/f/demo", `{"company":"Acme",`).expect(t, http.StatusBadRequest, "invalid")
	h.post("/f/demo", `{"company":"Acme","company":"Again","email":"ada@example.com","consent":true}`).expect(t, http.StatusBadRequest, "invalid")
	// The honeypot answers 201 and stores nothing, whatever else is wrong.
	h.post("/f/demo", `{"_gotcha":"bot","fax":"1"}`).expect(t, http.StatusCreated, "created")
	if n := len(storedForm(t, h, "demo")); n != 0 {
		t.Fatalf("stored %d", n)
	}
}

// Each declared form's keys carry their own hash tag: on a Redis Cluster, forms spread over the masters,
// and each form's submission is still decided in one slot (unique value, idempotency, stream entry).
func TestDeclared_FormsSpreadOverTheMastersOfACluster(t *testing.T) {
	cluster := testredis.StartCluster(t, 3, 0, durableRedis)
	cc := cluster.Client()
	// Three form ids whose streams live on three different masters.
	var forms []config.DeclaredForm
	masters := map[string]string{} // master address -> form id
	for i := 0; len(forms) < 3 && i < 1000; i++ {
		id := "form-" + strconv.Itoa(i)
		m, err := cc.MasterForKey(t.Context(), store.FormStream(id))
		if err != nil {
			t.Fatal(err)
		}
		if _, taken := masters[m.Options().Addr]; taken {
			continue
		}
		masters[m.Options().Addr] = id
		f := demoForm()
		f.ID = id
		forms = append(forms, f)
	}
	if len(forms) != 3 {
		t.Fatalf("found forms on %d masters", len(forms))
	}
	h := newHarness(t, harnessOpts{cfg: declaredConfig(forms...), cluster: cluster, storeTimeout: 30 * time.Second})
	for _, f := range forms {
		h.post("/f/"+f.ID, validDemo, "Idempotency-Key", "k-"+f.ID).expect(t, http.StatusCreated, "created")
		h.post("/f/"+f.ID, validDemo, "Idempotency-Key", "k-"+f.ID).expect(t, http.StatusCreated, "created") // a replay
		h.post("/f/"+f.ID, validDemo).expect(t, http.StatusOK, "duplicate")
	}
	for addr, id := range masters {
		node := redis.NewClient(&redis.Options{Addr: addr})
		defer node.Close()
		if n := node.XLen(t.Context(), store.FormStream(id)).Val(); n != 1 {
			t.Errorf("master %s holds %d submissions of %s, want 1", addr, n, id)
		}
		for _, other := range forms {
			if other.ID != id && node.Exists(t.Context(), store.FormStream(other.ID)).Val() != 0 {
				t.Errorf("master %s holds %s's stream too", addr, other.ID)
			}
		}
	}
	// Erasure finds the address on every master.
	rep, err := store.Forget(t.Context(), h.rdb, "ada@example.com")
	if err != nil || len(rep.FormSubmissions) != 3 {
		t.Fatalf("cluster forget: %+v %v", rep, err)
	}
}

// A body of many undeclared fields is refused naming the first 20, not all of them.
func TestDeclared_ManyUnknownFieldsNamedUpToABound(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: declaredConfig(demoForm())})
	var parts []string
	for i := range 500 {
		parts = append(parts, `"u`+strconv.Itoa(i)+`":1`)
	}
	a := h.post("/f/demo", `{"company":"Acme","email":"ada@example.com","consent":true,`+strings.Join(parts, ",")+`}`)
	if a.code != http.StatusBadRequest || len(a.errors) != maxNamedUnknown || a.errors["u0"] != CodeUnknownField {
		t.Fatalf("%d, %d errors", a.code, len(a.errors))
	}
}
