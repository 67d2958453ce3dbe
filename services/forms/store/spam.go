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
// in the spam folder with its verdict, refused spam nowhere.
const spamLua = `
local function keep(stream, folder, record, verdict)
  if verdict == '' then return redis.call('XADD', stream, '*', 'm', record) end
  if verdict ~= '-' then redis.call('XADD', folder, '*', 'm', record, 'v', verdict) end
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
	ID      string          `json:"id"` // the ID it keeps when released
	Verdict Verdict         `json:"verdict"`
	Record  json.RawMessage `json:"record"`
}

func spamEntryOf(m redis.XMessage) SpamEntry {
	e := SpamEntry{ID: m.ID}
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

// releaseLua: KEYS delivery stream, spam folder; ARGV the spam entry's ID. It moves the entry to the
// delivery stream, carrying its ID, and removes it from the folder in one step: a second release (or a
// second run of the same call) finds nothing and delivers nothing. Answers 1 released, 0 not there.
var releaseScript = redis.NewScript(`
local e = redis.call('XRANGE', KEYS[2], ARGV[1], ARGV[1])
if #e == 0 then return 0 end
local f, record = e[1][2], nil
for i = 1, #f, 2 do if f[i] == 'm' then record = f[i + 1] end end
if record then redis.call('XADD', KEYS[1], '*', 'm', record, '` + OriginalIDField + `', ARGV[1]) end
redis.call('XDEL', KEYS[2], ARGV[1])
return 1
`)

// ReleaseSpam moves the spam entry id of q to its delivery stream: it is delivered once, with id as
// its message ID (webhook-id, Message-ID, export). Releasing it again answers ErrNotInFolder and
// delivers nothing. A declared form's unique value is not checked: the team decided it is wanted.
func ReleaseSpam(ctx context.Context, rdb redis.UniversalClient, q Queue, id string) error {
	if _, err := parseStreamID(id); err != nil {
		return err
	}
	n, err := releaseScript.Run(ctx, rdb, []string{q.Stream, q.Spam}, id).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotInFolder
	}
	return nil
}

// DeleteSpam erases the spam entry id of q; ErrNotInFolder when it is not there.
func DeleteSpam(ctx context.Context, rdb redis.UniversalClient, q Queue, id string) error {
	if _, err := parseStreamID(id); err != nil {
		return err
	}
	n, err := rdb.XDel(ctx, q.Spam, id).Result()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotInFolder
	}
	return nil
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
	return rdb.XTrimMinID(ctx, q.Spam, strconv.FormatInt(cutoff.UnixMilli(), 10)+"-0").Result()
}

// forgetSpam erases q's spam whose record holds is true of, and returns how many.
func (q Queue) forgetSpam(ctx context.Context, rdb redis.UniversalClient, holds func(raw []byte) bool) (int, error) {
	var ids []string
	for start := "-"; ; {
		page, err := rdb.XRangeN(ctx, q.Spam, start, "+", exportPage).Result()
		if err != nil {
			return 0, err
		}
		for _, m := range page {
			if raw, _ := m.Values[RecordField].(string); holds([]byte(raw)) {
				ids = append(ids, m.ID)
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
	return len(ids), rdb.XDel(ctx, q.Spam, ids...).Err()
}

// ExportSpam writes q's spam folder, oldest first, and returns how many entries it wrote: as JSON lines,
// each the kept record's members with its "id" and its "spam" verdict; as CSV, the ID, when it came,
// the score, the reasons and the record as JSON (a folder mixes whatever spammers sent).
func ExportSpam(ctx context.Context, rdb redis.UniversalClient, w io.Writer, format string, q Queue) (int, error) {
	out, err := newRecordWriter(w, format, []string{"id", "received_at", "score", "reasons", "record"})
	if err != nil {
		return 0, err
	}
	n := 0
	for after := ""; ; {
		page, next, err := ListSpam(ctx, rdb, q, after, exportPage)
		if err != nil {
			return n, err
		}
		for _, e := range page {
			members := map[string]json.RawMessage{}
			_ = json.Unmarshal(e.Record, &members) // a record that is not an object keeps only id and spam
			members["id"], _ = json.Marshal(e.ID)
			members["spam"], _ = json.Marshal(e.Verdict)
			line, err := json.Marshal(members)
			if err != nil {
				return n, err
			}
			n++
			if err := out.write(line, []string{e.ID, StreamTime(e.ID).UTC().Format(time.RFC3339Nano),
				strconv.FormatFloat(e.Verdict.Score, 'f', -1, 64), strings.Join(e.Verdict.Reasons, " "), string(e.Record)}); err != nil {
				return n, err
			}
		}
		if next == "" {
			return n, out.flush()
		}
		after = next
	}
}
