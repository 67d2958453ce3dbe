package forms

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/forms/store"
)

func exportLines(t *testing.T, rdb redis.UniversalClient, what, format string) (string, int) {
	t.Helper()
	var b bytes.Buffer
	export := store.ExportWaitlist
	if what == "contact" {
		export = store.ExportContact
	}
	n, err := export(t.Context(), rdb, &b, format)
	if err != nil {
		t.Fatalf("export %s %s: %v", what, format, err)
	}
	return b.String(), n
}

func TestExportWaitlist_WritesEntriesOldestFirst(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	// The first address sorts after the second: an export ordered by address would fail.
	h.post("/waitlist", `{"email":"Zoe.First@Example.com","consent":true,"name":"=HYPERLINK(\"http://evil\")","size":"51-250"}`).expect(t, 201, "created")
	h.post("/waitlist", `{"email":"second@example.com","consent":true,"association":"Club, \"The\"","role":"member"}`).expect(t, 201, "created")

	out, n := exportLines(t, h.rdb, "waitlist", store.FormatCSV)
	if n != 2 {
		t.Fatalf("exported %d", n)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows[0], ",") != "email,name,association,role,size,consent,created_at,origin,state,consent_version,confirmed_at,unsubscribed_at" {
		t.Fatalf("header %v", rows[0])
	}
	if rows[1][0] != "zoe.first@example.com" || rows[2][0] != "second@example.com" {
		t.Fatalf("order or case: %v", rows)
	}
	if rows[1][1] != `'=HYPERLINK("http://evil")` {
		t.Fatalf("a formula is exported as a formula: %q", rows[1][1])
	}
	if rows[1][4] != "51–250" || rows[2][2] != `Club, "The"` || rows[2][3] != "member" || rows[1][5] != "true" || rows[1][7] != formstest.Origin ||
		rows[1][8] != store.StateSubscribed {
		t.Fatalf("rows %v", rows)
	}

	out, _ = exportLines(t, h.rdb, "waitlist", store.FormatJSONL)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var rec store.WaitlistRecord
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &rec) != nil || rec.Name != `=HYPERLINK("http://evil")` {
		t.Fatalf("jsonl: %q", out)
	}
}

func TestExportContact_WritesEveryMessageWithItsID(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for i := range 3 {
		h.post("/contact", fmt.Sprintf(`{"name":"N%d","email":"n%d@example.com","message":"Message number %d, multi\nline."}`, i, i, i)).expect(t, 201, "created")
	}
	out, n := exportLines(t, h.rdb, "contact", store.FormatJSONL)
	if n != 3 {
		t.Fatalf("exported %d", n)
	}
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var v struct {
			ID      string `json:"id"`
			Name    string `json:"name"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil || v.ID == "" || v.Name != fmt.Sprintf("N%d", i) || !strings.Contains(v.Message, "\nline.") {
			t.Fatalf("line %d: %q (%v)", i, line, err)
		}
	}
	out, _ = exportLines(t, h.rdb, "contact", store.FormatCSV)
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 4 || rows[0][0] != "id" || rows[3][6] != "Message number 2, multi\nline." {
		t.Fatalf("csv %v (%v)", rows, err)
	}
}

func TestExport_UnknownFormat_IsAnError(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	if _, err := store.ExportWaitlist(t.Context(), h.rdb, &bytes.Buffer{}, "xml"); err == nil {
		t.Fatal("no error")
	}
}

func TestForget_ErasesAddressFromWaitlistAndContactMessages(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.post("/waitlist", `{"email":"Gone@Example.com","consent":true}`).expect(t, 201, "created")
	h.post("/waitlist", `{"email":"stays@example.com","consent":true}`).expect(t, 201, "created")
	h.post("/contact", `{"name":"Gone","email":"GONE@example.com","message":"Please forget me later."}`).expect(t, 201, "created")
	h.post("/contact", `{"name":"Stays","email":"stays@example.com","message":"I stay on the record."}`).expect(t, 201, "created")
	h.post("/contact", `{"name":"Gone again","email":"gone@example.com","message":"A second message, pending."}`).expect(t, 201, "created")
	// One of the messages is pending with a (dead) delivery consumer.
	if err := store.EnsureDeliveryGroup(t.Context(), h.rdb); err != nil {
		t.Fatal(err)
	}
	h.rdb.XReadGroup(t.Context(), &redis.XReadGroupArgs{Group: store.DeliveryGroup, Consumer: "x", Streams: []string{store.ContactStream, ">"}, Count: 1, Block: -1})

	rep, err := store.Forget(t.Context(), h.rdb, " gone@EXAMPLE.com ")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Email != "gone@example.com" || rep.WaitlistEntries != 1 || len(rep.ContactMessages) != 2 {
		t.Fatalf("report %+v", rep)
	}
	wl, _ := exportLines(t, h.rdb, "waitlist", store.FormatJSONL)
	ct, _ := exportLines(t, h.rdb, "contact", store.FormatJSONL)
	if strings.Contains(strings.ToLower(wl+ct), "gone") {
		t.Fatalf("still stored:\n%s\n%s", wl, ct)
	}
	if !strings.Contains(wl, "stays@example.com") || !strings.Contains(ct, "stays@example.com") {
		t.Fatal("erased someone else")
	}
	pend, _ := h.rdb.XPendingExt(t.Context(), &redis.XPendingExtArgs{Stream: store.ContactStream, Group: store.DeliveryGroup, Start: "-", End: "+", Count: 10}).Result()
	for _, p := range pend {
		if slices.Contains(rep.ContactMessages, p.ID) {
			t.Fatal("an erased message is still pending delivery")
		}
	}
	// The address may sign up again; a second erasure finds nothing.
	h.post("/waitlist", `{"email":"gone@example.com","consent":true}`).expect(t, 201, "created")
	if _, err := store.Forget(t.Context(), h.rdb, "gone@example.com"); err != nil {
		t.Fatal(err)
	}
	rep, _ = store.Forget(t.Context(), h.rdb, "gone@example.com")
	if rep.WaitlistEntries != 0 || len(rep.ContactMessages) != 0 {
		t.Fatalf("second erasure %+v", rep)
	}
	if _, err := store.Forget(t.Context(), h.rdb, "not an address"); err == nil {
		t.Fatal("no error for an invalid address")
	}
}
