package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// WriteJSONLines writes one JSON object per event.
func WriteJSONLines(w io.Writer, events []Event) error {
	enc := json.NewEncoder(w)
	for _, e := range events {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return nil
}

// WriteText writes one line per event: time, kind, outcome, then key=value pairs (values with spaces
// or quotes are quoted), for people and grep.
func WriteText(w io.Writer, events []Event) error {
	for _, e := range events {
		var b strings.Builder
		b.WriteString(e.Time.UTC().Format(time.RFC3339Nano))
		b.WriteString("  ")
		b.WriteString(string(e.Kind))
		b.WriteString("  ")
		b.WriteString(string(e.Outcome))
		for _, f := range []struct{ k, v string }{{"reason", e.Reason}, {"user", e.User}, {"client", e.Client}, {"addr", e.Addr},
			{"actor", e.Actor}, {"grant", e.Grant}} {
			pair(&b, f.k, f.v)
		}
		keys := make([]string, 0, len(e.Detail))
		for k := range e.Detail {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			pair(&b, k, e.Detail[k])
		}
		pair(&b, "ua", e.UserAgent)
		b.WriteByte('\n')
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}

func pair(b *strings.Builder, k, v string) {
	if v == "" {
		return
	}
	b.WriteString("  ")
	b.WriteString(k)
	b.WriteByte('=')
	if strings.ContainsAny(v, " \"\\=") || strconv.Quote(v) != `"`+v+`"` {
		v = strconv.Quote(v)
	}
	b.WriteString(v)
}

// ParseKinds reads a comma-separated list of kinds; a kind that is not declared is an error naming the
// declared ones. A name ending in ".*" (or a bare prefix such as "token.") selects every kind under it.
func ParseKinds(s string) ([]Kind, error) {
	var out []Kind
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if prefix, ok := strings.CutSuffix(name, "*"); ok || strings.HasSuffix(name, ".") {
			if !ok {
				prefix = name
			}
			n := len(out)
			for _, d := range declared {
				if strings.HasPrefix(string(d.Kind), prefix) {
					out = append(out, d.Kind)
				}
			}
			if len(out) == n {
				return nil, fmt.Errorf("no audit kind starts with %q (kinds: %s)", prefix, kindList())
			}
			continue
		}
		if !Known(Kind(name)) {
			return nil, fmt.Errorf("unknown audit kind %q (kinds: %s)", name, kindList())
		}
		out = append(out, Kind(name))
	}
	return out, nil
}

func kindList() string {
	names := make([]string, len(declared))
	for i, d := range declared {
		names[i] = string(d.Kind)
	}
	return strings.Join(names, ", ")
}

// ParseTime reads a point in time: RFC 3339 (2024-05-01T12:00:00Z), a date (2024-05-01, midnight UTC),
// or a duration before now (90m, 24h, 7d).
func ParseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("time %q: want RFC 3339 (2024-05-01T12:00:00Z), a date (2024-05-01) or a duration ago (90m, 24h, 7d)", s)
}
