package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/formsservice/formsservice/services/platform/email"
	"github.com/redis/go-redis/v9"
)

// Queue names the keys of one stream the delivery workers send from: the contact messages', or a
// declared form's (declared.go). Each has its consumer group DeliveryGroup, its dead letters and its
// per-message record of the channels that took a message, all under the stream's hash tag.
type Queue struct {
	// Name is "contact", or the declared form's id.
	Name        string
	Stream      string
	DeadLetters string
	// Spam is the spam folder (spam.go): a stream of what scored as spam, not delivered.
	Spam string
	// Moved maps the ID of a message that was handed from one stream to another (released from the
	// spam folder, marked as spam, a dead letter retried) to its entry there: the message keeps its ID
	// (MessageID) and is found by it (D63).
	Moved      string
	donePrefix string
	unique     string // a declared form's unique values (FormUnique)
}

// ContactQueue is the contact messages' queue.
var ContactQueue = Queue{Name: "contact", Stream: ContactStream, DeadLetters: DeadLetterStream, Spam: ContactSpam, Moved: contactMoved,
	donePrefix: contactDonePrefix}

// contactMoved is the contact messages' Queue.Moved.
const contactMoved = "fs:{contact}:moved"

// FormQueue is a declared form's queue.
func FormQueue(id string) Queue {
	p := formPrefix(id)
	return Queue{Name: id, Stream: FormStream(id), DeadLetters: p + "dead", Spam: p + "spam", Moved: p + "moved", donePrefix: p, unique: FormUnique(id)}
}

// holdsFiles reports a declared form's queue, whose records may name files (a contact message never does).
func (q Queue) holdsFiles() bool { return q.Name != ContactQueue.Name }

// DeliveredKey records which channels already took message id (see the package function).
func (q Queue) DeliveredKey(id string) string { return q.donePrefix + id + contactDoneSuffix }

// EnsureGroup creates the consumer group (and the stream) when missing, from the start of the stream:
// what was stored while nothing took it is delivered once something does.
func (q Queue) EnsureGroup(ctx context.Context, rdb redis.UniversalClient) error {
	err := rdb.XGroupCreateMkStream(ctx, q.Stream, DeliveryGroup, "0").Err()
	if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
		return err
	}
	return nil
}

// MoveToDeadLetters gives up on the message in stream entry msg, which consumer holds (see the package
// function).
func (q Queue) MoveToDeadLetters(ctx context.Context, rdb redis.UniversalClient, consumer string, msg redis.XMessage, reason, channel string, attempts int64) (moved bool, err error) {
	record, _ := msg.Values[RecordField].(string)
	n, err := deadLetterScript.Run(ctx, rdb, []string{q.Stream, q.DeadLetters, q.DeliveredKey(msg.ID)},
		DeliveryGroup, consumer, msg.ID, record, reason, channel, attempts, MessageID(msg)).Int()
	return n == 1, err
}

// AnswerLimit is a declared form's record of the addresses its autoresponder answered lately: one
// key per address (a hash of it, under the form's tag) that lives for the limit's period.
type AnswerLimit struct {
	rdb    redis.UniversalClient
	prefix string
	every  time.Duration
}

// NewAnswerLimit keeps form's answers to one address every apart.
func NewAnswerLimit(rdb redis.UniversalClient, form string, every time.Duration) *AnswerLimit {
	return &AnswerLimit{rdb: rdb, prefix: formPrefix(form) + "answered:", every: every}
}

func (l *AnswerLimit) key(address string) string {
	if c, ok := email.Canonical(address); ok {
		address = c // one person, however the address is spelled
	}
	sum := sha256.Sum256([]byte(address))
	return l.prefix + hex.EncodeToString(sum[:16])
}

// Take reports whether address had no answer within the period, and records one now.
func (l *AnswerLimit) Take(ctx context.Context, address string) (bool, error) {
	return l.rdb.SetNX(ctx, l.key(address), "1", l.every).Result()
}

// Release forgets the record Take made (its mail was not sent).
func (l *AnswerLimit) Release(ctx context.Context, address string) {
	_ = l.rdb.Del(ctx, l.key(address)).Err()
}
