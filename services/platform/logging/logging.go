// Package logging builds the JSON logger every command writes with.
package logging

import (
	"io"
	"log/slog"
	"strings"
)

// New writes JSON lines at level (debug, info, warn, error). Secrets never go through it: callers
// log identifiers and counts, never tokens, codes, passwords or cookies.
func New(w io.Writer, level string) *slog.Logger {
	var lv slog.Level
	switch strings.ToLower(level) {
	case "debug":
		lv = slog.LevelDebug
	case "warn":
		lv = slog.LevelWarn
	case "error":
		lv = slog.LevelError
	default:
		lv = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lv}))
}
