package maintenance

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func windows(t *testing.T, texts ...string) []Window {
	t.Helper()
	w, err := ParseAll(texts)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// 2026-12-05 is a Saturday.
func TestOpen_AWeekdayWindowIsOpenFromItsStartUntilJustBeforeItsEnd(t *testing.T) {
	w := windows(t, "Sat:01:00-05:00")
	for _, c := range []struct {
		now  string
		open bool
	}{
		{"2026-12-05T00:59:59Z", false},
		{"2026-12-05T01:00:00Z", true},
		{"2026-12-05T04:59:59Z", true},
		{"2026-12-05T05:00:00Z", false},
		{"2026-12-06T01:30:00Z", false}, // Sunday
		{"2026-12-12T02:00:00Z", true},  // the next Saturday
		{"2026-12-05T02:00:00+01:00", true},
	} {
		if got := Open(w, at(t, c.now)); got != c.open {
			t.Errorf("Open(Sat:01:00-05:00, %s) = %v, want %v", c.now, got, c.open)
		}
	}
}

func TestOpen_AWindowPastMidnightRunsIntoTheNextDay(t *testing.T) {
	w := windows(t, "Sun:22:00-02:00")
	for _, c := range []struct {
		now  string
		open bool
	}{
		{"2026-12-06T21:59:00Z", false}, // Sunday
		{"2026-12-06T22:00:00Z", true},
		{"2026-12-07T01:59:00Z", true}, // Monday, still Sunday's window
		{"2026-12-07T02:00:00Z", false},
		{"2026-12-07T23:00:00Z", false}, // Monday evening: not a Monday window
	} {
		if got := Open(w, at(t, c.now)); got != c.open {
			t.Errorf("Open(Sun:22:00-02:00, %s) = %v, want %v", c.now, got, c.open)
		}
	}
}

func TestOpen_AnEveryDayWindowAndSeveralWindows(t *testing.T) {
	w := windows(t, "03:00-04:00", "Wed:12:00-12:30")
	for _, c := range []struct {
		now  string
		open bool
	}{
		{"2026-12-01T03:10:00Z", true}, // Tuesday
		{"2026-12-04T03:59:00Z", true}, // Friday
		{"2026-12-02T12:15:00Z", true}, // Wednesday
		{"2026-12-03T12:15:00Z", false},
		{"2026-12-03T04:00:00Z", false},
	} {
		if got := Open(w, at(t, c.now)); got != c.open {
			t.Errorf("Open(%s) = %v, want %v", c.now, got, c.open)
		}
	}
	if Open(nil, at(t, "2026-12-01T03:10:00Z")) {
		t.Error("no window is open without windows")
	}
}

func TestNextOpening_IsTheFirstStartAfterNow(t *testing.T) {
	w := windows(t, "Sat:01:00-05:00", "Tue:23:00-01:00")
	for _, c := range []struct{ now, next string }{
		{"2026-11-30T10:00:00Z", "2026-12-01T23:00:00Z"}, // Monday → Tuesday night
		{"2026-12-01T23:00:00Z", "2026-12-05T01:00:00Z"}, // at an opening: the next one
		{"2026-12-05T06:00:00Z", "2026-12-08T23:00:00Z"},
	} {
		if got := NextOpening(w, at(t, c.now)); !got.Equal(at(t, c.next)) {
			t.Errorf("NextOpening(%s) = %s, want %s", c.now, got, c.next)
		}
	}
	if got := NextOpening(nil, at(t, "2026-12-01T00:00:00Z")); !got.IsZero() {
		t.Errorf("NextOpening without windows = %s, want zero", got)
	}
}

func TestParse_RefusesWhatIsNotAWindow(t *testing.T) {
	for _, bad := range []string{"", "Sat", "sat:01:00-05:00", "Sat:1:00-05:00", "24:00-01:00", "01:60-02:00",
		"01:00-01:00", "Sat:01:00-01:00", "Sat 01:00-05:00", "01:00–05:00", "Saturday:01:00-02:00", "01:00-05:00 "} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	if _, err := ParseAll([]string{"01:00-02:00", "nope"}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("ParseAll names the bad window: %v", err)
	}
}

// The CRD refuses with the same pattern, plus a rule for a window that opens and closes at once
// (api/v1alpha1/update_types.go); both must keep agreeing with Parse.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"Sat:01:00-05:00", "01:00-05:00", "Sun:22:00-02:00", "00:00-00:00", "Mon:23:59-00:00", "x"} {
		f.Add(s)
	}
	re := regexp.MustCompile(Pattern)
	f.Fuzz(func(t *testing.T, s string) {
		w, err := Parse(s)
		if err != nil {
			return
		}
		if !re.MatchString(s) {
			t.Fatalf("Parse(%q) accepted what the pattern refuses", s)
		}
		if w.length <= 0 || w.length >= 24*time.Hour {
			t.Fatalf("Parse(%q): length %s", s, w.length)
		}
		now := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
		next := NextOpening([]Window{w}, now)
		if next.IsZero() || !next.After(now) || next.Sub(now) > 7*24*time.Hour {
			t.Fatalf("NextOpening(%q) = %s", s, next)
		}
		if !Open([]Window{w}, next) || Open([]Window{w}, next.Add(w.length)) {
			t.Fatalf("window %q not open at its opening %s, or still open at its end", s, next)
		}
	})
}
