package store

import (
	"net/netip"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/config"
)

// A pending address signed up again is mailed again, but not every resendAfter forever (a bot would mail
// an address from the site's domain without end): each re-send doubles the window before the next, and
// after MaxResends the address gets no more until its entry expires.
func TestAddWaitlist_PendingAddressSignedUpAgain_ResendsCappedWithBackoff(t *testing.T) {
	st, srv := testStore(t)
	rdb := srv.Client()
	const addr, resendAfter = "ada@example.com", 10 * time.Minute
	signUp := func() {
		t.Helper()
		rec := AppendWaitlistRecord(nil, WaitlistRecord{Email: addr, Consent: true, CreatedAt: time.Now().UTC(), ID: "id-1", State: StatePending})
		sub := WaitlistSubmission{Client: netip.MustParseAddr("127.0.0.1"), Canonical: addr, Record: rec,
			OptIn: &OptIn{ID: "id-1", Until: time.Now().Add(48 * time.Hour), ResendAfter: resendAfter}}
		if _, err := st.AddWaitlist(t.Context(), sub, config.DurabilityProcess); err != nil {
			t.Fatal(err)
		}
	}
	queued := func() int64 { return rdb.XLen(t.Context(), WaitlistOutbox).Val() }

	signUp()
	window := resendAfter
	for i := range MaxResends {
		signUp() // within the window: no mail
		if ttl := rdb.PTTL(t.Context(), ResendKey(addr)).Val(); ttl <= window-time.Minute {
			t.Fatalf("re-send %d: the window is %v, want %v", i+1, ttl, window)
		}
		testredis.EndLifetimes(t, rdb, ResendKey(addr), window)
		signUp()
		if n := queued(); n != int64(i+2) {
			t.Fatalf("after re-send %d: %d mails queued, want %d", i+1, n, i+2)
		}
		window *= 2
	}
	testredis.EndLifetimes(t, rdb, ResendKey(addr), window)
	signUp()
	signUp()
	if n := queued(); n != 1+MaxResends {
		t.Fatalf("%d mails queued, want %d: no more once the re-sends are used up", n, 1+MaxResends)
	}
}
