package manage_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/forms/manage"
	"github.com/formsservice/formsservice/services/forms/store"
)

// The forms are the built-in ones, those the catalogue lists and those that stored something, with
// their counts; a form nothing knows is ErrUnknownForm.
func TestForms_CatalogueStoredAndCounts(t *testing.T) {
	both(t, func(t *testing.T, f *fixture) {
		f.publish("demo")
		f.submit("demo", "ada@example.com", "Analytical Engines", store.Verdict{})
		f.submit("demo", "bob@example.com", "Spam Inc", spam)
		f.submit("old", "eve@example.com", "Gone Ltd", store.Verdict{}) // declared once, no longer
		f.contact("Ada", "ada@example.com", "Hello there, a question about pricing.", store.Verdict{})
		forms, published, err := f.ops.Forms(t.Context())
		if err != nil || published.IsZero() {
			t.Fatal(err, published)
		}
		var ids []string
		for _, fm := range forms {
			ids = append(ids, fm.ID)
		}
		if !slices.Equal(ids, []string{"contact", "waitlist", "demo", "old"}) {
			t.Fatalf("forms %v", ids)
		}
		demo, old := forms[2], forms[3]
		if demo.Title != "Form demo" || !demo.Declared || *demo.Counts.Submissions != 1 || *demo.Counts.Spam != 1 || *demo.Counts.DeadLetters != 0 ||
			len(demo.Fields) != 3 || demo.Fields[1].Label != "Company" || demo.Notifies == nil || !*demo.Notifies {
			t.Fatalf("demo %+v", demo)
		}
		if old.Declared || old.Title != "old" || *old.Counts.Submissions != 1 {
			t.Fatalf("old %+v", old)
		}
		if *forms[0].Counts.Submissions != 1 || forms[1].Counts.Entries == nil || forms[1].Counts.Submissions != nil {
			t.Fatalf("built-in %+v %+v", forms[0].Counts, forms[1].Counts)
		}
		if _, err := f.ops.Form(t.Context(), "nope"); !errors.Is(err, manage.ErrUnknownForm) {
			t.Fatalf("unknown form: %v", err)
		}
		if _, err := f.ops.Submissions(t.Context(), "waitlist", manage.Query{Limit: 5}); !errors.Is(err, manage.ErrNotSubmissions) {
			t.Fatalf("the waitlist's submissions: %v", err)
		}
	})
}

// A listing pages through a form's submissions newest first, each once, also while new ones arrive:
// a page continues before its last entry, and newer ones come before the first page.
func TestSubmissions_PagesNewestFirstStableWhileNewArrive(t *testing.T) {
	both(t, func(t *testing.T, f *fixture) {
		var stored []string
		for i := range 7 {
			stored = append(stored, f.contact("Ada", "ada"+itoa(i)+"@example.com", "Hello there, message number "+itoa(i), store.Verdict{}))
		}
		p, err := f.ops.Submissions(t.Context(), "contact", manage.Query{Limit: 3})
		if err != nil || len(p.Submissions) != 3 || p.Next == "" {
			t.Fatalf("first page: %+v %v", p, err)
		}
		got := []string{}
		for _, s := range p.Submissions {
			got = append(got, s.ID)
		}
		f.contact("Zed", "zed@example.com", "A new message meanwhile", store.Verdict{}) // arrives between the pages
		rest, pages := f.pages("contact", manage.Query{Limit: 3, Before: p.Next})
		got = append(got, rest...)
		if !slices.Equal(got, reversed(stored)) || pages != 2 {
			t.Fatalf("pages: %v (%d more pages), want %v", got, pages, reversed(stored))
		}
		s := p.Submissions[0]
		if s.Form != "contact" || s.Folder != "inbox" || s.State != manage.StateStored || s.Fields[0].Name != "name" ||
			s.Fields[len(s.Fields)-1].Value != "Hello there, message number 6" || s.Origin == "" || s.ReceivedAt.IsZero() {
			t.Fatalf("submission %+v", s)
		}
		// An exact page: no next page is promised that is not there.
		all, pages := f.pages("contact", manage.Query{Limit: 8})
		if len(all) != 8 || pages != 1 {
			t.Fatalf("one page of all: %d in %d pages", len(all), pages)
		}
	})
}

// The filters: text in any field's value, the folder, the delivery state, the time range.
func TestSubmissions_Filters(t *testing.T) {
	both(t, func(t *testing.T, f *fixture) {
		f.publish("demo")
		a := f.submit("demo", "ada@example.com", "Analytical Engines", store.Verdict{})
		b := f.submit("demo", "bob@example.com", "Babbage & Sons", store.Verdict{})
		c := f.submit("demo", "carol@example.com", "Crypto Offers", spam)
		d := f.submit("demo", "dan@example.com", "Difference Ltd", store.Verdict{})
		e := f.submit("demo", "erin@example.com", "Engines Two", store.Verdict{})
		q := store.FormQueue("demo")
		for _, m := range f.read(q, 3) { // a, b, d are taken: delivering
			switch store.MessageID(m) {
			case a:
				if err := f.rdb.XAck(t.Context(), q.Stream, store.DeliveryGroup, m.ID).Err(); err != nil {
					t.Fatal(err)
				}
			case b:
				if moved, err := q.MoveToDeadLetters(t.Context(), f.rdb, "worker", m, "smtp: 550 no such user", "mail", 5); err != nil || !moved {
					t.Fatal(err)
				}
			}
		}
		for query, want := range map[manage.Query][]string{
			{Text: "ENGINES"}:                {e, a},
			{Text: "billing"}:                {e, d, b, a}, // a list's element
			{Text: "babbage & sons"}:         {b},          // & skips the prefilter
			{Folder: "spam"}:                 {c},
			{Folder: "spam", Text: "crypto"}: {c},
			{State: manage.StateDelivered}:   {a},
			{State: manage.StateFailed}:      {b},
			{State: manage.StateDelivering}:  {d},
			{State: manage.StateQueued}:      {e},
			{Text: d}:                        {d}, // its ID
		} {
			query.Limit = 2
			got, _ := f.pages("demo", query)
			if !slices.Equal(got, want) {
				t.Errorf("%+v: %v, want %v", query, got, want)
			}
		}
		// A time range: the submissions stored in d's millisecond (the others may share it).
		got, _ := f.pages("demo", manage.Query{Since: store.StreamTime(d), Until: store.StreamTime(d), Limit: 5})
		if !slices.Contains(got, d) {
			t.Errorf("since and until at d: %v", got)
		}
		for _, id := range got {
			if !store.StreamTime(id).Equal(store.StreamTime(d)) {
				t.Errorf("since and until at d: %s is outside", id)
			}
		}
		for query, field := range map[manage.Query]string{
			{Folder: "trash", Limit: 5}:                 "folder",
			{Folder: "spam", State: "queued", Limit: 5}: "state",
			{State: "lost", Limit: 5}:                   "state",
			{Limit: 0}:                                  "limit",
			{Limit: 201}:                                "limit",
			{Before: "yesterday", Limit: 5}:             "cursor",
			{Since: time.Now(), Until: time.Now().Add(-time.Hour), Limit: 5}: "until",
		} {
			var fe *manage.FieldError
			if _, err := f.ops.Submissions(t.Context(), "demo", query); !errors.As(err, &fe) || fe.Field != field {
				t.Errorf("%+v: %v, want a refusal naming %s", query, err, field)
			}
		}
	})
}

// A filter that matches rarely is searched a bounded stretch per page: the page comes back short (even
// empty) with a cursor that goes on, and the pages together find every match.
func TestSubmissions_RareMatchesBoundedPerPage(t *testing.T) {
	f := newFixture(t, false)
	pipe := f.rdb.Pipeline()
	for i := range manage.ScanBudget + 700 {
		name := "Ada"
		if i == 3 || i == manage.ScanBudget+600 {
			name = "Needle"
		}
		rec := store.AppendContactRecord(nil, store.ContactRecord{Name: name, Email: "a@example.com", Topic: "general", Message: "Hello there", ReceivedAt: time.Now()})
		pipe.XAdd(t.Context(), &redis.XAddArgs{Stream: store.ContactStream, Values: []any{store.RecordField, string(rec)}})
	}
	if _, err := pipe.Exec(t.Context()); err != nil {
		t.Fatal(err)
	}
	p, err := f.ops.Submissions(t.Context(), "contact", manage.Query{Text: "needle", Limit: 10})
	if err != nil || len(p.Submissions) != 1 || p.Next == "" {
		t.Fatalf("first page: %d found, next %q, %v", len(p.Submissions), p.Next, err)
	}
	ids, pages := f.pages("contact", manage.Query{Text: "needle", Limit: 10})
	if len(ids) != 2 || pages != 2 {
		t.Fatalf("%d found in %d pages", len(ids), pages)
	}
}

// One submission is read by its ID in either folder; deleting erases it with its dead letters and its
// unique value (the address may send the form again); a release keeps its ID, and a submission marked
// as spam and released again is still found under it.
func TestSubmission_GetDeleteReleaseMark(t *testing.T) {
	both(t, func(t *testing.T, f *fixture) {
		f.publish("demo")
		ham := f.submit("demo", "ada@example.com", "Analytical Engines", store.Verdict{})
		junk := f.submit("demo", "bob@example.com", "Cheap pills", spam)
		op := f.ops.As(cli)
		ctx := t.Context()

		s, err := f.ops.Submission(ctx, "demo", junk)
		if err != nil || s.Folder != "spam" || s.State != manage.StateSpam || s.Spam == nil || s.Spam.Score != 6 {
			t.Fatalf("spam: %+v %v", s, err)
		}
		if err := op.Release(ctx, "demo", junk); err != nil {
			t.Fatal(err)
		}
		if s, err = f.ops.Submission(ctx, "demo", junk); err != nil || s.Folder != "inbox" || s.ID != junk || s.State != manage.StateStored {
			t.Fatalf("released: %+v %v", s, err)
		}
		if err := op.Release(ctx, "demo", junk); !errors.Is(err, store.ErrNotInFolder) {
			t.Fatalf("released twice: %v", err)
		}
		if err := op.MarkSpam(ctx, "demo", ham); err != nil {
			t.Fatal(err)
		}
		if s, err = f.ops.Submission(ctx, "demo", ham); err != nil || s.Folder != "spam" || s.ID != ham || s.Spam.Reasons[0] != store.ReasonMarked {
			t.Fatalf("marked: %+v %v", s, err)
		}
		if err := op.MarkSpam(ctx, "demo", ham); !errors.Is(err, store.ErrInFolder) {
			t.Fatalf("marked twice: %v", err)
		}
		// Marked as spam, its address no longer holds the unique value: the sender may send again.
		if f.rdb.HExists(ctx, store.FormUnique("demo"), "ada@example.com").Val() {
			t.Fatal("a submission marked as spam keeps its unique value")
		}
		if err := op.Release(ctx, "demo", ham); err != nil {
			t.Fatal(err)
		}
		if s, err = f.ops.Submission(ctx, "demo", ham); err != nil || s.Folder != "inbox" || s.ID != ham {
			t.Fatalf("released after marking: %+v %v", s, err)
		}
		if folder, err := op.DeleteSubmission(ctx, "demo", junk, ""); err != nil || folder != "inbox" {
			t.Fatalf("delete: %q %v", folder, err)
		}
		if _, err := f.ops.Submission(ctx, "demo", junk); !errors.Is(err, store.ErrNoSuchSubmission) {
			t.Fatalf("deleted, then read: %v", err)
		}
		if f.rdb.HExists(ctx, store.FormUnique("demo"), "bob@example.com").Val() {
			t.Fatal("a deleted submission keeps its unique value")
		}
		if _, err := op.DeleteSubmission(ctx, "demo", junk, ""); !errors.Is(err, store.ErrNoSuchSubmission) {
			t.Fatalf("deleted twice: %v", err)
		}
		if _, err := op.DeleteSubmission(ctx, "demo", ham, store.FolderSpam); !errors.Is(err, store.ErrNotInFolder) {
			t.Fatalf("deleted from the spam folder, being in the inbox: %v", err)
		}
		if _, err := f.ops.Submission(ctx, "demo", "1-0"); !errors.Is(err, store.ErrNoSuchSubmission) {
			t.Fatalf("an ID never stored: %v", err)
		}
		want := []string{"form.spam_released demo " + junk, "form.spam_marked demo " + ham, "form.spam_released demo " + ham,
			"form.submission_deleted demo " + junk}
		if got := f.kinds(); !slices.Equal(got, want) {
			t.Fatalf("recorded %v, want %v", got, want)
		}
		if f.events[0].by.Name != "cli" || f.events[0].Detail["osUser"] != "ops" {
			t.Fatalf("who acted: %+v", f.events[0])
		}
	})
}

// A dead letter is listed, retried under its ID (the submission is found again, queued) and
// discarded.
func TestDeadLetters_ListRetryDiscard(t *testing.T) {
	both(t, func(t *testing.T, f *fixture) {
		a := f.contact("Ada", "ada@example.com", "Hello there, a question.", store.Verdict{})
		b := f.contact("Bob", "bob@example.com", "Hello there, another.", store.Verdict{})
		q := store.ContactQueue
		for _, m := range f.read(q, 2) {
			if moved, err := q.MoveToDeadLetters(t.Context(), f.rdb, "worker", m, "webhook answered 410", "webhook", 20); err != nil || !moved {
				t.Fatal(err)
			}
		}
		dead, next, err := f.ops.DeadLetters(t.Context(), "contact", "", 1)
		if err != nil || len(dead) != 1 || next == "" || dead[0].ID != b || dead[0].Channel != "webhook" || dead[0].Attempts != 20 ||
			dead[0].Fields[1].Value != "bob@example.com" {
			t.Fatalf("first page: %+v %q %v", dead, next, err)
		}
		if dead, next, _ = f.ops.DeadLetters(t.Context(), "contact", next, 1); len(dead) != 1 || dead[0].ID != a || next != "" {
			t.Fatalf("second page: %+v %q", dead, next)
		}
		if s, _ := f.ops.Submission(t.Context(), "contact", a); s.State != manage.StateFailed {
			t.Fatalf("a dead letter's submission: %s", s.State)
		}
		op := f.ops.As(cli)
		if done, err := op.RetryDeadLetters(t.Context(), "contact", []string{a}); err != nil || !slices.Equal(done, []string{a}) {
			t.Fatalf("retry: %v %v", done, err)
		}
		if s, err := f.ops.Submission(t.Context(), "contact", a); err != nil || s.ID != a || s.State != manage.StateQueued {
			t.Fatalf("retried: %+v %v", s, err)
		}
		if _, err := op.RetryDeadLetters(t.Context(), "contact", []string{a}); !errors.Is(err, store.ErrNoSuchDeadLetter) {
			t.Fatalf("retried twice: %v", err)
		}
		if done, err := op.DiscardDeadLetters(t.Context(), "contact", []string{b}); err != nil || !slices.Equal(done, []string{b}) {
			t.Fatalf("discard: %v %v", done, err)
		}
		if s, _ := f.ops.Submission(t.Context(), "contact", b); s.State != manage.StateDelivered {
			t.Fatalf("a discarded dead letter's submission: %s", s.State) // read, not pending, no dead letter
		}
	})
}

// The waitlist is listed newest first with each entry's opt-in state, filtered by state and text, a
// page at a time; an entry erased between two pages moves the later ones, and none is lost.
func TestWaitlist_StatesFiltersPages(t *testing.T) {
	both(t, func(t *testing.T, f *fixture) {
		for i := range 6 {
			addr := "p" + itoa(i) + "@example.com"
			rec := store.AppendWaitlistRecord(nil, store.WaitlistRecord{Email: addr, Name: "Person " + itoa(i), Consent: true, CreatedAt: time.Now()})
			sub := store.WaitlistSubmission{Client: client, Canonical: addr, Record: rec}
			if i%2 == 1 {
				sub.OptIn = &store.OptIn{ID: "id" + itoa(i), Until: time.Now().Add(time.Hour), ResendAfter: time.Minute}
				rec = store.AppendWaitlistRecord(nil, store.WaitlistRecord{Email: addr, Name: "Person " + itoa(i), Consent: true, CreatedAt: time.Now(),
					ID: "id" + itoa(i), State: store.StatePending})
				sub.Record = rec
			}
			if r, err := f.st.AddWaitlist(t.Context(), sub, "process"); err != nil || r.Outcome != store.Stored {
				t.Fatal(r, err)
			}
		}
		if _, err := store.ConfirmWaitlist(t.Context(), f.rdb, "id5", time.Now()); err != nil {
			t.Fatal(err)
		}
		p, err := f.ops.Waitlist(t.Context(), manage.WaitlistQuery{Limit: 2})
		if err != nil || len(p.Entries) != 2 || p.Next == nil || p.Entries[0].Email != "p5@example.com" || p.Entries[0].State != "confirmed" ||
			p.Entries[0].ConfirmedAt == nil || p.Entries[1].State != "subscribed" {
			t.Fatalf("first page: %+v %v", p, err)
		}
		got := []string{p.Entries[0].Email, p.Entries[1].Email}
		// p3 (the next one) is erased between the pages.
		if _, err := f.ops.As(cli).Erase(t.Context(), "P3@example.com"); err != nil {
			t.Fatal(err)
		}
		for q := (manage.WaitlistQuery{Limit: 2, Before: p.Next}); ; {
			p, err := f.ops.Waitlist(t.Context(), q)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range p.Entries {
				got = append(got, e.Email)
			}
			if p.Next == nil {
				break
			}
			q.Before = p.Next
		}
		if want := []string{"p5@example.com", "p4@example.com", "p2@example.com", "p1@example.com", "p0@example.com"}; !slices.Equal(got, want) {
			t.Fatalf("pages %v, want %v", got, want)
		}
		p, _ = f.ops.Waitlist(t.Context(), manage.WaitlistQuery{State: "pending", Limit: 10})
		if len(p.Entries) != 1 || p.Entries[0].Email != "p1@example.com" {
			t.Fatalf("pending: %+v", p.Entries)
		}
		if p, _ = f.ops.Waitlist(t.Context(), manage.WaitlistQuery{Text: "PERSON 4", Limit: 10}); len(p.Entries) != 1 {
			t.Fatalf("text: %+v", p.Entries)
		}
		var fe *manage.FieldError
		if _, err := f.ops.Waitlist(t.Context(), manage.WaitlistQuery{State: "spam", Limit: 10}); !errors.As(err, &fe) || fe.Field != "state" {
			t.Fatalf("a state the waitlist has not: %v", err)
		}
	})
}

// An export writes the selected submissions as CSV, JSON lines or one JSON array, and records the rows
// it wrote; a text narrows it.
func TestExport_FormatsSelectionAndRecord(t *testing.T) {
	f := newFixture(t, false)
	f.publish("demo")
	a := f.submit("demo", "ada@example.com", "=SUM(A1)", store.Verdict{})
	f.submit("demo", "bob@example.com", "Babbage", store.Verdict{})
	f.submit("demo", "carol@example.com", "Crypto", spam)
	op := f.ops.As(manage.Actor{Name: "admin", Client: "console", Detail: map[string]string{"actorSub": "u1"}})

	var b bytes.Buffer
	if n, err := op.Export(t.Context(), &b, "demo", manage.ExportQuery{Format: "json"}); err != nil || n != 2 {
		t.Fatalf("json: %d %v", n, err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(b.Bytes(), &rows); err != nil || len(rows) != 2 || rows[0]["id"] != a {
		t.Fatalf("json: %v %s", err, b.String())
	}
	b.Reset()
	if n, err := op.Export(t.Context(), &b, "demo", manage.ExportQuery{Format: "csv", Text: "ADA@"}); err != nil || n != 1 {
		t.Fatalf("csv: %d %v", n, err)
	}
	cells, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(cells) != 2 || cells[1][0] != a || !slices.Contains(cells[1], "'=SUM(A1)") {
		t.Fatalf("csv: %v %v", cells, err)
	}
	b.Reset()
	if n, err := op.Export(t.Context(), &b, "demo", manage.ExportQuery{Format: "jsonl", Folder: "all"}); err != nil || n != 3 || strings.Count(b.String(), "\n") != 3 {
		t.Fatalf("all: %d %v %s", n, err, b.String())
	}
	if _, err := op.Export(t.Context(), &b, "demo", manage.ExportQuery{Format: "csv", Folder: "all"}); err == nil {
		t.Fatal("csv of both folders: no error")
	}
	b.Reset()
	if n, err := op.ExportWaitlist(t.Context(), &b, manage.WaitlistExportQuery{Format: "json"}); err != nil || n != 0 || strings.TrimSpace(b.String()) != "[\n]" {
		t.Fatalf("empty waitlist: %d %v %q", n, err, b.String())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.events[1]
	if len(f.events) != 4 || e.Kind != manage.Exported || e.Detail["rows"] != "1" || e.Detail["filtered"] != "true" || e.Detail["complete"] != "true" ||
		e.Detail["actorSub"] != "u1" || strings.Contains(strings.Join(slices.Collect(maps.Values(e.Detail)), " "), "ADA") {
		t.Fatalf("recorded %+v", f.events)
	}
}

// Erasure by address is recorded with what it erased, counted, and never the address.
func TestErase_RecordsCountsNotTheAddress(t *testing.T) {
	f := newFixture(t, false)
	f.contact("Ada", "ada@example.com", "Hello there, a question.", store.Verdict{})
	f.contact("Ada", "ADA@example.com", "Buy pills now", spam)
	rep, err := f.ops.As(cli).Erase(t.Context(), "Ada@Example.com")
	if err != nil || len(rep.ContactMessages) != 1 || rep.Spam != 1 {
		t.Fatalf("%+v %v", rep, err)
	}
	e := f.events[0]
	if e.Kind != manage.AddressErased || e.Detail["contact"] != "1" || e.Detail["spam"] != "1" {
		t.Fatalf("recorded %+v", e)
	}
	for _, v := range e.Detail {
		if strings.Contains(strings.ToLower(v), "ada") {
			t.Fatalf("the address in the trail: %+v", e.Detail)
		}
	}
	var fe *manage.FieldError
	if _, err := f.ops.As(cli).Erase(t.Context(), "not an address"); !errors.As(err, &fe) || fe.Field != "email" {
		t.Fatalf("a bad address: %v", err)
	}
}
