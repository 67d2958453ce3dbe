package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The spam folder (docs/forms.md "Spam", D61). A submission that scored as spam is stored by the same
// script call, with the same durability, as a genuine one, but in its queue's spam stream instead of its
// delivery stream: nothing reads it for delivery. Release moves it to the delivery stream under the ID it
// was stored with (OriginalIDField), so it is delivered once with that ID; delete erases it.
//
//	fs:{contact}:spam, fs:{form:<id>}:spam   stream: one entry per kept spam (RecordField: the record;
//	                                         VerdictField: the verdict's JSON)
//	fs:{contact}:seen:<fingerprint>, …       how often that content came within SeenWindow
const ContactSpam = "fs:{contact}:spam"

// VerdictField, on a spam folder's entry, holds the verdict (Verdict as JSON).
const VerdictField = "v"

// SeenWindow is how long the store counts a content's arrivals (the repeated-content signal).
const SeenWindow = 24 * time.Hour

// Verdict is the spam verdict stored with a submission.
type Verdict struct {
	Spam    bool     `json:"-"`
	Refuse  bool     `json:"-"` // spam that is not kept at all (the form's spam action "refuse")
	Score   float64  `json:"score"`
	Reasons []string `json:"reasons"`
}

// arg is the verdict as the scripts take it (spamLua).
func (v Verdict) arg() string {
	switch {
	case !v.Spam:
		return ""
	case v.Refuse:
		return "-"
	}
	b, _ := json.Marshal(v) // a float and strings: always encodable
	return string(b)
}

// spamLua keeps a submission by its verdict: ham in the delivery stream (answering its entry's ID), spam
// in the spam folder with its verdict, refused spam nowhere. A spam entry's ID is drawn from the delivery
// stream's sequence (an entry added and deleted in the same step, which no reader sees): a released spam
// keeps its ID, so it must be one no genuine submission of the form has. The folder's own sequence would
// give a spam and a ham stored in the same millisecond the same ID (both the first of that millisecond in
// their stream), and a receiver deduplicating by webhook-id would drop one (D63). A folder whose last ID
// is ahead (entries from before this rule) takes its own next ID.
const spamLua = `
local function keep(stream, folder, record, verdict)
  if verdict == '' then return redis.call('XADD', stream, '*', 'm', record) end
  if verdict ~= '-' then
    local id = redis.call('XADD', stream, '*', 'm', '')
    redis.call('XDEL', stream, id)
    local ok = redis.pcall('XADD', folder, id, 'm', record, 'v', verdict)
    if type(ok) == 'table' and ok.err then redis.call('XADD', folder, '*', 'm', record, 'v', verdict) end
  end
  return false
end
`

// CountContent counts one more arrival of the content fingerprint on q within SeenWindow and returns
// how many there were, this one included (the spam signal "repeated"). Only a hash of the content is
// kept.
func CountContent(ctx context.Context, rdb redis.UniversalClient, q Queue, fingerprint string) (int, error) {
	sum := sha256.Sum256([]byte(fingerprint))
	key := q.seenPrefix() + hex.EncodeToString(sum[:12])
	pipe := rdb.Pipeline()
	n := pipe.Incr(ctx, key)
	pipe.ExpireNX(ctx, key, SeenWindow)
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, err
	}
	return int(n.Val()), nil
}

func (q Queue) seenPrefix() string { return q.donePrefix + "seen:" }

// SpamEntry is one submission in a spam folder.
type SpamEntry struct {
	ID      string          `json:"id"` // the ID it keeps when released (MessageID)
	Verdict Verdict         `json:"verdict"`
	Record  json.RawMessage `json:"record"`
}

// SpamEntryOf reads an entry of a spam folder.
func SpamEntryOf(m redis.XMessage) SpamEntry { return spamEntryOf(m) }

func spamEntryOf(m redis.XMessage) SpamEntry {
	e := SpamEntry{ID: MessageID(m)}
	if v, _ := m.Values[VerdictField].(string); v != "" {
		_ = json.Unmarshal([]byte(v), &e.Verdict)
		e.Verdict.Spam = true
	}
	raw, _ := m.Values[RecordField].(string)
	if json.Valid([]byte(raw)) {
		e.Record = json.RawMessage(raw)
	} else {
		e.Record = json.RawMessage("null")
	}
	return e
}

// ListSpam returns up to count of q's spam, oldest first, starting after the entry after ("" from the
// start), and the ID to continue after ("" at the end).
func ListSpam(ctx context.Context, rdb redis.UniversalClient, q Queue, after string, count int64) ([]SpamEntry, string, error) {
	start := "-"
	if after != "" {
		start = "(" + after
	}
	msgs, err := rdb.XRangeN(ctx, q.Spam, start, "+", count).Result()
	if err != nil {
		return nil, "", err
	}
	out := make([]SpamEntry, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, spamEntryOf(m))
	}
	next := ""
	if int64(len(msgs)) == count && count > 0 {
		next = msgs[len(msgs)-1].ID
	}
	return out, next, nil
}

// ErrNotInFolder says that a spam ID is not in the folder: never there, deleted, or released already.
var ErrNotInFolder = errors.New("not in the spam folder (released or deleted already?)")

// releaseScript: KEYS delivery stream, spam folder, moved index; ARGV the spam entry. It moves the
// entry to the delivery stream, carrying its message ID (its own, or the one it carries: a submission
// marked as spam), records where the message went, and removes it from the folder in one step: a second
// release (or a second run of the same call) finds nothing and delivers nothing. Answers the new entry,
// or false when the entry is not there.
var releaseScript = redis.NewScript(`
local e = redis.call('XRANGE', KEYS[2], ARGV[1], ARGV[1])
if #e == 0 then return false end
local f, record, id = e[1][2], nil, ARGV[1]
for i = 1, #f, 2 do
  if f[i] == 'm' then record = f[i + 1] end
  if f[i] == '` + OriginalIDField + `' then id = f[i + 1] end
end
local new = false
if record then
  new = redis.call('XADD', KEYS[1], '*', 'm', record, '` + OriginalIDField + `', id)
  redis.call('HSET', KEYS[3], id, new)
end
redis.call('XDEL', KEYS[2], ARGV[1])
return new
`)

// ReleaseSpam moves the spam entry id (its message ID, as ListSpam shows it) of q to its delivery
// stream: it is delivered once, with id as its message ID (webhook-id, Message-ID, export). Releasing
// it again answers ErrNotInFolder and delivers nothing. A declared form's unique value is not checked:
// the team decided it is wanted.
func ReleaseSpam(ctx context.Context, rdb redis.UniversalClient, q Queue, id string) error {
	if _, err := parseStreamID(id); err != nil {
		return err
	}
	at, err := Locate(ctx, rdb, q, id)
	if errors.Is(err, ErrNoSuchSubmission) || err == nil && at.Folder != FolderSpam {
		return ErrNotInFolder
	}
	if err != nil {
		return err
	}
	err = releaseScript.Run(ctx, rdb, []string{q.Stream, q.Spam, q.Moved}, at.Entry).Err()
	if errors.Is(err, redis.Nil) {
		return ErrNotInFolder // released or deleted meanwhile
	}
	return err
}

// DeleteSpam erases the spam entry id of q (EraseSubmission in the spam folder); ErrNotInFolder when it
// is not there.
func DeleteSpam(ctx context.Context, rdb redis.UniversalClient, q Queue, id string) error {
	if _, err := parseStreamID(id); err != nil {
		return err
	}
	_, err := EraseSubmission(ctx, rdb, q, id, FolderSpam)
	return err
}

// ValidStreamID reports whether id is a stream entry ID (<milliseconds>-<sequence>).
func ValidStreamID(id string) bool {
	_, err := parseStreamID(id)
	return err == nil
}

// parseStreamID checks that id is a stream entry ID (ms-seq), so that a typo is an error, not a range.
func parseStreamID(id string) (string, error) {
	ms, seq, _ := strings.Cut(id, "-")
	_, err1 := strconv.ParseUint(ms, 10, 64)
	_, err2 := strconv.ParseUint(seq, 10, 64)
	if err1 != nil || err2 != nil {
		return "", errors.New("not a spam ID (want <milliseconds>-<sequence>, as spam list shows them)")
	}
	return id, nil
}

// trimSpam erases q's spam stored before cutoff (retention).
func (q Queue) trimSpam(ctx context.Context, rdb redis.UniversalClient, cutoff time.Time) (int64, error) {
	minID := strconv.FormatInt(cutoff.UnixMilli(), 10) + "-0"
	if q.holdsFiles() {
		if err := queueFilesBefore(ctx, rdb, q.Spam, minID); err != nil {
			return 0, err
		}
	}
	return rdb.XTrimMinID(ctx, q.Spam, minID).Result()
}

// forgetSpam erases q's spam whose record holds is true of, and returns how many.
func (q Queue) forgetSpam(ctx context.Context, rdb redis.UniversalClient, holds func(raw []byte) bool) (int, error) {
	var ids, messages, files []string
	for start := "-"; ; {
		page, err := rdb.XRangeN(ctx, q.Spam, start, "+", exportPage).Result()
		if err != nil {
			return 0, err
		}
		for _, m := range page {
			if raw, _ := m.Values[RecordField].(string); holds([]byte(raw)) {
				ids = append(ids, m.ID)
				messages = append(messages, MessageID(m))
				files = append(files, filesOf(raw)...)
			}
		}
		if len(page) < exportPage {
			break
		}
		start = "(" + page[len(page)-1].ID
	}
	if len(ids) == 0 {
		return 0, nil
	}
	if err := queueFileErasures(ctx, rdb, files); err != nil {
		return 0, err
	}
	if err := rdb.XDel(ctx, q.Spam, ids...).Err(); err != nil {
		return 0, err
	}
	return len(ids), rdb.HDel(ctx, q.Moved, messages...).Err()
}

// ExportSpam writes q's spam folder, oldest first, and returns how many entries it wrote: as JSON lines,
// each the kept record's members with its "id" and its "spam" verdict; as CSV, the ID, when it came,
// the score, the reasons and the record as JSON (a folder mixes whatever spammers sent).
func ExportSpam(ctx context.Context, rdb redis.UniversalClient, w io.Writer, format string, q Queue) (int, error) {
	return ExportSpamSelected(ctx, rdb, w, format, q, Selection{})
}

// ExportSpamSelected writes the entries of q's spam folder that sel keeps, as ExportSpam does.
func ExportSpamSelected(ctx context.Context, rdb redis.UniversalClient, w io.Writer, format string, q Queue, sel Selection) (int, error) {
	out, err := newRecordWriter(w, format, []string{"id", "received_at", "score", "reasons", "record"})
	if err != nil {
		return 0, err
	}
	n := 0
	err = scanRange(ctx, rdb, q.Spam, sel, func(m redis.XMessage, _ string) error {
		e := spamEntryOf(m)
		members := map[string]json.RawMessage{}
		_ = json.Unmarshal(e.Record, &members) // a record that is not an object keeps only id and spam
		members["id"], _ = json.Marshal(e.ID)
		members["spam"], _ = json.Marshal(e.Verdict)
		line, err := json.Marshal(members)
		if err != nil {
			return err
		}
		n++
		return out.write(line, []string{e.ID, StreamTime(e.ID).UTC().Format(time.RFC3339Nano),
			strconv.FormatFloat(e.Verdict.Score, 'f', -1, 64), strings.Join(e.Verdict.Reasons, " "), string(e.Record)})
	})
	if err != nil {
		return n, err
	}
	return n, out.flush()
}
