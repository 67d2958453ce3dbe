package store

import (
	"net/netip"
	"testing"
	"time"

	"github.com/formsservice/formsservice/services/platform/config"
)

// Erasure takes the address's confirmation mails still queued in the outbox too (each names the address),
// whether a mailer has read them yet or not; another address's stay queued.
func TestForget_RemovesTheAddressesQueuedConfirmationMails(t *testing.T) {
	st, srv := testStore(t)
	rdb := srv.Client()
	signUp := func(addr, id string) {
		t.Helper()
		rec := AppendWaitlistRecord(nil, WaitlistRecord{Email: addr, Consent: true, CreatedAt: time.Now().UTC(), ID: id, State: StatePending})
		sub := WaitlistSubmission{Client: netip.MustParseAddr("127.0.0.1"), Canonical: addr, Record: rec,
			OptIn: &OptIn{ID: id, Until: time.Now().Add(time.Hour), ResendAfter: time.Hour}}
		if r, err := st.AddWaitlist(t.Context(), sub, config.DurabilityProcess); err != nil {
			t.Fatalf("%s: %+v %v", addr, r, err)
		}
	}
	signUp("gone@example.com", "id-1")
	if err := EnsureOutboxGroup(t.Context(), rdb); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadOutbox(t.Context(), rdb, "mailer-1", 10, 0); err != nil { // one read, not yet sent
		t.Fatal(err)
	}
	signUp("stays@example.com", "id-2")
	rdb.Del(t.Context(), ResendKey("gone@example.com")) // its resend window over: signed up again, mailed again
	signUp("gone@example.com", "id-1")
	if n := rdb.XLen(t.Context(), WaitlistOutbox).Val(); n != 3 {
		t.Fatalf("%d mails queued, want 3", n)
	}

	if _, err := Forget(t.Context(), rdb, "Gone@Example.com"); err != nil {
		t.Fatal(err)
	}
	left := rdb.XRange(t.Context(), WaitlistOutbox, "-", "+").Val()
	if len(left) != 1 || left[0].Values["a"] != "stays@example.com" {
		t.Fatalf("the outbox after forget: %v, want the other address's mail only", left)
	}
	if p := rdb.XPending(t.Context(), WaitlistOutbox, OutboxGroup).Val(); p.Count != 0 {
		t.Fatalf("%d mails still pending with a mailer", p.Count)
	}
}
