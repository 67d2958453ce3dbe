package store

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/redis/go-redis/v9"
)

// One submission of the contact form or a declared form, found by its message ID (MessageID) wherever
// it is: in the delivery stream (the inbox) or the spam folder, at its own entry or, when it was handed
// from one to the other, at the entry Queue.Moved names. The admin API and the CLI read, erase, release
// and mark submissions through these (D63).

// The folders of a form's submissions.
const (
	FolderInbox = "inbox"
	FolderSpam  = "spam"
)

// ReasonMarked is the verdict's reason of a submission an operator marked as spam.
const ReasonMarked = "marked"

// ErrNoSuchSubmission says that no submission of the form has the ID: never there, erased, trimmed.
var ErrNoSuchSubmission = errors.New("no submission with this ID")

// ErrInFolder says that a submission is in the spam folder already.
var ErrInFolder = errors.New("in the spam folder already")

// Located is where a submission is.
type Located struct {
	Folder  string         // FolderInbox or FolderSpam
	Entry   string         // its entry in that folder's stream
	Message redis.XMessage // the entry
}

// Locate finds the submission id of q.
func Locate(ctx context.Context, rdb redis.UniversalClient, q Queue, id string) (Located, error) {
	if _, err := parseStreamID(id); err != nil {
		return Located{}, ErrNoSuchSubmission
	}
	pipe := rdb.Pipeline()
	inbox := pipe.XRange(ctx, q.Stream, id, id)
	spam := pipe.XRange(ctx, q.Spam, id, id)
	moved := pipe.HGet(ctx, q.Moved, id)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Located{}, err
	}
	if at, ok := find(id, inbox.Val(), spam.Val()); ok {
		return at, nil
	}
	entry := moved.Val()
	if entry == "" {
		return Located{}, ErrNoSuchSubmission
	}
	pipe = rdb.Pipeline()
	inbox = pipe.XRange(ctx, q.Stream, entry, entry)
	spam = pipe.XRange(ctx, q.Spam, entry, entry)
	if _, err := pipe.Exec(ctx); err != nil {
		return Located{}, err
	}
	if at, ok := find(id, inbox.Val(), spam.Val()); ok {
		return at, nil
	}
	return Located{}, ErrNoSuchSubmission // moved, then erased or trimmed
}

// find picks the entry that carries message id: two streams' entries may share an entry ID, and an
// entry at id may carry another message.
func find(id string, inbox, spam []redis.XMessage) (Located, bool) {
	for _, m := range inbox {
		if MessageID(m) == id {
			return Located{Folder: FolderInbox, Entry: m.ID, Message: m}, true
		}
	}
	for _, m := range spam {
		if MessageID(m) == id {
			return Located{Folder: FolderSpam, Entry: m.ID, Message: m}, true
		}
	}
	return Located{}, false
}

// eraseScript erases one submission: KEYS the stream that holds it, its delivered key, the moved index,
// the unique values (or any key of the slot); ARGV its entry, its message ID, the delivery group ("" for
// the spam folder), then the values its unique field could be stored under. It answers 0 when the entry
// is gone already.
var eraseScript = redis.NewScript(`
if redis.call('XDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
if ARGV[3] ~= '' then redis.pcall('XACK', KEYS[1], ARGV[3], ARGV[1]) end
redis.call('DEL', KEYS[2])
redis.call('HDEL', KEYS[3], ARGV[2])
for i = 4, #ARGV do
  local v = redis.call('HGET', KEYS[4], ARGV[i])
  if v == ARGV[1] or v == ARGV[2] then redis.call('HDEL', KEYS[4], ARGV[i]) end
end
return 1`)

// EraseSubmission erases the submission id of q as `forget` erases what holds an address: its entry,
// its delivery state, its dead letters, its unique value and where it moved. folder "" takes it from
// either folder; FolderSpam only from the spam folder (ErrNotInFolder otherwise). It answers where it
// was, or ErrNoSuchSubmission.
func EraseSubmission(ctx context.Context, rdb redis.UniversalClient, q Queue, id, folder string) (Located, error) {
	at, err := Locate(ctx, rdb, q, id)
	switch {
	case errors.Is(err, ErrNoSuchSubmission) && folder == FolderSpam:
		return at, ErrNotInFolder
	case err != nil:
		return at, err
	case folder != "" && at.Folder != folder:
		if folder == FolderSpam {
			return at, ErrNotInFolder
		}
		return at, ErrNoSuchSubmission
	}
	keys, args := q.eraseArgs(at, id)
	n, err := eraseScript.Run(ctx, rdb, keys, args...).Int()
	if err != nil {
		return at, err
	}
	if n == 0 {
		return at, ErrNoSuchSubmission // erased by someone else meanwhile
	}
	return at, q.dropDeadLettersOf(ctx, rdb, id)
}

// eraseArgs are eraseScript's keys and arguments for the submission id at at.
func (q Queue) eraseArgs(at Located, id string) ([]string, []any) {
	stream, group := q.Stream, DeliveryGroup
	if at.Folder == FolderSpam {
		stream, group = q.Spam, ""
	}
	unique := q.unique
	if unique == "" {
		unique = q.Moved // the contact messages have none: no candidates are sent
	}
	args := []any{at.Entry, id, group}
	if q.unique != "" {
		var rec FormRecord
		raw, _ := at.Message.Values[RecordField].(string)
		if json.Unmarshal([]byte(raw), &rec) == nil {
			for _, c := range uniqueCandidates(rec.Fields) {
				args = append(args, c)
			}
		}
	}
	return []string{stream, q.DeliveredKey(at.Entry), q.Moved, unique}, args
}

// dropDeadLettersOf erases the dead letters of the message id (the dead letters are few: an alert
// fires when there are any).
func (q Queue) dropDeadLettersOf(ctx context.Context, rdb redis.UniversalClient, id string) error {
	dead, err := q.DeadLetterList(ctx, rdb)
	if err != nil {
		return err
	}
	var entries []string
	for _, d := range dead {
		if d.ID == id {
			entries = append(entries, d.Entry)
		}
	}
	if len(entries) == 0 {
		return nil
	}
	return rdb.XDel(ctx, q.DeadLetters, entries...).Err()
}

// markScript moves a submission from the delivery stream to the spam folder: KEYS the stream, the spam
// folder, its delivered key, the moved index, the unique values (or any key of the slot); ARGV its
// entry, its message ID, the verdict, then the values its unique field could be stored under. It is
// acknowledged (no delivery takes it any more) and keeps its message ID; spam holds no unique value. It
// answers the folder's new entry, or false when the entry is gone.
var markScript = redis.NewScript(`
local e = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])
if #e == 0 then return false end
local f, record = e[1][2], ''
for i = 1, #f, 2 do if f[i] == 'm' then record = f[i + 1] end end
redis.call('XDEL', KEYS[1], ARGV[1])
redis.pcall('XACK', KEYS[1], '` + DeliveryGroup + `', ARGV[1])
redis.call('DEL', KEYS[3])
local new = redis.call('XADD', KEYS[2], '*', 'm', record, 'v', ARGV[3], '` + OriginalIDField + `', ARGV[2])
redis.call('HSET', KEYS[4], ARGV[2], new)
for i = 4, #ARGV do
  local v = redis.call('HGET', KEYS[5], ARGV[i])
  if v == ARGV[1] or v == ARGV[2] then redis.call('HDEL', KEYS[5], ARGV[i]) end
end
return new`)

// MarkSpam moves the submission id of q from the inbox to the spam folder, with the verdict
// ReasonMarked: it is not delivered any more (if it was not yet), its dead letters go, and a release
// hands it back under its ID. ErrInFolder when it is spam already.
func MarkSpam(ctx context.Context, rdb redis.UniversalClient, q Queue, id string) error {
	at, err := Locate(ctx, rdb, q, id)
	if err != nil {
		return err
	}
	if at.Folder == FolderSpam {
		return ErrInFolder
	}
	keys, args := q.eraseArgs(at, id)
	verdict, _ := json.Marshal(Verdict{Reasons: []string{ReasonMarked}})
	args = append([]any{at.Entry, id, string(verdict)}, args[3:]...)
	keys = []string{q.Stream, q.Spam, keys[1], q.Moved, keys[3]}
	if err := markScript.Run(ctx, rdb, keys, args...).Err(); errors.Is(err, redis.Nil) {
		return ErrNoSuchSubmission // erased or marked by someone else meanwhile
	} else if err != nil {
		return err
	}
	return q.dropDeadLettersOf(ctx, rdb, id)
}
