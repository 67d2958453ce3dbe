package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Dead letters. A contact message that still fails after forms.delivery.maxAttempts attempts, or once it
// is older than forms.delivery.maxAge, leaves the delivery group's pending list for the dead-letter
// stream: it no longer costs attempts, no longer holds retention back, and waits there for an operator
// (`formsservice deliveries list | retry | drop`) while a metric and an alert say it is there.

// deadLetterScript moves a message the calling consumer still holds into the dead-letter stream and
// acknowledges it, atomically. A message it no longer holds (taken over, acknowledged, erased) is left
// alone: so a second run of the same call (a client retry) does nothing, and a replica that took the
// message over meanwhile keeps it.
// KEYS stream, dead stream, delivered key; ARGV group, consumer, entry (in the stream), record, reason,
// channel, attempts, message ID (MessageID: the entry's, or the original's for a retried dead letter).
var deadLetterScript = redis.NewScript(`
if #redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1, ARGV[2]) == 0 then return 0 end
redis.call('XADD', KEYS[2], '*', 'id', ARGV[8], 'entry', ARGV[3], 'm', ARGV[4], 'reason', ARGV[5], 'channel', ARGV[6], 'attempts', ARGV[7])
redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
redis.call('DEL', KEYS[3])
return 1`)

// DeadLetter is a contact message whose delivery was given up.
type DeadLetter struct {
	// Entry is the dead letter's own ID in the dead-letter stream (when it died).
	Entry string `json:"entry"`
	// ID is the message's ID (MessageID: the mail's Message-ID and the webhook-id are made of it).
	ID       string    `json:"id"`
	Received time.Time `json:"received"`
	Died     time.Time `json:"died"`
	Channel  string    `json:"channel"`
	Attempts int       `json:"attempts"`
	Reason   string    `json:"reason"`
	record   string
	stored   string // the message's entry in the contact stream (its ID, unless it was retried before)
}

func deadLetterOf(x redis.XMessage) DeadLetter {
	str := func(k string) string { s, _ := x.Values[k].(string); return s }
	n, _ := strconv.Atoi(str("attempts"))
	d := DeadLetter{
		Entry: x.ID, ID: str("id"), Received: StreamTime(str("id")).UTC(), Died: StreamTime(x.ID).UTC(),
		Channel: str("channel"), Attempts: n, Reason: str("reason"), record: str(RecordField), stored: str("entry"),
	}
	if d.stored == "" { // moved before the entry was recorded: it was the message's own
		d.stored = d.ID
	}
	return d
}

// StoredEntry is the message's entry in its stream (it stays there, delivered no more, until retention
// or erasure).
func (d DeadLetter) StoredEntry() string { return d.stored }

// Record is the dead letter's copy of the message's record (its stored JSON).
func (d DeadLetter) Record() []byte { return []byte(d.record) }

// ListDeadLetters returns every dead letter of the contact messages, oldest first.
func ListDeadLetters(ctx context.Context, rdb redis.UniversalClient) ([]DeadLetter, error) {
	return ContactQueue.DeadLetterList(ctx, rdb)
}

// DeadLetterList returns every dead letter of q, oldest first.
func (q Queue) DeadLetterList(ctx context.Context, rdb redis.UniversalClient) ([]DeadLetter, error) {
	return q.DeadLettersDied(ctx, rdb, "-", "+")
}

// DeadLettersDied returns q's dead letters whose dead-letter entries lie from start to end (XRANGE's
// bounds: when they died), oldest first. A message dies after it was stored and both entry IDs come
// from one Redis clock, so the dead letters of entries stored from a time on died from that time on:
// the submissions list reads only those of the entries it shows (manage's deliveryStates).
func (q Queue) DeadLettersDied(ctx context.Context, rdb redis.UniversalClient, start, end string) ([]DeadLetter, error) {
	var out []DeadLetter
	for {
		msgs, err := rdb.XRangeN(ctx, q.DeadLetters, start, end, exportPage).Result()
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			out = append(out, deadLetterOf(m))
		}
		if len(msgs) < exportPage {
			return out, nil
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
}

// DeadLetterPage returns up to count of q's dead letters, the latest given up first, starting before
// the dead letter entry before ("" from the latest), and the entry to continue before ("" at the end).
func (q Queue) DeadLetterPage(ctx context.Context, rdb redis.UniversalClient, before string, count int64) ([]DeadLetter, string, error) {
	end := "+"
	if before != "" {
		end = "(" + before
	}
	msgs, err := rdb.XRevRangeN(ctx, q.DeadLetters, end, "-", count+1).Result()
	if err != nil {
		return nil, "", err
	}
	next := ""
	if int64(len(msgs)) > count {
		msgs = msgs[:count]
		next = msgs[len(msgs)-1].ID
	}
	out := make([]DeadLetter, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, deadLetterOf(m))
	}
	return out, next, nil
}

// ErrNoSuchDeadLetter names message IDs that are not dead letters.
var ErrNoSuchDeadLetter = errors.New("no dead letter with this ID")

// selectDeadLetters returns the dead letters of q named by ids (the messages' IDs, as `deliveries list`
// shows them), or all of them when ids is empty. The dead-letter stream's own entry IDs are not
// accepted: both come from one Redis clock, so a dead letter's entry ID can equal another message's ID,
// and a name that could mean either would select the wrong one.
func (q Queue) selectDeadLetters(ctx context.Context, rdb redis.UniversalClient, ids []string) ([]DeadLetter, error) {
	all, err := q.DeadLetterList(ctx, rdb)
	if err != nil || len(ids) == 0 {
		return all, err
	}
	byID := map[string]DeadLetter{}
	for _, d := range all {
		byID[d.ID] = d
	}
	var out []DeadLetter
	for _, id := range ids {
		d, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("%s: %w", id, ErrNoSuchDeadLetter)
		}
		out = append(out, d)
	}
	return out, nil
}

// requeueScript hands a dead letter back to delivery keeping its identity: the stream cannot take an
// entry below its last ID, so the message is added anew with its ID in the field OriginalIDField (from
// which the worker takes the webhook-id and the mail's Message-ID, and export its row's ID), its old entry
// is deleted (export lists the message once), where it went is recorded (Queue.Moved) and the dead letter
// is removed, atomically. A dead letter already gone (a second run of the call, or a second operator) is
// left alone.
// KEYS stream, dead stream, moved index; ARGV dead letter's entry, record, message ID, the message's old
// entry.
var requeueScript = redis.NewScript(`
if redis.call('XDEL', KEYS[2], ARGV[1]) == 0 then return false end
redis.call('XDEL', KEYS[1], ARGV[4])
local new = redis.call('XADD', KEYS[1], '*', 'm', ARGV[2], '` + OriginalIDField + `', ARGV[3])
redis.call('HSET', KEYS[3], ARGV[3], new)
return new`)

// RetryDeadLetters hands the named dead letters of the contact messages (all when ids is empty) back to
// delivery (Queue.RetryDeadLetters).
func RetryDeadLetters(ctx context.Context, rdb redis.UniversalClient, ids []string) ([]string, error) {
	return ContactQueue.RetryDeadLetters(ctx, rdb, ids)
}

// RetryDeadLetters hands the named dead letters (all when ids is empty) back to delivery, every channel
// again, each keeping its message ID, and returns the IDs it handed back.
func (q Queue) RetryDeadLetters(ctx context.Context, rdb redis.UniversalClient, ids []string) ([]string, error) {
	sel, err := q.selectDeadLetters(ctx, rdb, ids)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range sel {
		err := requeueScript.Run(ctx, rdb, []string{q.Stream, q.DeadLetters, q.Moved}, d.Entry, d.record, d.ID, d.stored).Err()
		if errors.Is(err, redis.Nil) {
			continue // retried or dropped by someone else meanwhile
		}
		if err != nil {
			return out, err
		}
		out = append(out, d.ID)
	}
	return out, nil
}

// DropDeadLetters deletes the named dead letters of the contact messages (Queue.DropDeadLetters).
func DropDeadLetters(ctx context.Context, rdb redis.UniversalClient, ids []string) ([]string, error) {
	return ContactQueue.DropDeadLetters(ctx, rdb, ids)
}

// DropDeadLetters deletes the named dead letters (all when ids is empty) and returns the message IDs it
// deleted. The messages stay in the stream until retention or `forget` erases them.
func (q Queue) DropDeadLetters(ctx context.Context, rdb redis.UniversalClient, ids []string) ([]string, error) {
	sel, err := q.selectDeadLetters(ctx, rdb, ids)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range sel {
		n, err := rdb.XDel(ctx, q.DeadLetters, d.Entry).Result()
		if err != nil {
			return out, err
		}
		if n == 1 { // else dropped or retried by someone else meanwhile
			out = append(out, d.ID)
		}
	}
	return out, nil
}

// MoveToDeadLetters gives up on the message in stream entry msg, which consumer holds in the delivery
// group: it moves it, with its record, the reason, the channel that failed and the number of attempts, to
// the dead-letter stream. moved is false when consumer no longer holds it (see deadLetterScript).
func MoveToDeadLetters(ctx context.Context, rdb redis.UniversalClient, consumer string, msg redis.XMessage, reason, channel string, attempts int64) (moved bool, err error) {
	return ContactQueue.MoveToDeadLetters(ctx, rdb, consumer, msg, reason, channel, attempts)
}
