package store

import (
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/services/platform/config"
)

// storeNow is the store's clock (Redis TIME), which the counts and the stream IDs go by.
func storeNow(t *testing.T, srv *testredis.Server) time.Time {
	t.Helper()
	now, err := srv.Client().Time(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now
}

func readDays(t *testing.T, srv *testredis.Server, daily string, n int) []DayCount {
	t.Helper()
	pipe := srv.Client().Pipeline()
	cmd := ReadDaily(t.Context(), pipe, daily)
	if _, err := pipe.Exec(t.Context()); err != nil {
		t.Fatal(err)
	}
	return cmd.Days(storeNow(t, srv), n)
}

// Every form counts, by the store's day, what it kept: its inbox and its spam folder apart; a replay,
// a duplicate, a refused spam and a rate-limited request are no arrivals.
func TestDaily_CountsWhatEachFormKeptByTheStoresDay(t *testing.T) {
	st, srv := testStore(t)
	ctx := t.Context()

	// A declared form: two kept, one replayed, one duplicate (unique), one spam, one refused spam.
	for i, c := range []struct {
		address string
		v       Verdict
		key     string
		want    Outcome
	}{
		{"ada@example.com", Verdict{}, "k1", Stored},
		{"ada@example.com", Verdict{}, "k1", Replayed},
		{"ada@example.com", Verdict{}, "", Duplicate},
		{"grace@example.com", Verdict{}, "", Stored},
		{"spam@example.com", spamVerdict, "", Stored},
		{"refused@example.com", Verdict{Spam: true, Refuse: true, Score: 12}, "", Stored},
	} {
		if r := addFormSubmission(t, st, "demo", c.address, c.v, c.key); r.Outcome != c.want {
			t.Fatalf("submission %d: %+v, want %v", i, r, c.want)
		}
	}
	// Contact: three kept, one more turned away by the rate limit of 3 a minute.
	for i := range 4 {
		rec := AppendContactRecord(nil, ContactRecord{Name: "Ada", Email: "ada" + strconv.Itoa(i) + "@example.com", Topic: "general",
			Message: "Hello there, a question about pricing.", ReceivedAt: time.Now().UTC()})
		r, err := st.AddContact(ctx, netip.MustParseAddr("192.0.2.7"), 3, Idempotency{}, rec, config.DurabilityProcess)
		if err != nil || (i < 3) != (r.Outcome == Stored) {
			t.Fatalf("contact %d: %+v %v", i, r, err)
		}
	}
	// The waitlist: two new sign-ups and one address signed up again.
	for _, address := range []string{"a@example.com", "b@example.com", "a@example.com"} {
		if _, err := st.AddWaitlist(ctx, WaitlistSubmission{Client: netip.MustParseAddr("192.0.2.8"), Canonical: address,
			Record: []byte(`{"email":"` + address + `"}`)}, config.DurabilityProcess); err != nil {
			t.Fatal(err)
		}
	}

	today := storeNow(t, srv).UTC().Format(time.DateOnly)
	for _, c := range []struct {
		daily     string
		ham, spam int64
	}{{FormDaily("demo"), 2, 1}, {ContactDaily, 3, 0}, {WaitlistDaily, 2, 0}} {
		days := readDays(t, srv, c.daily, 7)
		last := days[len(days)-1]
		if len(days) != 7 || last.Date != today || last.Submissions != c.ham || last.Spam != c.spam {
			t.Errorf("%s: today %+v, want %s with %d and %d spam", c.daily, last, today, c.ham, c.spam)
		}
		for _, d := range days[:6] {
			if d.Submissions != 0 || d.Spam != 0 {
				t.Errorf("%s: %+v before today", c.daily, d)
			}
		}
	}
}

// The days read are the n up to today, oldest first, each present; fields of other days and of no day
// are left out.
func TestDaily_DaysAreTheLastNUpToToday(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{})
	rdb := srv.Client()
	now := time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC)
	today := now.Unix() / 86400
	day := func(d int64) string { return strconv.FormatInt(today-d, 10) }
	rdb.HSet(t.Context(), "daily", day(0), 5, day(0)+":spam", 2, day(2), 7, day(3), 100, day(-1), 9, "junk", 1, day(1)+":spam", "x")
	pipe := rdb.Pipeline()
	cmd := ReadDaily(t.Context(), pipe, "daily")
	if _, err := pipe.Exec(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := cmd.Days(now, 3)
	want := []DayCount{{"2026-11-28", 7, 0}, {"2026-11-29", 0, 0}, {"2026-11-30", 5, 2}}
	if len(got) != len(want) {
		t.Fatalf("%+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("day %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
