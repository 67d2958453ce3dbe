// Package maintenance reads a FormsService's maintenance windows (spec.updatePolicy.maintenanceWindows,
// D79 in docs/decisions) and says whether one is open at a time, and when the next one opens. A window
// is "Sat:01:00-05:00" (that weekday, UTC) or "01:00-05:00" (every day); one whose end is at or before
// its start runs past midnight into the next day.
package maintenance

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// Pattern is the form of a window; the CRD's pattern is the same text (api/v1alpha1).
const Pattern = `^((Mon|Tue|Wed|Thu|Fri|Sat|Sun):)?([01][0-9]|2[0-3]):[0-5][0-9]-([01][0-9]|2[0-3]):[0-5][0-9]$`

var pattern = regexp.MustCompile(Pattern)

var weekdays = map[string]time.Weekday{
	"Sun": time.Sunday, "Mon": time.Monday, "Tue": time.Tuesday, "Wed": time.Wednesday,
	"Thu": time.Thursday, "Fri": time.Friday, "Sat": time.Saturday,
}

// Window is one parsed maintenance window.
type Window struct {
	text     string
	everyDay bool
	day      time.Weekday  // the day it opens on, when not everyDay
	start    time.Duration // since midnight UTC
	length   time.Duration // > 0, at most 24 h
}

func (w Window) String() string { return w.text }

// Parse reads one window. A window that opens and closes at the same minute is refused: it would be
// either never or always open, and neither is what someone writing it means.
func Parse(s string) (Window, error) {
	m := pattern.FindStringSubmatch(s)
	if m == nil {
		return Window{}, fmt.Errorf("maintenance window %q: want [Day:]HH:MM-HH:MM in UTC, Day one of Mon Tue Wed Thu Fri Sat Sun", s)
	}
	w := Window{text: s, everyDay: m[2] == "", day: weekdays[m[2]]}
	rest := s[len(m[1]):]
	w.start = clock(rest[0:5])
	end := clock(rest[6:11])
	switch {
	case end == w.start:
		return Window{}, fmt.Errorf("maintenance window %q opens and closes at the same minute", s)
	case end > w.start:
		w.length = end - w.start
	default: // past midnight
		w.length = 24*time.Hour - w.start + end
	}
	return w, nil
}

// clock reads "HH:MM" (already matched by the pattern) as a time since midnight.
func clock(hhmm string) time.Duration {
	h, _ := strconv.Atoi(hhmm[0:2])
	m, _ := strconv.Atoi(hhmm[3:5])
	return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute
}

// ParseAll reads every window; the first bad one is the error.
func ParseAll(texts []string) ([]Window, error) {
	out := make([]Window, 0, len(texts))
	for _, t := range texts {
		w, err := Parse(t)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// openings are the times w opened or opens around now: the last opening at or before now is among
// them, and so is the first after it.
func (w Window) openings(now time.Time) []time.Time {
	now = now.UTC()
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	var out []time.Time
	for d := -7; d <= 7; d++ {
		day := midnight.AddDate(0, 0, d)
		if w.everyDay || day.Weekday() == w.day {
			out = append(out, day.Add(w.start))
		}
	}
	return out
}

// Open says whether a window is open at now.
func Open(windows []Window, now time.Time) bool {
	for _, w := range windows {
		for _, o := range w.openings(now) {
			if !o.After(now) && now.Before(o.Add(w.length)) {
				return true
			}
		}
	}
	return false
}

// NextOpening is the first time after now at which a window opens (zero without windows).
func NextOpening(windows []Window, now time.Time) time.Time {
	var next time.Time
	for _, w := range windows {
		for _, o := range w.openings(now) {
			if o.After(now) && (next.IsZero() || o.Before(next)) {
				next = o
			}
		}
	}
	return next
}
