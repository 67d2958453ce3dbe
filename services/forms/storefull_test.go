package forms

import (
	"fmt"
	"strings"
	"testing"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/forms/store"
)

// TestForms_StoreAtMaxmemory_Answers502AndKeepsWhatItAcknowledged runs on a Redis with a small
// maxmemory and noeviction, as the managed Redis is rendered: once it is full, submissions answer 502
// (counted as store_error, which the FormsServiceStoreErrors alert watches, and as store_errors_total
// reason full, which FormsServiceStoreFull watches), never 500 and never a 201
// for something not stored; what was acknowledged before stays.
func TestForms_StoreAtMaxmemory_Answers502AndKeepsWhatItAcknowledged(t *testing.T) {
	rs := testredis.Start(t, testredis.Options{AppendFsync: "no", Args: []string{"--maxmemory", "3mb", "--maxmemory-policy", "noeviction"}})
	h := newHarness(t, harnessOpts{redis: rs})
	text := strings.Repeat("a long message to fill the store. ", 110) // ~3.8 KB
	created, full := 0, false
	for i := 0; i < 3000 && !full; i++ {
		a := h.post("/contact", fmt.Sprintf(`{"name":"Ada","email":"a%d@example.com","message":%q}`, i, text))
		switch a.code {
		case 201:
			created++
		case 502:
			full = true
		default:
			t.Fatalf("submission %d: %d %s", i, a.code, a.raw)
		}
	}
	if !full || created == 0 {
		t.Fatalf("%d created, full %v: the store never refused a write", created, full)
	}
	if n := h.rdb.XLen(t.Context(), store.ContactStream).Val(); n != int64(created) {
		t.Fatalf("%d messages stored, %d acknowledged", n, created)
	}
	if h.counter("formsservice_forms_submissions_total", "endpoint", "contact", "result", "store_error") < 1 {
		t.Fatal("the refused write is not counted as store_error")
	}
	// The reason tells a full store (it needs memory, not patience) from an outage; the
	// FormsServiceStoreFull alert watches it.
	if h.counter("formsservice_forms_store_errors_total", "reason", "full") < 1 {
		t.Fatal("the refused write is not counted as store_errors_total{reason=\"full\"}")
	}
	if n := h.counter("formsservice_forms_store_errors_total", "reason", "unavailable"); n != 0 {
		t.Fatalf("a full store counted %v times as unavailable", n)
	}
}
