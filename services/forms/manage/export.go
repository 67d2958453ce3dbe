package manage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/formsservice/formsservice/services/forms/store"
)

// FolderAll exports a form's inbox and then its spam folder (JSON lines only: their rows differ).
const FolderAll = "all"

// Formats are the export formats.
var Formats = []string{store.FormatCSV, store.FormatJSONL, store.FormatJSON}

// ExportQuery selects what an export writes: the folder (inbox, the default; spam; or all), the format
// (csv, jsonl, json), the time range (of the entries' places in the stream, as Query's) and a text.
type ExportQuery struct {
	Folder       string
	Format       string
	Since, Until time.Time
	Text         string
}

func (q *ExportQuery) check() error {
	if q.Folder == "" {
		q.Folder = store.FolderInbox
	}
	switch {
	case !slices.Contains(Formats, q.Format):
		return &FieldError{"format", "csv, jsonl or json"}
	case len([]rune(q.Text)) > MaxText:
		return &FieldError{"q", "at most " + strconv.Itoa(MaxText) + " characters"}
	case q.Folder != store.FolderInbox && q.Folder != store.FolderSpam && q.Folder != FolderAll:
		return &FieldError{"folder", "inbox, spam or all"}
	case q.Folder == FolderAll && q.Format != store.FormatJSONL:
		return &FieldError{"folder", "all needs the format jsonl (spam rows have other columns)"}
	case !q.Since.IsZero() && !q.Until.IsZero() && q.Until.Before(q.Since):
		return &FieldError{"until", "before since"}
	}
	return nil
}

// CheckExport refuses an export before it starts, so that a door answers the refusal before the first
// row: its query, and a form that keeps no submissions or that nothing knows.
func (o *Ops) CheckExport(ctx context.Context, form string, q *ExportQuery) error {
	if err := q.check(); err != nil {
		return err
	}
	_, err := o.queueOf(ctx, form)
	return err
}

// Export writes form's submissions that q selects, oldest first, to w as it reads them from the store a
// page at a time (memory does not grow with the rows), and returns how many it wrote. It is recorded as
// form.exported with the rows written and whether it completed (an export takes personal data out;
// the text searched for is not recorded, only that there was one).
func (op Operator) Export(ctx context.Context, w io.Writer, form string, q ExportQuery) (int, error) {
	if err := q.check(); err != nil {
		return 0, err
	}
	queue, err := op.o.queueOf(ctx, form)
	if err != nil {
		return 0, err
	}
	out := &exportWriter{w: w}
	sel := store.Selection{Since: q.Since, Until: q.Until}
	if text := newMatcher(q.Text); text != nil {
		sel.Keep = func(raw string) bool {
			var s Submission
			return text.prefilter(raw) && fieldsOf(form, raw, &s) == nil && text.submission(s)
		}
	}
	n := 0
	if q.Folder != store.FolderSpam {
		if form == KindContact {
			n, err = store.ExportContactSelected(ctx, op.o.rdb, out, q.Format, sel)
		} else {
			n, err = store.ExportFormSelected(ctx, op.o.rdb, out, q.Format, form, sel)
		}
	}
	if err == nil && q.Folder != store.FolderInbox {
		var m int
		m, err = store.ExportSpamSelected(ctx, op.o.rdb, out, q.Format, queue, sel)
		n += m
	}
	op.recordExport(ctx, form, q.Folder, q.Format, q.Text != "", n, err)
	return n, failed(err)
}

// WaitlistExportQuery selects the waitlist entries an export writes: the format, the state and a text
// (as WaitlistQuery's).
type WaitlistExportQuery struct {
	Format string
	State  string
	Text   string
}

// ExportWaitlist writes the waitlist entries q selects, oldest first, as Export writes (form.exported,
// form waitlist).
func (op Operator) ExportWaitlist(ctx context.Context, w io.Writer, q WaitlistExportQuery) (int, error) {
	if err := CheckWaitlistExport(q); err != nil {
		return 0, err
	}
	var sel store.Selection
	if text := newMatcher(q.Text); text != nil || q.State != "" {
		sel.Keep = func(raw string) bool {
			var rec store.WaitlistRecord
			if text != nil && !text.prefilter(raw) || json.Unmarshal([]byte(raw), &rec) != nil {
				return false
			}
			e := waitlistEntryOf(rec)
			return (q.State == "" || e.State == q.State) && (text == nil || text.waitlist(e))
		}
	}
	n, err := store.ExportWaitlistSelected(ctx, op.o.rdb, &exportWriter{w: w}, q.Format, sel)
	op.recordExport(ctx, KindWaitlist, "", q.Format, q.Text != "" || q.State != "", n, err)
	return n, failed(err)
}

// CheckWaitlistExport refuses a waitlist export before it starts.
func CheckWaitlistExport(q WaitlistExportQuery) error {
	if !slices.Contains(Formats, q.Format) {
		return &FieldError{"format", "csv, jsonl or json"}
	}
	return WaitlistQuery{State: q.State, Text: q.Text, Limit: 1}.check()
}

func (op Operator) recordExport(ctx context.Context, form, folder, format string, filtered bool, rows int, err error) {
	d := map[string]string{"form": form, "format": format, "rows": strconv.Itoa(rows), "complete": strconv.FormatBool(err == nil)}
	if folder != "" {
		d["folder"] = folder
	}
	if filtered {
		d["filtered"] = "true"
	}
	op.record(ctx, Exported, d)
}

// exportWriter marks its writer's failures (the reader went away) as errWriter, not the store's.
type exportWriter struct{ w io.Writer }

func (e *exportWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil {
		return n, fmt.Errorf("%w: %w", errWriter, err)
	}
	return n, nil
}

// IsWriteError reports whether an export failed writing (its reader went away), not reading.
func IsWriteError(err error) bool { return errors.Is(err, errWriter) }
