// Package store keeps the forms' submissions in Redis: the key schema (this file), the scripts that
// decide each submission atomically (store.go), group commit of those scripts and the durability levels
// (batch.go, durability.go), the stored records (record.go), retention, export, erasure and the dead
// letters. It knows nothing of HTTP: the forms service writes through it, and the delivery worker reads
// the contact stream it fills through the keys and the consumer group named here.
package store

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis keys (docs/architecture.md, D12). Every key of one endpoint carries the same hash tag ({waitlist} or {contact}), so each
// script call (see batcher) touches one slot and runs on one Redis Cluster master in one round trip: the
// per-IP rate-limit counter, the idempotency record, the uniqueness check and the durable record are
// decided together and atomically. The price is that one endpoint's data lives on one master; forms
// traffic is a few submissions per second and a waitlist of a million addresses is a few hundred MB, far
// inside one Redis. Splitting the rate-limit counter into the client IP's own slot would cost a second,
// sequential round trip on Cluster (the counter must gate the write, so the two cannot be pipelined).
const (
	// WaitlistEntries is a hash: canonical address -> JSON record. HSETNX makes the entry unique.
	WaitlistEntries = "fs:{waitlist}:entries"
	// WaitlistOrder lists canonical addresses in sign-up order, for export (a list append is far
	// cheaper than a sorted-set insert, and an address is appended only when HSETNX created it).
	WaitlistOrder      = "fs:{waitlist}:order"
	waitlistRatePrefix = "fs:{waitlist}:rate:"
	// waitlistIdemPrefix holds a waitlist Idempotency-Key's record: "<hash of the entry>:<first answer>".
	waitlistIdemPrefix = "fs:{waitlist}:idem:"
	// The double opt-in (optin.go). WaitlistIDs maps an entry's id (in its links) to its address;
	// WaitlistPending holds pending addresses scored by when they expire (ms); WaitlistOutbox queues
	// the confirmation mails (field "a": the address) for the consumer group OutboxGroup; a resend key
	// throttles the mail of a pending address signed up again; the link key signs the links.
	WaitlistIDs          = "fs:{waitlist}:ids"
	WaitlistPending      = "fs:{waitlist}:pending"
	WaitlistOutbox       = "fs:{waitlist}:outbox"
	OutboxGroup          = "optin"
	waitlistResendPrefix = "fs:{waitlist}:resend:"
	waitlistLinkKey      = "fs:{waitlist}:linkkey"

	// ContactStream holds every stored contact message (field RecordField: the JSON record) until erased;
	// the delivery workers read it through the consumer group DeliveryGroup.
	ContactStream     = "fs:{contact}:messages"
	contactRatePrefix = "fs:{contact}:rate:"
	contactIdemPrefix = "fs:{contact}:idem:"
	contactDoneSuffix = ":delivered" // fs:{contact}:<id>:delivered — channels already delivered
	contactDonePrefix = "fs:{contact}:"
	// DeliveryGroup is the delivery workers' consumer group on ContactStream.
	DeliveryGroup = "delivery"
	// RecordField is the field of a ContactStream (and DeadLetterStream) entry that holds the record.
	RecordField         = "m"
	rateWindow          = time.Minute
	idempotencyLifetime = 24 * time.Hour
	// runLifetime keeps a script call's answer for a second run of the same call: go-redis sends it
	// again within the store timeout (1.5 s), so a minute is ample.
	runLifetime = time.Minute
	runPrefix   = ":run:" // fs:{waitlist}:run:<call id>, fs:{contact}:run:<call id>
	// inFlightLifetime bounds the in-flight state of an Idempotency-Key when the process holding it dies
	// before settling it; a live request settles it within the store timeout (1.5 s).
	inFlightLifetime  = 5 * time.Second
	contactBusySuffix = ":busy" // fs:{contact}:idem:<hash>:busy
)

// DeadLetterStream holds one entry per dead letter: the message's ID ("id", MessageID), its entry in
// ContactStream ("entry"), its record ("m"), the last error ("reason"), the channel that failed
// ("channel") and how many attempts it had ("attempts").
const DeadLetterStream = "fs:{contact}:dead"

// OriginalIDField, on a ContactStream entry, holds the ID of the message it carries when that is not the
// entry's own: a dead letter handed back to delivery (RetryDeadLetters) keeps the ID it was stored under,
// so that its webhook-id, its mail's Message-ID and its export row stay the same.
const OriginalIDField = "id"

// MessageID is the ID of the message in a ContactStream entry: the entry's own ID, or for a retried
// dead letter the ID it was first stored under.
func MessageID(msg redis.XMessage) string {
	if id, ok := msg.Values[OriginalIDField].(string); ok && id != "" {
		return id
	}
	return msg.ID
}

// DeliveredKey records which channels already took a message, so that a retry after a partial failure
// does not send the mail twice when only the webhook failed.
func DeliveredKey(id string) string { return ContactQueue.DeliveredKey(id) }

// StreamTime is when a message was stored: the millisecond part of its stream ID.
func StreamTime(id string) time.Time {
	ms, _, _ := strings.Cut(id, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(n)
}

// deploymentKey holds a random identity of this store, made once (SET NX) and never erased: the part of
// every contact mail's Message-ID that tells two deployments (two stores, whose stream IDs both start from
// the clock) apart.
const deploymentKey = "fs:{contact}:deployment"

// DeploymentID returns the store's identity, making it the first time.
func DeploymentID(ctx context.Context, rdb redis.UniversalClient) (string, error) {
	if err := rdb.SetNX(ctx, deploymentKey, randomHex(16), 0).Err(); err != nil {
		return "", err
	}
	return rdb.Get(ctx, deploymentKey).Result()
}

// EnsureDeliveryGroup creates the consumer group (and the stream) when missing. It starts at the beginning
// of the stream: messages stored while no delivery target was configured are delivered once one is.
func EnsureDeliveryGroup(ctx context.Context, rdb redis.UniversalClient) error {
	return ContactQueue.EnsureGroup(ctx, rdb)
}
