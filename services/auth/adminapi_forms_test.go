package auth_test

import (
	"context"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/oauth2"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/auth/admin"
	"github.com/formsservice/formsservice/services/auth/audit"
	formsservice "github.com/formsservice/formsservice/services/forms"
	"github.com/formsservice/formsservice/services/forms/manage"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/server"
)

// The admin API's forms resources (docs/architecture.md D63), served by the provider on the store the
// forms service writes, as `make run` and the operator's deployment run them: a real forms service takes
// the submissions over HTTP and publishes its declared forms; every exchange with the API is validated
// against the OpenAPI document (adminapi_test.go).

const formsOrigin = "https://www.example.com"

// formsAdmin is an admin provider and a forms service on one store.
type formsAdmin struct {
	*adminProvider
	rdb   redis.UniversalClient
	st    *store.Store
	forms string // the forms service's URL
	read  string // a token with forms:read
	write string // a token with forms:read and forms:write
}

func isFormsRoute(path string) bool {
	for _, p := range []string{"/forms", "/waitlist", "/erasures"} {
		if strings.HasPrefix(path, admin.Prefix+p) {
			return true
		}
	}
	return false
}

func startFormsAdmin(t *testing.T) *formsAdmin {
	t.Helper()
	rdb := testredis.Start(t, testredis.Options{AppendFsync: "no"}).Client() // what forms.durability process needs
	t.Cleanup(func() { rdb.Close() })
	f := &formsAdmin{adminProvider: startAdminProviderOn(t, false, rdb), rdb: rdb}
	f.forms = startDemoFormsService(t, rdb)
	var err error
	if f.st, err = store.New(rdb, store.Options{Off: true}); err != nil {
		t.Fatal(err)
	}
	f.read, f.write = f.token(formsClient, "forms:read"), f.token(formsClient, "forms:read forms:write")
	return f
}

// startDemoFormsService runs a real forms service on rdb, on a loopback port, with the declared form
// "demo" (a unique e-mail, a company, seats) beside the built-in ones, until the test ends, and returns
// its base URL once it answers.
func startDemoFormsService(t *testing.T, rdb redis.UniversalClient, more ...func(*formsservice.Options)) string {
	t.Helper()
	zero := 0
	cfg := &config.Config{AllowedOrigins: []string{formsOrigin}, Forms: config.Forms{RateLimitPerMinute: &zero, Declared: []config.DeclaredForm{{
		ID: "demo", Title: "Request a demo", Unique: "email", Fields: []config.FormField{
			{Name: "email", Label: "Work e-mail", Type: config.FieldEmail, Required: true},
			{Name: "company", Type: config.FieldText},
			{Name: "seats", Type: config.FieldNumber}}}}}}
	o := formsservice.Options{Config: config.Static{C: cfg}, Redis: rdb}
	for _, m := range more {
		m(&o)
	}
	svc, err := formsservice.New(o)
	if err != nil {
		t.Fatal(err)
	}
	app := server.New(server.Options{Logger: slog.New(slog.DiscardHandler), Metrics: server.NewMetrics()}, svc)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Serve(ctx, server.ServeOptions{Listener: ln, ShutdownTimeout: 5 * time.Second}) }()
	t.Cleanup(func() { cancel(); <-done })
	testwait.For(t, 5*time.Second, "the forms service to listen", func() bool {
		res, err := http.Get(base + "/livez")
		if err == nil {
			res.Body.Close()
		}
		return err == nil && res.StatusCode == http.StatusOK
	})
	return base
}

// submit posts a submission to the forms service, as a site does, and returns its ID.
func (f *formsAdmin) submit(path, body string) string {
	f.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.forms+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", formsOrigin)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		f.t.Fatalf("POST %s: %d %s", path, res.StatusCode, raw)
	}
	stream := store.ContactStream
	if form, ok := strings.CutPrefix(path, "/f/"); ok {
		stream = store.FormStream(form)
	}
	msgs := f.rdb.XRevRangeN(f.t.Context(), stream, "+", "-", 1).Val()
	if len(msgs) != 1 {
		return ""
	}
	return store.MessageID(msgs[0])
}

// spam stores a contact message as the spam check keeps one, and returns its ID.
func (f *formsAdmin) spam(address string) string {
	f.t.Helper()
	rec := store.AppendContactRecord(nil, store.ContactRecord{Name: "Spammer", Email: address, Topic: "general",
		Message: "Cheap pills at https://pills.example", ReceivedAt: time.Now().UTC(), Origin: formsOrigin})
	v := store.Verdict{Spam: true, Score: 7, Reasons: []string{"links", "phrases"}}
	if r, err := f.st.AddContactJudged(f.t.Context(), netip.MustParseAddr("192.0.2.9"), 0, store.Idempotency{}, rec, v, config.DurabilityProcess); err != nil || r.Outcome != store.Stored {
		f.t.Fatal(r, err)
	}
	return store.MessageID(f.rdb.XRevRangeN(f.t.Context(), store.ContactSpam, "+", "-", 1).Val()[0])
}

func ids(a apiAnswer, member string) []string {
	var out []string
	list, _ := a.body[member].([]any)
	for _, e := range list {
		out = append(out, e.(map[string]any)["id"].(string))
	}
	return out
}

func del(path, token string) apiCall {
	return apiCall{method: http.MethodDelete, path: path, token: token}
}

// The forms are those the forms service serves, from the catalogue it publishes on the store, with
// their counts; a form nothing knows is 404.
func TestAdminAPI_Forms_FromTheFormsServicesStore(t *testing.T) {
	f := startFormsAdmin(t)
	f.submit("/f/demo", `{"email":"ada@example.com","company":"Analytical Engines","seats":12}`)
	f.submit("/contact", `{"name":"Ada","email":"ada@example.com","message":"Hello there, a question about pricing."}`)
	f.spam("eve@example.com")
	var a apiAnswer
	testwait.For(t, 10*time.Second, "the forms service to publish its declared forms", func() bool {
		a = f.api(get("/admin/v1/forms", f.read))
		return a.status == http.StatusOK && a.body["published_at"] != nil
	})
	list := a.body["forms"].([]any)
	if len(list) != 3 {
		t.Fatalf("forms: %s", a.raw)
	}
	contact, demo := list[0].(map[string]any), list[2].(map[string]any)
	counts := contact["counts"].(map[string]any)
	if contact["id"] != "contact" || counts["submissions"] != 1.0 || counts["spam"] != 1.0 || counts["dead_letters"] != 0.0 {
		t.Fatalf("contact: %v", contact)
	}
	if demo["title"] != "Request a demo" || demo["declared"] != true || demo["unique"] != "email" ||
		demo["fields"].([]any)[0].(map[string]any)["label"] != "Work e-mail" || demo["counts"].(map[string]any)["submissions"] != 1.0 {
		t.Fatalf("demo: %v", demo)
	}
	if a := f.api(get("/admin/v1/forms/waitlist", f.read)); a.status != http.StatusOK || a.body["kind"] != "waitlist" {
		t.Fatalf("waitlist: %d %s", a.status, a.raw)
	}
	problemOf(t, "an unknown form", f.api(get("/admin/v1/forms/nope", f.read)), http.StatusNotFound)
	problemOf(t, "a form id no form has", f.api(apiCall{method: http.MethodGet, path: "/admin/v1/forms/No_Such", token: f.read, badRequest: true}), http.StatusNotFound)
	problemOf(t, "the waitlist's submissions", f.api(get("/admin/v1/forms/waitlist/submissions", f.read)), http.StatusNotFound)

	// With days: what each form kept on each of the last days, today's (the store's day) last.
	a = f.api(get("/admin/v1/forms?days=7", f.read))
	today := f.rdb.Time(t.Context()).Val().UTC().Format(time.DateOnly)
	if a.status != http.StatusOK {
		t.Fatalf("days=7: %d %s", a.status, a.raw)
	}
	for _, form := range a.body["forms"].([]any) {
		form := form.(map[string]any)
		days, _ := form["daily"].([]any)
		if len(days) != 7 {
			t.Fatalf("%s: daily %v", form["id"], form["daily"])
		}
		last := days[6].(map[string]any)
		want := map[string][2]float64{"contact": {1, 1}, "waitlist": {0, 0}, "demo": {1, 0}}[form["id"].(string)]
		if last["date"] != today || last["submissions"] != want[0] || last["spam"] != want[1] {
			t.Errorf("%s today: %v, want %s with %v", form["id"], last, today, want)
		}
	}
	if a := f.api(get("/admin/v1/forms", f.read)); strings.Contains(string(a.raw), `"daily"`) {
		t.Errorf("daily without days: %s", a.raw)
	}
	for _, bad := range []string{"0", "367", "x", "-1"} {
		problemOf(t, "days="+bad, f.api(apiCall{method: http.MethodGet, path: "/admin/v1/forms?days=" + bad, token: f.read, badRequest: true}), http.StatusBadRequest)
	}
}

// A form's submissions are listed newest first a page at a time, each once while new ones arrive,
// filtered by text, folder, state and time; one is read by its ID; bad filters are 400 naming them.
func TestAdminAPI_Forms_SubmissionsPagesFiltersAndOne(t *testing.T) {
	f := startFormsAdmin(t)
	var stored []string
	for _, who := range []string{"ada", "bob", "carol", "dan", "erin"} {
		stored = append(stored, f.submit("/f/demo", `{"email":"`+who+`@example.com","company":"`+strings.ToUpper(who)+` Ltd","seats":3}`))
	}
	var got []string
	next := ""
	for page := 0; ; page++ {
		path := "/admin/v1/forms/demo/submissions?limit=2"
		if next != "" {
			path += "&cursor=" + next
		}
		a := f.api(get(path, f.read))
		if a.status != http.StatusOK || page > 3 {
			t.Fatalf("page %d: %d %s", page, a.status, a.raw)
		}
		got = append(got, ids(a, "submissions")...)
		if page == 0 { // a submission arrives between two pages: it is not on them
			f.submit("/f/demo", `{"email":"zed@example.com"}`)
		}
		if next, _ = a.body["next_cursor"].(string); next == "" {
			break
		}
	}
	slices.Reverse(stored)
	if !slices.Equal(got, stored) {
		t.Fatalf("pages %v, want %v", got, stored)
	}
	a := f.api(get("/admin/v1/forms/demo/submissions/"+stored[0], f.read))
	fields := a.body["fields"].(map[string]any)
	if a.status != http.StatusOK || a.body["state"] != "stored" || a.body["folder"] != "inbox" || fields["email"] != "erin@example.com" ||
		fields["seats"] != 3.0 || a.body["origin"] != formsOrigin {
		t.Fatalf("one: %d %s", a.status, a.raw)
	}
	junk := f.spam("eve@example.com")
	for query, want := range map[string]int{
		"q=carol+LTD":      1,
		"q=" + stored[1]:   1, // its ID
		"folder=spam":      0, // the contact form's spam, not demo's
		"state=stored":     6, // demo notifies no one: nothing delivers it
		"state=queued":     0,
		"until=2000-01-01": 0,
	} {
		a := f.api(get("/admin/v1/forms/demo/submissions?"+query, f.read))
		if got := ids(a, "submissions"); a.status != http.StatusOK || len(got) != want {
			t.Errorf("%s: %d %v, want %d", query, a.status, got, want)
		}
	}
	if a := f.api(get("/admin/v1/forms/contact/submissions?folder=spam", f.read)); !slices.Equal(ids(a, "submissions"), []string{junk}) ||
		a.body["submissions"].([]any)[0].(map[string]any)["spam"].(map[string]any)["score"] != 7.0 {
		t.Fatalf("the spam folder: %s", a.raw)
	}
	usersCursor := base64.RawURLEncoding.EncodeToString([]byte("u1:a@example.com"))
	contactCursor := base64.RawURLEncoding.EncodeToString([]byte("s1:contact:inbox:1-0"))
	for name, c := range map[string]struct {
		query, field string
		bad          bool // the document refuses it too
	}{
		"a folder there is not":         {"folder=trash", "folder", true},
		"a state there is not":          {"state=lost", "state", true},
		"a state of the spam folder":    {"folder=spam&state=queued", "state", false},
		"a limit out of range":          {"limit=0", "limit", true},
		"a text too long":               {"q=" + strings.Repeat("x", 201), "q", true},
		"a time not a time":             {"since=yesterday-ish", "since", false},
		"until before since":            {"since=2026-01-02&until=2026-01-01", "until", false},
		"a cursor of the users":         {"cursor=" + usersCursor, "cursor", false},
		"a cursor of another form":      {"cursor=" + contactCursor, "cursor", false},
		"a cursor that is no base64url": {"cursor=%25%25", "cursor", false},
	} {
		a := f.api(apiCall{method: http.MethodGet, path: "/admin/v1/forms/demo/submissions?" + c.query, token: f.read, badRequest: c.bad})
		if fields := problemOf(t, name, a, http.StatusBadRequest); fields[c.field] == nil {
			t.Errorf("%s: errors %v", name, fields)
		}
	}
	if fields := problemOf(t, "a malformed ID", f.api(apiCall{method: http.MethodGet, path: "/admin/v1/forms/demo/submissions/nonsense", token: f.read, badRequest: true}),
		http.StatusBadRequest); fields["id"] == nil {
		t.Errorf("a malformed ID: %v", fields)
	}
	problemOf(t, "an ID never stored", f.api(get("/admin/v1/forms/demo/submissions/1-0", f.read)), http.StatusNotFound)
	problemOf(t, "an ID of another form", f.api(get("/admin/v1/forms/contact/submissions/"+stored[0], f.read)), http.StatusNotFound)
}

// Every change — erase, mark as spam, release, retry and discard a dead letter, erase an address — is
// made as the CLI makes it, refused in a state that does not allow it (409), and recorded in the audit
// trail with the token's client and subject.
func TestAdminAPI_Forms_ChangesAuditedWithTheActor(t *testing.T) {
	f := startFormsAdmin(t)
	a1 := f.submit("/contact", `{"name":"Ada","email":"ada@example.com","message":"Hello there, a question about pricing."}`)
	b1 := f.submit("/contact", `{"name":"Bob","email":"bob@example.com","message":"Hello there, another question."}`)
	c1 := f.submit("/contact", `{"name":"Carol","email":"carol@example.com","message":"Hello there, a third question."}`)
	junk := f.spam("eve@example.com")
	base := "/admin/v1/forms/contact/submissions/"

	if a := f.api(post(base+junk+"/release", f.write, "")); a.status != http.StatusOK || a.body["folder"] != "inbox" || a.body["id"] != junk {
		t.Fatalf("release: %d %s", a.status, a.raw)
	}
	problemOf(t, "a second release", f.api(post(base+junk+"/release", f.write, "")), http.StatusConflict)
	if a := f.api(post(base+a1+"/spam", f.write, "{}")); a.status != http.StatusOK || a.body["folder"] != "spam" || a.body["state"] != "spam" {
		t.Fatalf("mark as spam: %d %s", a.status, a.raw)
	}
	problemOf(t, "marked twice", f.api(post(base+a1+"/spam", f.write, "")), http.StatusConflict)
	problemOf(t, "a body with a field", f.api(apiCall{method: http.MethodPost, path: base + a1 + "/release", token: f.write, body: `{"now":true}`}), http.StatusBadRequest)
	if a := f.api(del(base+b1, f.write)); a.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", a.status, a.raw)
	}
	problemOf(t, "deleted, then read", f.api(get(base+b1, f.read)), http.StatusNotFound)
	problemOf(t, "deleted twice", f.api(del(base+b1, f.write)), http.StatusNotFound)

	// A dead letter: taken by delivery and given up.
	q := store.ContactQueue
	if err := q.EnsureGroup(t.Context(), f.rdb); err != nil {
		t.Fatal(err)
	}
	res := f.rdb.XReadGroup(t.Context(), &redis.XReadGroupArgs{Group: store.DeliveryGroup, Consumer: "w", Streams: []string{q.Stream, ">"}}).Val()
	for _, m := range res[0].Messages {
		if store.MessageID(m) == c1 {
			if ok, err := q.MoveToDeadLetters(t.Context(), f.rdb, "w", m, "webhook answered 410", "webhook", 20); err != nil || !ok {
				t.Fatal(err)
			}
		}
	}
	a := f.api(get("/admin/v1/forms/contact/dead-letters", f.read))
	if !slices.Equal(ids(a, "dead_letters"), []string{c1}) || a.body["dead_letters"].([]any)[0].(map[string]any)["last_error"] != "webhook answered 410" {
		t.Fatalf("dead letters: %s", a.raw)
	}
	if a := f.api(get(base+c1, f.read)); a.body["state"] != "failed" {
		t.Fatalf("a dead letter's submission: %s", a.raw)
	}
	if a := f.api(post("/admin/v1/forms/contact/dead-letters/"+c1+"/retry", f.write, "")); a.status != http.StatusOK || a.body["id"] != c1 || a.body["state"] != "queued" {
		t.Fatalf("retry: %d %s", a.status, a.raw)
	}
	problemOf(t, "retried twice", f.api(post("/admin/v1/forms/contact/dead-letters/"+c1+"/retry", f.write, "")), http.StatusNotFound)
	problemOf(t, "a dead letter there is not", f.api(del("/admin/v1/forms/contact/dead-letters/"+c1, f.write)), http.StatusNotFound)

	// An address erased everywhere.
	f.submit("/waitlist", `{"email":"carol@example.com","consent":true}`)
	a = f.api(post("/admin/v1/erasures", f.write, `{"email":"Carol@Example.com"}`))
	if a.status != http.StatusOK || a.body["email"] != "carol@example.com" || a.body["waitlist_entries"] != 1.0 || len(a.body["contact_messages"].([]any)) != 1 {
		t.Fatalf("erasure: %d %s", a.status, a.raw)
	}
	if fields := problemOf(t, "an erasure of no address", f.api(post("/admin/v1/erasures", f.write, `{"email":"not an address"}`)), http.StatusBadRequest); fields["email"] == nil {
		t.Errorf("an erasure of no address: %v", fields)
	}

	// The trail: each change with the API as actor, the token's client and subject; never the address.
	trail(t, f.provider)
	a = f.api(get("/admin/v1/audit?kind=form.", f.token(auditorClient, "audit:read")))
	var kinds []string
	for _, e := range a.body["events"].([]any) {
		ev := e.(map[string]any)
		detail := ev["detail"].(map[string]any)
		if ev["actor"] != audit.ActorAdmin || ev["client"] != formsClient || detail[audit.DetailActorSub] != formsClient || strings.Contains(string(a.raw), "carol@") {
			t.Fatalf("event %v", ev)
		}
		kinds = append(kinds, ev["kind"].(string)+" "+toString(detail["id"]))
	}
	want := []string{"form.address_erased ", "form.dead_letter_retried " + c1, "form.submission_deleted " + b1, "form.spam_marked " + a1, "form.spam_released " + junk}
	if !slices.Equal(kinds, want) {
		t.Fatalf("the trail %v, want %v", kinds, want)
	}
}

func toString(v any) string { s, _ := v.(string); return s }

// An export streams its rows (chunked: nothing holds the whole of it), as CSV, JSON lines or one JSON
// array, filtered as a listing is, and is audited with the rows it wrote.
func TestAdminAPI_Forms_ExportStreams(t *testing.T) {
	f := startFormsAdmin(t)
	for _, who := range []string{"ada", "bob", "carol"} {
		f.submit("/f/demo", `{"email":"`+who+`@example.com","company":"=HYPERLINK(\"x\")"}`)
	}
	a := f.api(apiCall{method: http.MethodGet, path: "/admin/v1/forms/demo/submissions/export", token: f.read, export: true})
	rows, err := csv.NewReader(strings.NewReader(string(a.raw))).ReadAll()
	if a.status != http.StatusOK || err != nil || len(rows) != 4 || rows[0][0] != "id" || rows[1][3] != `'=HYPERLINK("x")` ||
		!strings.HasPrefix(a.header.Get("Content-Type"), "text/csv") || !strings.Contains(a.header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("csv: %d %v %v %s", a.status, a.header, err, a.raw)
	}
	a = f.api(apiCall{method: http.MethodGet, path: "/admin/v1/forms/demo/submissions/export?format=json&q=BOB", token: f.read, export: true})
	var list []map[string]any
	if err := json.Unmarshal(a.raw, &list); a.status != http.StatusOK || err != nil || len(list) != 1 || list[0]["fields"].(map[string]any)["email"] != "bob@example.com" {
		t.Fatalf("json: %d %v %s", a.status, err, a.raw)
	}
	a = f.api(apiCall{method: http.MethodGet, path: "/admin/v1/forms/demo/submissions/export?format=jsonl&folder=all", token: f.read, export: true})
	if a.status != http.StatusOK || strings.Count(string(a.raw), "\n") != 3 {
		t.Fatalf("jsonl: %d %s", a.status, a.raw)
	}
	// Streamed: the answer has no length, its rows come in chunks.
	req, _ := http.NewRequest(http.MethodGet, f.base+"/admin/v1/forms/demo/submissions/export", nil)
	req.Header.Set("Authorization", "Bearer "+f.read)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.ContentLength != -1 || !slices.Equal(res.TransferEncoding, []string{"chunked"}) {
		t.Fatalf("not streamed: length %d, transfer encoding %v", res.ContentLength, res.TransferEncoding)
	}
	for name, c := range map[string]struct {
		query, field string
		bad          bool
	}{
		"a format there is not": {"format=xml", "format", true},
		"both folders as CSV":   {"folder=all", "folder", false},
		"a state":               {"state=queued", "state", false},
		"a time not a time":     {"until=soon", "until", false},
	} {
		a := f.api(apiCall{method: http.MethodGet, path: "/admin/v1/forms/demo/submissions/export?" + c.query, token: f.read, badRequest: c.bad, export: true})
		if fields := problemOf(t, name, a, http.StatusBadRequest); fields[c.field] == nil {
			t.Errorf("%s: errors %v", name, fields)
		}
	}
	problemOf(t, "an export of a form nothing knows", f.api(apiCall{method: http.MethodGet, path: "/admin/v1/forms/nope/submissions/export", token: f.read, export: true}),
		http.StatusNotFound)
	trail(t, f.provider)
	a = f.api(get("/admin/v1/audit?kind=form.exported", f.token(auditorClient, "audit:read")))
	events := a.body["events"].([]any)
	last := events[len(events)-1].(map[string]any)["detail"].(map[string]any) // the first export, oldest
	if len(events) != 4 || last["rows"] != "3" || last["format"] != "csv" || last["complete"] != "true" || last["form"] != "demo" {
		t.Fatalf("the trail: %s", a.raw)
	}
}

// The waitlist's entries are listed with their opt-in state, newest first, filtered by state and text,
// and exported.
func TestAdminAPI_Forms_WaitlistEntries(t *testing.T) {
	f := startFormsAdmin(t)
	for _, who := range []string{"ada", "bob", "carol"} {
		f.submit("/waitlist", `{"email":"`+who+`@example.com","consent":true,"name":"`+who+`"}`)
	}
	a := f.api(get("/admin/v1/waitlist/entries?limit=2", f.read))
	entries := a.body["entries"].([]any)
	if a.status != http.StatusOK || len(entries) != 2 || entries[0].(map[string]any)["email"] != "carol@example.com" ||
		entries[0].(map[string]any)["state"] != "subscribed" || a.body["next_cursor"] == nil {
		t.Fatalf("first page: %d %s", a.status, a.raw)
	}
	a = f.api(get("/admin/v1/waitlist/entries?limit=2&cursor="+url.QueryEscape(a.body["next_cursor"].(string)), f.read))
	if entries = a.body["entries"].([]any); len(entries) != 1 || entries[0].(map[string]any)["email"] != "ada@example.com" || a.body["next_cursor"] != nil {
		t.Fatalf("second page: %s", a.raw)
	}
	if a = f.api(get("/admin/v1/waitlist/entries?state=pending", f.read)); len(a.body["entries"].([]any)) != 0 {
		t.Fatalf("pending: %s", a.raw)
	}
	if a = f.api(get("/admin/v1/waitlist/entries?q=BOB", f.read)); len(a.body["entries"].([]any)) != 1 {
		t.Fatalf("text: %s", a.raw)
	}
	problemOf(t, "a state the waitlist has not", f.api(apiCall{method: http.MethodGet, path: "/admin/v1/waitlist/entries?state=spam", token: f.read, badRequest: true}),
		http.StatusBadRequest)
	problemOf(t, "a cursor of the submissions", f.api(get("/admin/v1/waitlist/entries?cursor="+base64.RawURLEncoding.EncodeToString([]byte("s1:demo:inbox:1-0")), f.read)),
		http.StatusBadRequest)
	a = f.api(apiCall{method: http.MethodGet, path: "/admin/v1/waitlist/entries/export?format=jsonl&state=subscribed", token: f.read, export: true})
	if a.status != http.StatusOK || strings.Count(string(a.raw), "\n") != 3 || a.header.Get("Content-Type") != "application/jsonl" {
		t.Fatalf("export: %d %v %s", a.status, a.header, a.raw)
	}
}

// The forms' routes need their scope: forms:write for a change (403 insufficient_scope naming it), and a
// person's token also needs the admin group.
func TestAdminAPI_Forms_Refusals(t *testing.T) {
	f := startFormsAdmin(t)
	id := f.submit("/contact", `{"name":"Ada","email":"ada@example.com","message":"Hello there, a question about pricing."}`)
	a := f.api(del("/admin/v1/forms/contact/submissions/"+id, f.read))
	problemOf(t, "a delete with forms:read", a, http.StatusForbidden)
	if h := a.header.Get("WWW-Authenticate"); !strings.Contains(h, `error="insufficient_scope"`) || !strings.Contains(h, `scope="forms:write"`) {
		t.Fatalf("WWW-Authenticate: %q", h)
	}
	if a := f.api(get("/admin/v1/forms/contact/submissions/"+id, f.read)); a.status != http.StatusOK {
		t.Fatalf("refused, then read: %d", a.status)
	}
	problemOf(t, "an export with users:read", f.api(apiCall{method: http.MethodGet, path: "/admin/v1/forms/contact/submissions/export",
		token: f.token(readerClient, "users:read"), export: true}), http.StatusForbidden)

	// A person's token with the forms scopes, outside the admin group: 403 naming the group.
	f.user(testEmail, testPassword)
	b := newBrowser(t)
	verifier := oauth2.GenerateVerifier()
	pg := b.get(f.authorizeURL("state-forms-0123", verifier, oauth2.SetAuthURLParam("scope", "openid forms:read forms:write"),
		oauth2.SetAuthURLParam("resource", f.base+"/admin")))
	code, _ := codeFrom(t, b.signIn(f.base, pg.body, testEmail, testPassword), f.redirect)
	person := f.exchange(code, verifier).AccessToken
	a = f.api(get("/admin/v1/forms", person))
	if problemOf(t, "a person outside the group", a, http.StatusForbidden); !strings.Contains(a.body["detail"].(string), config.DefaultAdminGroup) {
		t.Fatalf("the refusal names no group: %s", a.raw)
	}
	if _, _, err := f.svc.Users().AddGroups(context.Background(), testEmail, []string{config.DefaultAdminGroup}); err != nil {
		t.Fatal(err)
	}
	if a := f.api(del("/admin/v1/forms/contact/submissions/"+id, person)); a.status != http.StatusNoContent {
		t.Fatalf("a member of the admin group: %d %s", a.status, a.raw)
	}
}

// The provider reaches the forms' data through package manage and the store only: never the forms
// service's intake, delivery or mail (D63's one exception to "a service never imports another").
func TestAdminAPI_Forms_ProviderLinksTheFormsStoreOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if rest, ok := strings.CutPrefix(dep, "github.com/formsservice/formsservice/services/forms"); ok && rest != "/manage" && rest != "/store" {
			t.Errorf("the provider links %s", dep)
		}
	}
	for _, k := range manage.Kinds {
		if !audit.Known(audit.Kind(k)) {
			t.Errorf("the forms' change %s is no kind of the audit trail", k)
		}
	}
}

// An export that stops after its first rows (here a record that is not JSON, after 600 good ones) is cut
// off: its chunked body has no end, so the reader sees a broken answer, never a short export that looks
// whole. Recorded as incomplete.
func TestAdminAPI_Forms_ExportThatStopsIsCutOff(t *testing.T) {
	f := startFormsAdmin(t)
	pipe := f.rdb.Pipeline()
	for range 600 {
		rec := store.AppendContactRecord(nil, store.ContactRecord{Name: "Ada", Email: "ada@example.com", Topic: "general", Message: "Hello there", ReceivedAt: time.Now()})
		pipe.XAdd(t.Context(), &redis.XAddArgs{Stream: store.ContactStream, Values: []any{store.RecordField, string(rec)}})
	}
	pipe.XAdd(t.Context(), &redis.XAddArgs{Stream: store.ContactStream, Values: []any{store.RecordField, "{not json"}})
	if _, err := pipe.Exec(t.Context()); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, f.base+"/admin/v1/forms/contact/submissions/export?format=jsonl", nil)
	req.Header.Set("Authorization", "Bearer "+f.read)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	// How many good rows arrive first is the server's buffering (what was flushed before the cut), so
	// the test asks for some, each whole and good, and a broken body after them.
	lines := strings.Split(string(raw), "\n")
	whole := lines[:len(lines)-1] // the last is what followed the final newline: cut short, or empty
	if res.StatusCode != http.StatusOK || err == nil || len(whole) == 0 || len(whole) > 600 {
		t.Fatalf("%d, %d lines, read error %v: want good rows, then a broken body", res.StatusCode, len(whole), err)
	}
	for i, l := range whole {
		if !json.Valid([]byte(l)) || !strings.Contains(l, "ada@example.com") {
			t.Fatalf("row %d of the cut-off export: %q", i, l)
		}
	}
	trail(t, f.provider)
	a := f.api(get("/admin/v1/audit?kind=form.exported", f.token(auditorClient, "audit:read")))
	if e := a.body["events"].([]any); len(e) != 1 || e[0].(map[string]any)["detail"].(map[string]any)["complete"] != "false" {
		t.Fatalf("the trail: %s", a.raw)
	}
}
