package store

import (
	"encoding/json"
	"net/netip"
	"testing"
	"time"

	"github.com/formsservice/formsservice/services/platform/config"
)

// Erasure takes a declared form's pending submissions of the address (kept for its double opt-in), with
// their queued confirmation mails — read by a mailer or not — and the address's resend window; another
// address's stay.
func TestForget_ErasesPendingFormSubmissionsAndTheirMails(t *testing.T) {
	st, srv := testStore(t)
	rdb := srv.Client()
	submit := func(addr, id string) Result {
		t.Helper()
		rec, _ := json.Marshal(FormRecord{Form: "news", Fields: Values{{Name: "email", Value: addr}}, ReceivedAt: time.Now().UTC()})
		r, err := st.AddSubmission(t.Context(), Submission{Form: "news", Client: netip.MustParseAddr("127.0.0.1"), Record: rec, Unique: addr,
			OptIn: &OptIn{ID: id, Until: time.Now().Add(time.Hour), ResendAfter: time.Hour}}, config.DurabilityProcess)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := submit("gone@example.com", "id-1"); r.Outcome != Stored {
		t.Fatalf("first: %+v", r)
	}
	if err := EnsureFormOutboxGroup(t.Context(), rdb, "news"); err != nil {
		t.Fatal(err)
	}
	if m, err := TakeFormOutbox(t.Context(), rdb, "news", "mailer-1", time.Minute, 10); err != nil || len(m) != 1 || m[0].Address != "id-1" {
		t.Fatalf("one read, not yet sent: %v %v", m, err)
	}
	submit("stays@example.com", "id-2")
	rdb.Del(t.Context(), formResendKey("news", "gone@example.com")) // its window over: sent again, mailed again
	if r := submit("gone@example.com", "id-3"); r.Outcome != Duplicate {
		t.Fatalf("again while pending: %+v", r)
	}
	if n := rdb.XLen(t.Context(), FormOutbox("news")).Val(); n != 3 {
		t.Fatalf("%d mails queued, want 3", n)
	}

	rep, err := Forget(t.Context(), rdb, "Gone@Example.com")
	if err != nil {
		t.Fatal(err)
	}
	if rep.FormPending != 1 || rep.ConfirmationMails != 2 {
		t.Fatalf("report %+v", rep)
	}
	left := rdb.XRange(t.Context(), FormOutbox("news"), "-", "+").Val()
	if len(left) != 1 || left[0].Values["e"] != "id-2" {
		t.Fatalf("the outbox after forget: %v, want the other address's mail only", left)
	}
	if p := rdb.XPending(t.Context(), FormOutbox("news"), OutboxGroup).Val(); p.Count != 0 {
		t.Fatalf("%d mails still pending with a mailer", p.Count)
	}
	if _, ok, _ := FormPendingEntry(t.Context(), rdb, "news", "id-1"); ok {
		t.Fatal("the pending submission is still there")
	}
	if _, ok, _ := FormPendingEntry(t.Context(), rdb, "news", "id-2"); !ok {
		t.Fatal("the other address's pending submission is gone")
	}
	if rdb.Exists(t.Context(), formResendKey("news", "gone@example.com")).Val() != 0 || rdb.HExists(t.Context(), FormUnique("news"), "gone@example.com").Val() {
		t.Fatal("forget left the address's resend window or unique value")
	}
	// The address may send the form anew.
	if r := submit("gone@example.com", "id-4"); r.Outcome != Stored {
		t.Fatalf("after forget: %+v", r)
	}
}
