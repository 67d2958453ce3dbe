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
// KEYS stream, dead stream, delivered key; ARGV group, consumer, id, record, reason, channel, attempts.
var deadLetterScript = redis.NewScript(`
if #redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1, ARGV[2]) == 0 then return 0 end
redis.call('XADD', KEYS[2], '*', 'id', ARGV[3], 'm', ARGV[4], 'reason', ARGV[5], 'channel', ARGV[6], 'attempts', ARGV[7])
redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
redis.call('DEL', KEYS[3])
return 1`)

// DeadLetter is a contact message whose delivery was given up.
type DeadLetter struct {
	// Entry is the dead letter's own ID in the dead-letter stream (when it died).
	Entry string `json:"entry"`
	// ID is the message's stream ID (the mail's Message-ID and the webhook-id).
	ID       string    `json:"id"`
	Received time.Time `json:"received"`
	Died     time.Time `json:"died"`
	Channel  string    `json:"channel"`
	Attempts int       `json:"attempts"`
	Reason   string    `json:"reason"`
	record   string
}

func deadLetterOf(x redis.XMessage) DeadLetter {
	str := func(k string) string { s, _ := x.Values[k].(string); return s }
	n, _ := strconv.Atoi(str("attempts"))
	return DeadLetter{
		Entry: x.ID, ID: str("id"), Received: StreamTime(str("id")).UTC(), Died: StreamTime(x.ID).UTC(),
		Channel: str("channel"), Attempts: n, Reason: str("reason"), record: str(RecordField),
	}
}

// ListDeadLetters returns every dead letter, oldest first.
func ListDeadLetters(ctx context.Context, rdb redis.UniversalClient) ([]DeadLetter, error) {
	var out []DeadLetter
	start := "-"
	for {
		msgs, err := rdb.XRangeN(ctx, DeadLetterStream, start, "+", exportPage).Result()
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

// ErrNoSuchDeadLetter names message IDs that are not dead letters.
var ErrNoSuchDeadLetter = errors.New("no dead letter with this ID")

// selectDeadLetters returns the dead letters named by ids (the messages' IDs, as `deliveries list` shows
// them), or all of them when ids is empty. The dead-letter stream's own entry IDs are not accepted: both
// come from one Redis clock, so a dead letter's entry ID can equal another message's ID, and a name that
// could mean either would select the wrong one.
func selectDeadLetters(ctx context.Context, rdb redis.UniversalClient, ids []string) ([]DeadLetter, error) {
	all, err := ListDeadLetters(ctx, rdb)
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

// requeueScript puts a dead letter back into the contact stream as a new message (delivered from the
// start, on every channel) and removes it from the dead-letter stream, atomically; a dead letter already
// gone (a second run of the call) is left alone. KEYS stream, dead stream; ARGV entry, record.
var requeueScript = redis.NewScript(`
if redis.call('XDEL', KEYS[2], ARGV[1]) == 0 then return false end
return redis.call('XADD', KEYS[1], '*', 'm', ARGV[2])`)

// RetryDeadLetters hands the named dead letters (all when ids is empty) back to delivery, as new
// messages, and returns their new stream IDs by old message ID.
func RetryDeadLetters(ctx context.Context, rdb redis.UniversalClient, ids []string) (map[string]string, error) {
	sel, err := selectDeadLetters(ctx, rdb, ids)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, d := range sel {
		id, err := requeueScript.Run(ctx, rdb, []string{ContactStream, DeadLetterStream}, d.Entry, d.record).Text()
		if errors.Is(err, redis.Nil) {
			continue // retried or dropped by someone else meanwhile
		}
		if err != nil {
			return out, err
		}
		out[d.ID] = id
	}
	return out, nil
}

// DropDeadLetters deletes the named dead letters (all when ids is empty) and returns the message IDs it
// deleted. The messages stay in the contact stream until retention or `forget` erases them.
func DropDeadLetters(ctx context.Context, rdb redis.UniversalClient, ids []string) ([]string, error) {
	sel, err := selectDeadLetters(ctx, rdb, ids)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range sel {
		if err := rdb.XDel(ctx, DeadLetterStream, d.Entry).Err(); err != nil {
			return out, err
		}
		out = append(out, d.ID)
	}
	return out, nil
}

// MoveToDeadLetters gives up on message id, which consumer holds in the delivery group: it moves, with
// its record, the reason, the channel that failed and the number of attempts, to the dead-letter stream.
// moved is false when consumer no longer holds it (see deadLetterScript).
func MoveToDeadLetters(ctx context.Context, rdb redis.UniversalClient, consumer, id, record, reason, channel string, attempts int64) (moved bool, err error) {
	n, err := deadLetterScript.Run(ctx, rdb, []string{ContactStream, DeadLetterStream, DeliveredKey(id)},
		DeliveryGroup, consumer, id, record, reason, channel, attempts).Int()
	return n == 1, err
}
