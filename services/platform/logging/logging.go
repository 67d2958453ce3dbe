// Package logging builds the logger every command writes with: JSON lines for machines (the default,
// and what production runs), or readable text for a person at a terminal (the dev server's choice).
package logging

import (
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/lmittmann/tint"
)

// Options says how to log.
type Options struct {
	// Level is debug, info, warn or error (default info).
	Level string
	// Text writes "15:04:05.000 INF message key=value" lines instead of JSON.
	Text bool
	// Color colours Text output (a terminal that did not ask for NO_COLOR).
	Color bool
}

// New writes JSON lines at level (debug, info, warn, error). Secrets never go through it: callers
// log identifiers and counts, never tokens, codes, passwords or cookies.
func New(w io.Writer, level string) *slog.Logger { return NewWith(w, Options{Level: level}) }

// NewWith writes in the format o asks for.
func NewWith(w io.Writer, o Options) *slog.Logger {
	lv := ParseLevel(o.Level)
	if o.Text {
		return slog.New(tint.NewTextHandler(w, &tint.Options{Level: lv, TimeFormat: time.TimeOnly, NoColor: !o.Color}))
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lv}))
}

// ParseLevel reads debug, info, warn or error in any case; anything else is info.
func ParseLevel(level string) slog.Level {
	switch strings.ToLower(level) {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}
