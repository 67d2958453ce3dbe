package store

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/formsservice/formsservice/internal/testredis"

	"github.com/formsservice/formsservice/services/platform/config"
)

// scriptCalls reads how many scripts Redis ran.
func scriptCalls(t *testing.T, srv *testredis.Server) int {
	t.Helper()
	info := srv.Client().Info(t.Context(), "commandstats").Val()
	n := 0
	for _, line := range strings.Split(info, "\n") {
		if strings.HasPrefix(line, "cmdstat_evalsha:") || strings.HasPrefix(line, "cmdstat_eval:") {
			calls, _, _ := strings.Cut(strings.TrimPrefix(line[strings.Index(line, ":")+1:], "calls="), ",")
			c, _ := strconv.Atoi(calls)
			n += c
		}
	}
	return n
}

func TestBatcher_ConcurrentSubmissionsShareCallsAndGetTheirOwnAnswers(t *testing.T) {
	st, srv := testStore(t)
	client := netip.MustParseAddr("192.0.2.1")
	var mu sync.Mutex
	got := map[Outcome]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 400 {
		wg.Go(func() {
			<-start
			email := fmt.Sprintf("u%d@example.com", i%200) // every address twice
			r, err := st.AddWaitlist(t.Context(), WaitlistSubmission{Client: client, Canonical: email, Record: []byte(`{"email":"` + email + `"}`)}, config.DurabilityProcess)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got[r.Outcome]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	if got[Stored] != 200 || got[Duplicate] != 200 {
		t.Fatalf("outcomes %v, want 200 stored and 200 duplicates", got)
	}
	if n := srv.Client().HLen(t.Context(), WaitlistEntries).Val(); n != 200 {
		t.Fatalf("%d entries", n)
	}
	if calls := scriptCalls(t, srv); calls >= 400 || calls < 1 {
		t.Fatalf("%d script calls for 400 submissions: not batched", calls)
	} else {
		t.Logf("400 submissions in %d script calls", calls)
	}
}

func TestBatcher_RateLimitHoldsWithinABatch(t *testing.T) {
	st, _ := testStore(t)
	client := netip.MustParseAddr("2001:db8::7")
	var mu sync.Mutex
	got := map[Outcome]int{}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			r, err := st.AddContact(t.Context(), client, 5, Idempotency{}, []byte(`{"n":`+strconv.Itoa(i)+`}`), config.DurabilityProcess)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got[r.Outcome]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if got[Stored] != 5 || got[RateLimited] != 45 {
		t.Fatalf("outcomes %v, want 5 stored and 45 rate-limited", got)
	}
	if n := st.rdb.XLen(t.Context(), ContactStream).Val(); n != 5 {
		t.Fatalf("%d messages stored", n)
	}
}

func TestBatcher_CallerThatGaveUp_StoresNothing(t *testing.T) {
	st, _ := testStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := st.AddWaitlist(ctx, WaitlistSubmission{Client: netip.MustParseAddr("192.0.2.1"), Canonical: "late@example.com", Record: []byte(`{}`)}, config.DurabilityProcess); err == nil {
		t.Fatal("no error for a cancelled request")
	}
	// The queue drains (a later submission is answered) without storing the abandoned one.
	if r, err := st.AddWaitlist(t.Context(), WaitlistSubmission{Client: netip.MustParseAddr("192.0.2.1"), Canonical: "next@example.com", Record: []byte(`{}`)}, config.DurabilityProcess); err != nil || r.Outcome != Stored {
		t.Fatalf("%v %v", r, err)
	}
	if st.rdb.HExists(t.Context(), WaitlistEntries, "late@example.com").Val() {
		t.Fatal("an abandoned submission was stored")
	}
}
