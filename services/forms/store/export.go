package store

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Export formats.
const (
	FormatCSV   = "csv"
	FormatJSONL = "jsonl"
)

const exportPage = 500

// ExportWaitlist writes every waitlist entry, oldest first, and returns how many it wrote. Each
// endpoint's keys share one hash tag, so on a Redis Cluster they all live on one master and the client
// routes these reads there; there is nothing to gather from the other masters.
func ExportWaitlist(ctx context.Context, rdb redis.UniversalClient, w io.Writer, format string) (int, error) {
	out, err := newRecordWriter(w, format, []string{"email", "name", "association", "role", "size", "consent", "created_at", "origin",
		"state", "consent_version", "confirmed_at", "unsubscribed_at"})
	if err != nil {
		return 0, err
	}
	// The member list is read at once: a consistent order even while people sign up or are erased.
	members, err := rdb.LRange(ctx, WaitlistOrder, 0, -1).Result()
	if err != nil {
		return 0, err
	}
	n := 0
	for start := 0; start < len(members); start += exportPage {
		page := members[start:min(start+exportPage, len(members))]
		vals, err := rdb.HMGet(ctx, WaitlistEntries, page...).Result()
		if err != nil {
			return n, err
		}
		for i, v := range vals {
			raw, ok := v.(string)
			if !ok {
				continue // erased since the list was read
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
	}
	return n, out.flush()
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
	out, err := newRecordWriter(w, format, []string{"id", "received_at", "name", "email", "organization", "topic", "message", "origin"})
	if err != nil {
		return 0, err
	}
	n := 0
	err = scanStream(ctx, rdb, func(msg redis.XMessage, rec ContactRecord) error {
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
	start := "-"
	for {
		msgs, err := rdb.XRangeN(ctx, ContactStream, start, "+", exportPage).Result()
		if err != nil {
			return err
		}
		for _, msg := range msgs {
			var rec ContactRecord
			raw, _ := msg.Values[RecordField].(string)
			if err := json.Unmarshal([]byte(raw), &rec); err != nil {
				return fmt.Errorf("contact message %s: %w", msg.ID, err)
			}
			if err := fn(msg, rec); err != nil {
				return err
			}
		}
		if len(msgs) < exportPage {
			return nil
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
}

// recordWriter writes records as CSV (with a header row) or as JSON lines (the stored JSON as is).
type recordWriter struct {
	jsonl bool
	w     io.Writer
	csv   *csv.Writer
}

func newRecordWriter(w io.Writer, format string, header []string) (*recordWriter, error) {
	switch format {
	case FormatJSONL:
		return &recordWriter{jsonl: true, w: w}, nil
	case FormatCSV:
		cw := csv.NewWriter(w)
		if err := cw.Write(header); err != nil {
			return nil, err
		}
		return &recordWriter{w: w, csv: cw}, nil
	}
	return nil, errors.New("format must be csv or jsonl")
}

func (r *recordWriter) write(jsonLine []byte, cells []string) error {
	if r.jsonl {
		_, err := r.w.Write(append(jsonLine, '\n'))
		return err
	}
	for i, c := range cells {
		cells[i] = csvSafe(c)
	}
	return r.csv.Write(cells)
}

func (r *recordWriter) flush() error {
	if r.csv != nil {
		r.csv.Flush()
		return r.csv.Error()
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
