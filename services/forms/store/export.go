package store

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Export formats: CSV with a header row, JSON lines (one record a line), or one JSON array of the same
// records (what the admin API's export writes for format=json).
const (
	FormatCSV   = "csv"
	FormatJSONL = "jsonl"
	FormatJSON  = "json"
)

const exportPage = 500

// Selection narrows an export (the zero value selects everything): the stream entries stored from
// Since to Until (inclusive; zero: open), and of them those whose stored record (its JSON) Keep is true
// of (nil: all). The waitlist takes Keep only.
type Selection struct {
	Since, Until time.Time
	Keep         func(record string) bool
}

func (s Selection) keeps(record string) bool { return s.Keep == nil || s.Keep(record) }

// bounds are the XRANGE start and end of the selection.
func (s Selection) bounds() (start, end string) {
	start, end = "-", "+"
	if !s.Since.IsZero() {
		start = strconv.FormatInt(s.Since.UnixMilli(), 10) + "-0"
	}
	if !s.Until.IsZero() {
		end = strconv.FormatInt(s.Until.UnixMilli(), 10) + "-" + strconv.FormatUint(math.MaxUint64, 10)
	}
	return start, end
}

// ExportWaitlist writes every waitlist entry, oldest first, and returns how many it wrote. Each
// endpoint's keys share one hash tag, so on a Redis Cluster they all live on one master and the client
// routes these reads there; there is nothing to gather from the other masters.
func ExportWaitlist(ctx context.Context, rdb redis.UniversalClient, w io.Writer, format string) (int, error) {
	return ExportWaitlistSelected(ctx, rdb, w, format, Selection{})
}

// ExportWaitlistSelected writes the waitlist entries sel keeps, oldest first. The sign-up order is read
// a page at a time (memory does not grow with the list): a page starts after the last address of the
// one before, found again where it is now, so that entries signed up meanwhile (appended) change
// nothing, and entries erased meanwhile (removed from the order) make no later one skipped.
func ExportWaitlistSelected(ctx context.Context, rdb redis.UniversalClient, w io.Writer, format string, sel Selection) (int, error) {
	out, err := newRecordWriter(w, format, []string{"email", "name", "association", "role", "size", "consent", "created_at", "origin",
		"state", "consent_version", "confirmed_at", "unsubscribed_at"})
	if err != nil {
		return 0, err
	}
	n := 0
	for start := int64(0); ; {
		page, err := rdb.LRange(ctx, WaitlistOrder, start, start+exportPage-1).Result()
		if err != nil || len(page) == 0 {
			return n, errors.Join(err, out.flush())
		}
		vals, err := rdb.HMGet(ctx, WaitlistEntries, page...).Result()
		if err != nil {
			return n, err
		}
		for i, v := range vals {
			raw, ok := v.(string)
			if !ok || !sel.keeps(raw) {
				continue // erased since the list was read, or not selected
			}
			var rec WaitlistRecord
			if err := json.Unmarshal([]byte(raw), &rec); err != nil {
				return n, fmt.Errorf("waitlist entry %q: %w", page[i], err)
			}
			if rec.State == "" {
				rec.State = StateSubscribed
			}
			line, err := json.Marshal(rec) // the stored record, with its state spelled out
			if err != nil {
				return n, err
			}
			err = out.write(line, []string{rec.Email, rec.Name, rec.Association, rec.Role, rec.Size,
				fmt.Sprint(rec.Consent), rec.CreatedAt.UTC().Format(time.RFC3339Nano), rec.Origin,
				rec.State, rec.ConsentVersion, timeCell(rec.ConfirmedAt), timeCell(rec.UnsubscribedAt)})
			if err != nil {
				return n, err
			}
			n++
		}
		if len(page) < exportPage {
			return n, out.flush()
		}
		if start, err = WaitlistAfter(ctx, rdb, start, page); err != nil {
			return n, err
		}
	}
}

// WaitlistAfter is the position after page, read from position start of the sign-up order: after where
// its last address still present is now (erasures move the ones behind them forward; sign-ups are
// appended and move nothing), or start when none of them is left.
func WaitlistAfter(ctx context.Context, rdb redis.UniversalClient, start int64, page []string) (int64, error) {
	last := start + int64(len(page)) - 1
	at, err := rdb.LIndex(ctx, WaitlistOrder, last).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, err
	}
	if at == page[len(page)-1] {
		return last + 1, nil
	}
	for i := len(page) - 1; i >= 0; i-- {
		pos, err := rdb.LPos(ctx, WaitlistOrder, page[i], redis.LPosArgs{}).Result()
		if errors.Is(err, redis.Nil) {
			continue // erased
		}
		if err != nil {
			return 0, err
		}
		return pos + 1, nil
	}
	return start, nil
}

// The states of a waitlist entry as export shows them; an entry taken without the double opt-in has
// none stored and is shown as subscribed.
const (
	StateSubscribed   = "subscribed"
	StatePending      = "pending"
	StateConfirmed    = "confirmed"
	StateUnsubscribed = "unsubscribed"
)

func timeCell(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// ExportContact writes every stored contact message, in the order they were stored (a retried dead letter
// where it was handed back), with its ID (MessageID), and returns how many it wrote.
func ExportContact(ctx context.Context, rdb redis.UniversalClient, w io.Writer, format string) (int, error) {
	return ExportContactSelected(ctx, rdb, w, format, Selection{})
}

// ExportContactSelected writes the contact messages sel keeps, as ExportContact does.
func ExportContactSelected(ctx context.Context, rdb redis.UniversalClient, w io.Writer, format string, sel Selection) (int, error) {
	out, err := newRecordWriter(w, format, []string{"id", "received_at", "name", "email", "organization", "topic", "message", "origin"})
	if err != nil {
		return 0, err
	}
	n := 0
	err = scanRange(ctx, rdb, ContactStream, sel, func(msg redis.XMessage, raw string) error {
		var rec ContactRecord
		if err := json.Unmarshal([]byte(raw), &rec); err != nil {
			return fmt.Errorf("contact message %s: %w", msg.ID, err)
		}
		id := MessageID(msg)
		line, err := json.Marshal(struct {
			ID string `json:"id"`
			ContactRecord
		}{id, rec})
		if err != nil {
			return err
		}
		n++
		return out.write(line, []string{id, rec.ReceivedAt.UTC().Format(time.RFC3339Nano), rec.Name, rec.Email,
			rec.Organization, rec.Topic, rec.Message, rec.Origin})
	})
	if err != nil {
		return n, err
	}
	return n, out.flush()
}

// scanStream calls fn for every contact message in order, a page at a time.
func scanStream(ctx context.Context, rdb redis.UniversalClient, fn func(redis.XMessage, ContactRecord) error) error {
	return scanRange(ctx, rdb, ContactStream, Selection{}, func(msg redis.XMessage, raw string) error {
		var rec ContactRecord
		if err := json.Unmarshal([]byte(raw), &rec); err != nil {
			return fmt.Errorf("contact message %s: %w", msg.ID, err)
		}
		return fn(msg, rec)
	})
}

// scanRange calls fn for every entry of stream that sel selects, in order, a page at a time, with its
// record.
func scanRange(ctx context.Context, rdb redis.UniversalClient, stream string, sel Selection, fn func(redis.XMessage, string) error) error {
	start, end := sel.bounds()
	for {
		msgs, err := rdb.XRangeN(ctx, stream, start, end, exportPage).Result()
		if err != nil {
			return err
		}
		for _, msg := range msgs {
			raw, _ := msg.Values[RecordField].(string)
			if !sel.keeps(raw) {
				continue
			}
			if err := fn(msg, raw); err != nil {
				return err
			}
		}
		if len(msgs) < exportPage {
			return nil
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
}

// recordWriter writes records as CSV (with a header row), as JSON lines (the stored JSON as is), or as
// one JSON array of them.
type recordWriter struct {
	format string
	w      io.Writer
	csv    *csv.Writer
	n      int
}

func newRecordWriter(w io.Writer, format string, header []string) (*recordWriter, error) {
	switch format {
	case FormatJSONL:
		return &recordWriter{format: format, w: w}, nil
	case FormatJSON:
		_, err := io.WriteString(w, "[")
		return &recordWriter{format: format, w: w}, err
	case FormatCSV:
		cw := csv.NewWriter(w)
		if err := cw.Write(header); err != nil {
			return nil, err
		}
		return &recordWriter{format: format, w: w, csv: cw}, nil
	}
	return nil, errors.New("format must be csv, jsonl or json")
}

func (r *recordWriter) write(jsonLine []byte, cells []string) error {
	r.n++
	switch r.format {
	case FormatJSONL:
		_, err := r.w.Write(append(jsonLine, '\n'))
		return err
	case FormatJSON:
		sep := ",\n"
		if r.n == 1 {
			sep = "\n"
		}
		if _, err := io.WriteString(r.w, sep); err != nil {
			return err
		}
		_, err := r.w.Write(jsonLine)
		return err
	}
	for i, c := range cells {
		cells[i] = csvSafe(c)
	}
	return r.csv.Write(cells)
}

func (r *recordWriter) flush() error {
	switch r.format {
	case FormatCSV:
		r.csv.Flush()
		return r.csv.Error()
	case FormatJSON:
		_, err := io.WriteString(r.w, "\n]\n")
		return err
	}
	return nil
}

// csvSafe keeps a spreadsheet from running what a visitor typed: a cell starting with =, +, -, @, tab or
// carriage return is a formula to Excel and LibreOffice, so it gets a leading apostrophe (OWASP's advice).
// JSON lines export the values unchanged.
func csvSafe(s string) string {
	if s != "" && strings.IndexByte("=+-@\t\r", s[0]) >= 0 {
		return "'" + s
	}
	return s
}
