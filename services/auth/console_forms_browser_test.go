package auth_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testbrowser"
	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// The console's forms pages (D65) in headless Chromium: a provider serving the console and a real
// forms service on one redis-server, as `make run` and the operator's deployment run them.

// consoleForms is a console provider (with an admin) and a forms service on one store; post sends a
// submission to the forms service as a site does.
type consoleForms struct {
	*provider
	home    string
	adminID string
	rdb     redis.UniversalClient
	forms   string
}

func startConsoleForms(t *testing.T) *consoleForms {
	t.Helper()
	rdb := testredis.Start(t, testredis.Options{AppendFsync: "no"}).Client()
	t.Cleanup(func() { rdb.Close() })
	on := true
	p := startProvider(t, setup{rdb: rdb, mutate: func(c *config.Config) { c.Auth.Console.Enabled = &on }})
	adminID := p.user("admin@example.com", testPassword)
	if _, _, err := p.svc.Users().AddGroups(context.Background(), "admin@example.com", []string{config.DefaultAdminGroup}); err != nil {
		t.Fatal(err)
	}
	forms := startDemoFormsService(t, rdb)
	testwait.For(t, 10*time.Second, "the forms service to publish its declared forms", func() bool {
		_, ok, err := store.ReadCatalog(context.Background(), rdb)
		return err == nil && ok
	})
	return &consoleForms{provider: p, adminID: adminID, home: p.base + "/console/", rdb: rdb, forms: forms}
}

// post sends a submission to the forms service and returns its ID (the newest of its stream).
func (c *consoleForms) post(path, body string) string {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.forms+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", formsOrigin)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		c.t.Fatalf("POST %s: %d %s", path, res.StatusCode, raw)
	}
	if path == "/waitlist" {
		return ""
	}
	stream := store.ContactStream
	if form, ok := strings.CutPrefix(path, "/f/"); ok {
		stream = store.FormStream(form)
	}
	msgs := c.rdb.XRevRangeN(c.t.Context(), stream, "+", "-", 1).Val()
	if len(msgs) != 1 {
		c.t.Fatalf("POST %s stored nothing", path)
	}
	return store.MessageID(msgs[0])
}

// giveUp has delivery take the contact messages ids and give them up, as after its last retry.
func (c *consoleForms) giveUp(ids ...string) {
	c.t.Helper()
	q := store.ContactQueue
	if err := q.EnsureGroup(c.t.Context(), c.rdb); err != nil {
		c.t.Fatal(err)
	}
	res := c.rdb.XReadGroup(c.t.Context(), &redis.XReadGroupArgs{Group: store.DeliveryGroup, Consumer: "w", Streams: []string{q.Stream, ">"}}).Val()
	n := 0
	for _, m := range res[0].Messages {
		if slices.Contains(ids, store.MessageID(m)) {
			if ok, err := q.MoveToDeadLetters(c.t.Context(), c.rdb, "w", m, "webhook answered 410", "webhook", 20); err != nil || !ok {
				c.t.Fatal(ok, err)
			}
			n++
		}
	}
	if n != len(ids) {
		c.t.Fatalf("gave up %d of %d", n, len(ids))
	}
}

func (x *person) count(sel string) int {
	x.t.Helper()
	return testbrowser.Get(x.t, x.ctx, "counting "+sel, chromedp.Evaluate[int](`document.querySelectorAll(`+jsString(sel)+`).length`))
}

func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// An admin opens a form's submissions; a submission posted while the page is open appears without a
// reload; the admin finds it, reads every field, marks it spam, finds it in the spam folder, exports the
// folder, releases it and deletes it. The dead letters and the waitlist have their pages. Every view and
// state passes axe-core at 320 px in light and dark mode.
func TestConsole_InChromium_FormsSubmissionsFromArrivalToDeletion(t *testing.T) {
	c := startConsoleForms(t)
	older := c.post("/f/demo", `{"email":"ada@example.com","company":"Analytical Engines","seats":12}`)
	c.post("/waitlist", `{"email":"carol@example.com","consent":true,"name":"Carol"}`)

	x := &person{t: t, p: c.provider, ctx: testbrowser.New(t)}
	x.do("opening the console", chromedp.Navigate(c.home))
	x.waitShown("the console signed out", "#sign-in")
	x.do("sign in", chromedp.Click(chromedp.CSS("#sign-in")))
	x.signIn("admin@example.com", testPassword)
	x.waitShown("the overview's forms", `#forms-summary a[data-form="demo"]`)
	if row := x.text("the overview's forms", "#forms-summary"); !strings.Contains(row, "Request a demo") {
		t.Errorf("the overview's forms:\n%s", row)
	}
	// The chart: a bar a day per form, labelled for screen readers, and the same days as a table.
	x.waitShown("the overview's chart", `#forms-daily figure[data-chart="demo"] svg[role="img"]`)
	label := testbrowser.Get(t, x.ctx, "the demo chart's label", chromedp.Evaluate[string](
		`document.querySelector('#forms-daily figure[data-chart="demo"] svg').getAttribute('aria-label')`))
	if !strings.HasPrefix(label, "Request a demo: 1 in the last 14 days, most on ") {
		t.Errorf("the demo chart says %q", label)
	}
	if n := x.count(`#forms-daily figure[data-chart="demo"] rect.bar[height="38"]`); n != 1 {
		t.Errorf("the demo chart has %d full bars, want today's", n)
	}
	if n := x.count(`#forms-daily figure[data-chart="waitlist"] rect.bar[height="38"]`); n != 1 {
		t.Errorf("the waitlist's chart has %d full bars, want today's sign-up", n)
	}
	if n := x.count(`#forms-daily details tbody tr`); n != 14 {
		t.Errorf("the chart's table has %d days, want 14", n)
	}
	x.checkConsole("the overview with the forms", "overview-forms")

	x.do("the forms", chromedp.Click(chromedp.CSS(`a[data-nav="forms"]`)))
	x.waitShown("the forms", `#forms a[data-form="demo"]`)
	x.checkConsole("the forms", "forms")

	x.do("the demo form", chromedp.Click(chromedp.CSS(`#forms a[data-form="demo"]`)))
	x.waitShown("the demo's inbox", `#submissions[data-folder="inbox"] a[data-id="`+older+`"]`)
	x.checkConsole("a form's inbox", "submissions")

	// Posted a moment after the page opened: it appears by itself (the page polls its first page).
	fresh := c.post("/f/demo", `{"email":"grace@example.com","company":"Navy","seats":3}`)
	x.waitShown("the new submission, without a reload", `#submissions a[data-id="`+fresh+`"]`)
	if n := x.count(`#submissions tbody tr`); n != 2 {
		t.Errorf("the inbox shows %d rows after the new submission, want 2", n)
	}

	x.do("searching", chromedp.SendKeys(chromedp.CSS("#f-q"), "grace"), chromedp.Click(chromedp.CSS(`form[role="search"] button`)))
	x.waitShown("the search's answer", `#submissions[data-q="grace"] a[data-id="`+fresh+`"]`)
	if n := x.count(`#submissions tbody tr`); n != 1 {
		t.Errorf("the search for grace shows %d rows, want 1", n)
	}
	x.checkConsole("a search", "")

	x.do("the submission", chromedp.Click(chromedp.CSS(`#submissions a[data-id="`+fresh+`"]`)))
	x.waitShown("the submission", "#mark-spam")
	body := x.text("the submission", "main")
	for _, want := range []string{"Work e-mail", "grace@example.com", "Navy", "3", fresh, formsOrigin} {
		if !strings.Contains(body, want) {
			t.Errorf("the submission's page does not show %q:\n%s", want, body)
		}
	}
	x.checkConsole("a submission", "submission")

	x.do("mark as spam", chromedp.Click(chromedp.CSS("#mark-spam")))
	x.waitShown("the submission in the spam folder", "#release")
	if done := x.text("the outcome", ".done"); done != "Moved to the spam folder." {
		t.Errorf("after marking spam the page says %q", done)
	}
	if body := x.text("the submission in the spam folder", "main"); strings.Contains(body, "null") || strings.Contains(body, "undefined") {
		t.Errorf("the page shows a missing value as JavaScript's word for it:\n%s", body)
	}
	x.checkConsole("a submission marked spam", "submission-spam")

	x.do("back to the folder", chromedp.Click(chromedp.CSS(`main a[href$="?folder=spam"]`)))
	x.waitShown("the spam folder", `#submissions[data-folder="spam"] a[data-id="`+fresh+`"]`)
	if n := x.count(`#submissions tbody tr`); n != 1 {
		t.Errorf("the spam folder shows %d rows, want 1", n)
	}
	x.checkConsole("the spam folder", "spam")

	// The export goes through the API with the person's token; the page counts what came back.
	x.do("export CSV", chromedp.Click(chromedp.CSS("#export-csv")))
	x.waitShown("the CSV export", `#export-result .done`)
	if rows := x.eval("the CSV's rows", `document.querySelector("#export-result .done").dataset.rows`); rows != "1" {
		t.Errorf("the spam folder's CSV has %s rows, want 1 (%s)", rows, x.text("the export", "#export-result"))
	}
	x.checkConsole("an export", "")
	x.do("export JSON", chromedp.Click(chromedp.CSS("#export-json")))
	x.waitShown("the JSON export", `#export-result .done[data-file="demo-spam.json"]`)
	if rows := x.eval("the JSON's rows", `document.querySelector("#export-result .done").dataset.rows`); rows != "1" {
		t.Errorf("the spam folder's JSON has %s rows, want 1 (%s)", rows, x.text("the export", "#export-result"))
	}
	// Recorded once each stream has ended (after the browser had its last byte): waited for.
	var exports []string
	testwait.For(t, 10*time.Second, "the two exports in the audit trail", func() bool {
		exports = nil
		for _, e := range trail(t, c.provider) {
			if e.Kind == "form.exported" {
				exports = append(exports, e.Detail[audit.DetailActorSub]+" "+e.Client+" "+e.Detail["folder"]+" "+e.Detail["format"]+" "+e.Detail["rows"])
			}
		}
		return len(exports) == 2
	})
	if want := c.adminID + " formsservice-console spam csv 1"; exports[0] != want {
		t.Errorf("the first export was recorded as %q, want %q (all: %q)", exports[0], want, exports)
	}

	x.do("the submission again", chromedp.Click(chromedp.CSS(`#submissions a[data-id="`+fresh+`"]`)))
	x.waitShown("the spam's release", "#release")
	x.do("release", chromedp.Click(chromedp.CSS("#release")))
	x.waitShown("the released submission", "#mark-spam")
	if done := x.text("the outcome", ".done"); !strings.HasPrefix(done, "Released") {
		t.Errorf("after the release the page says %q", done)
	}
	x.checkConsole("a released submission", "")

	x.do("delete it", chromedp.Click(chromedp.CSS(`main details summary`)))
	x.checkConsole("the deletion asked for", "")
	x.do("delete for good", chromedp.Click(chromedp.CSS("#delete")))
	x.waitShown("the inbox after the deletion", `#submissions[data-folder="inbox"] a[data-id="`+older+`"]`)
	if n := x.count(`#submissions a[data-id="` + fresh + `"]`); n != 0 {
		t.Error("the deleted submission is still listed")
	}
	if n := c.rdb.XLen(t.Context(), store.FormStream("demo")).Val(); n != 1 {
		t.Errorf("the demo form's stream holds %d entries after the deletion, want 1", n)
	}

	x.do("the dead letters", chromedp.Click(chromedp.CSS("#folder-dead")))
	x.waitShown("the dead letters", `main[data-view="forms-dead"] #dead-letters`)
	x.checkConsole("the dead letters, none", "")

	// Two contact messages given up by delivery: one retried under its ID, one discarded.
	retried := c.post("/contact", `{"name":"Ada","email":"ada@example.com","message":"Hello there, a question about pricing."}`)
	discarded := c.post("/contact", `{"name":"Bob","email":"bob@example.com","message":"Hello there, a question about seats."}`)
	c.giveUp(retried, discarded)
	x.do("the contact form's dead letters", chromedp.Evaluate[chromedp.Void](`location.hash = "#/forms/contact/dead-letters"`))
	x.waitShown("the dead letters", `#dead-letters button[data-id="`+discarded+`"]`)
	if list := x.text("the dead letters", "#dead-letters"); !strings.Contains(list, "webhook answered 410") || !strings.Contains(list, "ada@example.com") {
		t.Errorf("the dead letters:\n%s", list)
	}
	x.checkConsole("the dead letters", "dead-letters")
	x.do("retry", chromedp.Click(chromedp.CSS(`#dead-letters button[data-id="`+retried+`"]:not(.secondary)`)))
	x.waitShown("the retry done", `#action-result .done`)
	if n := x.count(`#dead-letters button[data-id="` + retried + `"]`); n != 0 {
		t.Error("the retried dead letter is still listed")
	}
	x.do("discard", chromedp.Click(chromedp.CSS(`#dead-letters button[data-id="`+discarded+`"].secondary`)))
	x.waitShown("the dead letters gone", `#dead-letters p.muted`)
	if done := x.text("the outcome", "#action-result"); done != "Discarded; the submission stays stored." {
		t.Errorf("after discarding the page says %q", done)
	}
	x.checkConsole("the dead letters, all handled", "")
	var kinds []string
	for _, e := range trail(t, c.provider) {
		if e.Kind == "form.dead_letter_retried" || e.Kind == "form.dead_letter_discarded" {
			kinds = append(kinds, string(e.Kind))
		}
	}
	if strings.Join(kinds, " ") != "form.dead_letter_retried form.dead_letter_discarded" {
		t.Errorf("the dead letters' changes in the audit trail: %q", kinds)
	}

	// An address erased from the forms page, behind a second click: bob's stored contact message goes.
	x.do("the forms again", chromedp.Click(chromedp.CSS(`a[data-nav="forms"]`)))
	x.waitShown("the erasure form", "#erase-email")
	x.do("erase bob", chromedp.SendKeys(chromedp.CSS("#erase-email"), "bob@example.com"), chromedp.Click(chromedp.CSS(`main form button.danger`)))
	x.waitShown("the erasure asked for again", `main form button.danger`)
	if label := x.text("the erase button", "main form button.danger"); label != "Erase bob@example.com for good" {
		t.Errorf("after the first click the button says %q", label)
	}
	if n := c.rdb.XLen(t.Context(), store.ContactStream).Val(); n != 2 {
		t.Errorf("the first click erased already: %d contact messages, want 2", n)
	}
	x.checkConsole("an erasure asked for", "")
	x.do("erase for good", chromedp.Click(chromedp.CSS(`main form button.danger`)))
	x.waitShown("the erasure done", "#erase-result .done")
	if done := x.text("the erasure", "#erase-result"); done != "1 records of bob@example.com erased." {
		t.Errorf("the erasure says %q", done)
	}
	if n := c.rdb.XLen(t.Context(), store.ContactStream).Val(); n != 1 {
		t.Errorf("after the erasure %d contact messages are stored, want 1", n)
	}

	x.do("the waitlist", chromedp.Evaluate[chromedp.Void](`location.hash = "#/forms/waitlist"`))
	x.waitShown("the waitlist", `main[data-view="forms-waitlist"] #entries table`)
	if list := x.text("the waitlist", "#entries"); !strings.Contains(list, "carol@example.com") || !strings.Contains(list, "subscribed") {
		t.Errorf("the waitlist:\n%s", list)
	}
	x.checkConsole("the waitlist", "waitlist")
	x.do("only pending", chromedp.SetValue(chromedp.CSS("#f-state"), "pending"), chromedp.Click(chromedp.CSS(`main form button`)))
	x.waitShown("the pending entries", `#entries[data-state="pending"] p.muted`)
	x.checkConsole("the waitlist, filtered to none", "")
}
