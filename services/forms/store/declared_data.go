package store

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/platform/email"
)

// scanForm calls fn for every stored submission of declared form id, in order, a page at a time.
func scanForm(ctx context.Context, rdb redis.UniversalClient, stream string, fn func(redis.XMessage, FormRecord) error) error {
	return scanFormSelected(ctx, rdb, stream, Selection{}, fn)
}

func scanFormSelected(ctx context.Context, rdb redis.UniversalClient, stream string, sel Selection, fn func(redis.XMessage, FormRecord) error) error {
	return scanRange(ctx, rdb, stream, sel, func(msg redis.XMessage, raw string) error {
		var rec FormRecord
		if err := json.Unmarshal([]byte(raw), &rec); err != nil {
			return fmt.Errorf("%s %s: %w", stream, msg.ID, err)
		}
		return fn(msg, rec)
	})
}

// holdsAddress reports whether any text value of the record is the address canonical (in any
// spelling of it): an e-mail field, or a kept field that holds one.
func (r FormRecord) holdsAddress(canonical string) bool {
	for _, vs := range []Values{r.Fields, r.Additional} {
		for _, v := range vs {
			if s, ok := v.Value.(string); ok && strings.Contains(s, "@") {
				if c, ok := email.Canonical(strings.TrimSpace(s)); ok && c == canonical {
					return true
				}
			}
		}
	}
	return false
}

// forgetForms erases every submission of every declared form that holds the address canonical, with
// its delivery state, its dead letters, its place in the form's unique values and its autoresponder's
// record, and its spam. It returns the erased submissions' IDs by form, and how many dead letters and
// spam entries it erased.
func forgetForms(ctx context.Context, rdb redis.UniversalClient, canonical string) (map[string][]string, int, int, error) {
	erased, dead, spam, err := forgetFormsDelivered(ctx, rdb, canonical)
	if err != nil {
		return erased, dead, spam, err
	}
	ids, err := KnownForms(ctx, rdb)
	for _, id := range ids {
		n, err := FormQueue(id).forgetSpam(ctx, rdb, func(raw []byte) bool {
			var rec FormRecord
			return json.Unmarshal(raw, &rec) == nil && rec.holdsAddress(canonical)
		})
		spam += n
		if err != nil {
			return erased, dead, spam, err
		}
	}
	return erased, dead, spam, err
}

func forgetFormsDelivered(ctx context.Context, rdb redis.UniversalClient, canonical string) (map[string][]string, int, int, error) {
	ids, err := KnownForms(ctx, rdb)
	if err != nil {
		return nil, 0, 0, err
	}
	erased, dead := map[string][]string{}, 0
	for _, id := range ids {
		q := FormQueue(id)
		var entries []string
		var files []string
		err := scanForm(ctx, rdb, q.Stream, func(msg redis.XMessage, rec FormRecord) error {
			if rec.holdsAddress(canonical) {
				entries = append(entries, msg.ID)
				erased[id] = append(erased[id], MessageID(msg))
				for _, f := range rec.Files {
					files = append(files, f.Key)
				}
			}
			return nil
		})
		if err != nil {
			return erased, dead, 0, err
		}
		// Queued before the records go: an erasure that fails half-way leaves their files queued, and
		// its retry finds the records again.
		if err := queueFileErasures(ctx, rdb, files); err != nil {
			return erased, dead, 0, err
		}
		files = files[:0]
		for start := 0; start < len(entries); start += exportPage {
			page := entries[start:min(start+exportPage, len(entries))]
			pipe := rdb.TxPipeline()
			pipe.XDel(ctx, q.Stream, page...)
			for _, e := range page {
				pipe.Del(ctx, q.DeliveredKey(e))
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return erased, dead, 0, err
			}
			if err := rdb.XAck(ctx, q.Stream, DeliveryGroup, page...).Err(); err != nil && !strings.Contains(err.Error(), "NOGROUP") {
				return erased, dead, 0, err
			}
		}
		if ids := erased[id]; len(ids) > 0 {
			if err := rdb.HDel(ctx, q.Moved, ids...).Err(); err != nil {
				return erased, dead, 0, err
			}
		}
		// A unique e-mail field keeps the canonical address; other unique values are not addresses.
		if err := rdb.HDel(ctx, FormUnique(id), canonical).Err(); err != nil {
			return erased, dead, 0, err
		}
		if err := rdb.Del(ctx, NewAnswerLimit(rdb, id, 0).key(canonical)).Err(); err != nil {
			return erased, dead, 0, err
		}
		var deadEntries []string
		err = scanForm(ctx, rdb, q.DeadLetters, func(msg redis.XMessage, rec FormRecord) error {
			if rec.holdsAddress(canonical) {
				deadEntries = append(deadEntries, msg.ID)
				for _, f := range rec.Files {
					files = append(files, f.Key)
				}
			}
			return nil
		})
		if err != nil {
			return erased, dead, 0, err
		}
		if err := queueFileErasures(ctx, rdb, files); err != nil {
			return erased, dead, 0, err
		}
		if len(deadEntries) > 0 {
			if err := rdb.XDel(ctx, q.DeadLetters, deadEntries...).Err(); err != nil {
				return erased, dead, 0, err
			}
			dead += len(deadEntries)
		}
	}
	return erased, dead, 0, nil
}

// ExportForm writes every stored submission of declared form id, oldest first, and returns how many
// it wrote. CSV has a column per field, in the order the submissions first show them (a form whose
// declaration changed keeps its old columns), then the kept undeclared fields as one JSON object.
func ExportForm(ctx context.Context, rdb redis.UniversalClient, w io.Writer, format, id string) (int, error) {
	return ExportFormSelected(ctx, rdb, w, format, id, Selection{})
}

// ExportFormSelected writes the submissions of declared form id that sel keeps, as ExportForm does (its
// columns are those of the selected submissions).
func ExportFormSelected(ctx context.Context, rdb redis.UniversalClient, w io.Writer, format, id string, sel Selection) (int, error) {
	stream := FormStream(id)
	var columns []string
	seen := map[string]bool{}
	withFiles := false // a "files" column, when a submission has files (a JSON list of store.File)
	// and a "confirmed_at" column, when a submission was confirmed (a form with the double opt-in)
	withConfirmed := false
	if format == FormatCSV {
		err := scanFormSelected(ctx, rdb, stream, sel, func(_ redis.XMessage, rec FormRecord) error {
			withFiles = withFiles || len(rec.Files) > 0
			withConfirmed = withConfirmed || rec.ConfirmedAt != nil
			for _, v := range rec.Fields {
				if !seen[v.Name] {
					seen[v.Name] = true
					columns = append(columns, v.Name)
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	header := append(append([]string{"id", "received_at"}, columns...), "additional", "origin")
	if withFiles {
		header = append(header, "files")
	}
	if withConfirmed {
		header = append(header, "confirmed_at")
	}
	out, err := newRecordWriter(w, format, header)
	if err != nil {
		return 0, err
	}
	n := 0
	err = scanFormSelected(ctx, rdb, stream, sel, func(msg redis.XMessage, rec FormRecord) error {
		mid := MessageID(msg)
		line, err := json.Marshal(struct {
			ID string `json:"id"`
			FormRecord
		}{mid, rec})
		if err != nil {
			return err
		}
		cells := []string{mid, rec.ReceivedAt.UTC().Format(time.RFC3339Nano)}
		for _, c := range columns {
			cells = append(cells, cellOf(rec.Fields.Get(c)))
		}
		extra := ""
		if len(rec.Additional) > 0 {
			b, _ := json.Marshal(rec.Additional)
			extra = string(b)
		}
		n++
		cells = append(cells, extra, rec.Origin)
		if withFiles {
			files := ""
			if len(rec.Files) > 0 {
				b, _ := json.Marshal(rec.Files)
				files = string(b)
			}
			cells = append(cells, files)
		}
		if withConfirmed {
			confirmed := ""
			if rec.ConfirmedAt != nil {
				confirmed = rec.ConfirmedAt.UTC().Format(time.RFC3339Nano)
			}
			cells = append(cells, confirmed)
		}
		return out.write(line, cells)
	})
	if err != nil {
		return n, err
	}
	return n, out.flush()
}

// cellOf writes a field's value in a CSV cell: a list joined with "; ", a bool as true or false.
func cellOf(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []string:
		return strings.Join(x, "; ")
	}
	return fmt.Sprint(v)
}
