package delivery

import (
	"encoding/json"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// Spam kept in a form's folder is not delivered; released, it is delivered once under the ID it was kept
// with (the webhook-id); a second release delivers nothing more.
func TestForms_SpamIsNotDelivered_ReleasedOnceUnderItsID(t *testing.T) {
	wh := startHook(t)
	form := demoDeclaration(config.Webhook{URL: wh.URL})
	form.Notify.MailTo, form.Autoresponder = nil, nil
	h := startForms(t, declaredCfg(form))
	submit := func(name string, v store.Verdict) {
		t.Helper()
		rec, _ := json.Marshal(store.FormRecord{Form: "demo", Fields: demoFields(name, "x@example.com"), ReceivedAt: time.Now().UTC()})
		if r, err := h.store.AddSubmission(t.Context(), store.Submission{Form: "demo", Client: netip.MustParseAddr("127.0.0.1"),
			Record: rec, Verdict: v}, config.DurabilityProcess); err != nil || r.Outcome != store.Stored {
			t.Fatalf("%+v %v", r, err)
		}
	}
	ids := func() []string {
		wh.mu.Lock()
		defer wh.mu.Unlock()
		var out []string
		for _, hd := range wh.headers {
			out = append(out, hd.Get("webhook-id"))
		}
		return out
	}
	submit("Spammer", store.Verdict{Spam: true, Score: 8, Reasons: []string{"links"}})
	submit("Ada", store.Verdict{})
	// The stream is delivered in order, and the spam is not in it: once the genuine one is in, and
	// acknowledged, nothing else came.
	testwait.For(t, 10*time.Second, "the genuine submission", func() bool { return wh.calls() == 1 })
	q := store.FormQueue("demo")
	kept, _, err := store.ListSpam(t.Context(), h.rdb, q, "", 10)
	if err != nil || len(kept) != 1 {
		t.Fatalf("folder %+v %v", kept, err)
	}
	if err := store.ReleaseSpam(t.Context(), h.rdb, q, kept[0].ID); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "the released submission", func() bool { return wh.calls() == 2 })
	if got := ids(); got[1] != kept[0].ID {
		t.Fatalf("webhook-ids %v, want the released one under its kept ID %s", got, kept[0].ID)
	}
	if err := store.ReleaseSpam(t.Context(), h.rdb, q, kept[0].ID); !errors.Is(err, store.ErrNotInFolder) {
		t.Fatalf("a second release: %v", err)
	}
	submit("Grace", store.Verdict{})
	testwait.For(t, 10*time.Second, "the next genuine submission", func() bool { return wh.calls() == 3 })
	got := ids()
	if got[2] == got[1] {
		t.Fatalf("webhook-ids %v: the released submission came twice", got)
	}
}
