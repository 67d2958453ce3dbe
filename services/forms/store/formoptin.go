package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// A declared form's double opt-in (docs/forms.md "Your own forms", D84). A submission of a form with
// doubleOptIn is not stored in the form's stream, where it would be delivered, but kept pending under
// a random id until the address in its unique e-mail field follows the link of a confirmation mail;
// confirmed, it is added to the stream as any submission (and delivered, exported, erased as one). Its
// keys are in the form's slot:
//
//	fs:{form:<id>}:optin:pending         hash: entry id -> {"r": record, "u": unique value, "a": address, "n": re-sends}
//	fs:{form:<id>}:optin:expiry          sorted set: entry id, scored by when it expires unconfirmed (ms)
//	fs:{form:<id>}:optin:outbox          stream: confirmation mails to send (field "e": the entry id); group OutboxGroup
//	fs:{form:<id>}:optin:resend:<hash>   the resend window of a pending address (a hash of it: no address in a key name)
//	fs:{form:<id>}:optin:confirmed:<id>  a confirmed entry's stream entry, until its link expires ("already confirmed")
//
// While pending, the unique hash holds "p:<entry id>" for the address, so that the form answers it as a
// duplicate, and a duplicate queues the mail again as the waitlist does (MaxResends, the window
// doubling). An entry left unconfirmed is erased with its unique value (ExpireFormPending).

// FormPending is the declared form's hash of pending entries.
func FormPending(id string) string { return formPrefix(id) + "optin:pending" }

// FormOutbox is the declared form's stream of confirmation mails to send.
func FormOutbox(id string) string { return formPrefix(id) + "optin:outbox" }

func formExpiry(id string) string { return formPrefix(id) + "optin:expiry" }

func formConfirmedKey(form, entry string) string {
	return formPrefix(form) + "optin:confirmed:" + entry
}

// formResendKey throttles the confirmation mail of a pending address on form.
func formResendKey(form, address string) string {
	sum := sha256.Sum256([]byte(address))
	return formPrefix(form) + "optin:resend:" + hex.EncodeToString(sum[:16])
}

// pendLua is formLua's double opt-in: KEYS[3] the unique hash, KEYS[6] pending, KEYS[7] expiry,
// KEYS[8] outbox.
var pendLua = `
local function pend(id, record, uniq, addr, expires, window, ks)
  redis.call('HSET', KEYS[6], id, cjson.encode({r = record, u = uniq, a = addr, n = 0}))
  redis.call('HSET', KEYS[3], uniq, 'p:' .. id)
  redis.call('ZADD', KEYS[7], expires, id)
  redis.call('XADD', KEYS[8], '*', 'e', id)
  redis.call('SET', ks, '1', 'PX', window)
end
local function resend(held, ks, expires, window)
  if string.sub(held, 1, 2) ~= 'p:' then return end
  local id = string.sub(held, 3)
  local raw = redis.call('HGET', KEYS[6], id)
  if not raw then return end
  local p = cjson.decode(raw)
  local n = tonumber(p.n) or 0
  if n < ` + strconv.Itoa(MaxResends) + ` and redis.call('SET', ks, '1', 'NX', 'PX', tonumber(window) * 2 ^ (n + 1)) then
    p.n = n + 1
    redis.call('HSET', KEYS[6], id, cjson.encode(p))
    redis.call('ZADD', KEYS[7], expires, id)
    redis.call('XADD', KEYS[8], '*', 'e', id)
  end
end
`

// PendingEntry is a declared form's submission waiting for its address's confirmation.
type PendingEntry struct {
	Record  string `json:"r"` // the record as AppendFormRecord wrote it
	Unique  string `json:"u"`
	Address string `json:"a"` // the canonical address the confirmation goes to
	Resent  int    `json:"n"`
}

// FormPendingEntry reads form's pending entry id; false when there is none.
func FormPendingEntry(ctx context.Context, rdb redis.UniversalClient, form, id string) (PendingEntry, bool, error) {
	raw, err := rdb.HGet(ctx, FormPending(form), id).Result()
	if errors.Is(err, redis.Nil) {
		return PendingEntry{}, false, nil
	}
	if err != nil {
		return PendingEntry{}, false, err
	}
	var p PendingEntry
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return PendingEntry{}, false, fmt.Errorf("form %s: pending entry %s: %w", form, id, err)
	}
	return p, true, nil
}

// FormPendingUntil is when form's pending entry id expires; false when it is not pending.
func FormPendingUntil(ctx context.Context, rdb redis.UniversalClient, form, id string) (time.Time, bool, error) {
	score, err := rdb.ZScore(ctx, formExpiry(form), id).Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	return time.UnixMilli(int64(score)), true, nil
}

// confirmFormScript: KEYS pending, expiry, unique, stream, confirmed marker, per-day counts; ARGV the
// entry id, the time (RFC 3339), how long the marker lives (ms). It adds the record to the stream with
// "confirmed_at" (the record is a JSON object written by AppendFormRecord: the member goes before its
// closing brace, so that no value is decoded and encoded again) and answers 1; 2 when the entry was
// confirmed before (its marker), 0 when it is not there (expired, withdrawn, erased).
var confirmFormScript = redis.NewScript(tallyLua + `
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then
  if redis.call('EXISTS', KEYS[5]) == 1 then return 2 end
  return 0
end
local p = cjson.decode(raw)
local record = string.sub(p.r, 1, -2) .. ',"confirmed_at":' .. cjson.encode(ARGV[2]) .. '}'
local entry = redis.call('XADD', KEYS[4], '*', 'm', record)
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if p.u ~= '' and redis.call('HGET', KEYS[3], p.u) == 'p:' .. ARGV[1] then redis.call('HSET', KEYS[3], p.u, entry) end
redis.call('SET', KEYS[5], entry, 'PX', math.max(tonumber(ARGV[3]), 1))
count('')
tally(KEYS[6])
return 1`)

// ConfirmForm confirms form's pending entry id: its submission is stored (and delivered) now. The
// "already confirmed" marker lives until linkUntil, when the link that confirmed it stops working.
func ConfirmForm(ctx context.Context, rdb redis.UniversalClient, form, id string, now, linkUntil time.Time) (LinkOutcome, error) {
	keys := []string{FormPending(form), formExpiry(form), FormUnique(form), FormStream(form), formConfirmedKey(form, id), FormDaily(form)}
	n, err := confirmFormScript.Run(ctx, rdb, keys, id, stamp(now), linkUntil.Sub(now).Milliseconds()+1000).Int64()
	switch {
	case err != nil:
		return LinkGone, err
	case n == 1:
		return LinkDone, nil
	case n == 2:
		return LinkAlready, nil
	}
	return LinkGone, nil
}

// dropPendingScript erases pending entries: KEYS pending, expiry, unique; ARGV their ids. An entry's
// unique value is freed when it still names the entry. It answers how many were pending.
var dropPendingScript = redis.NewScript(`
local n = 0
for _, id in ipairs(ARGV) do
  local raw = redis.call('HGET', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
  if raw then
    local p = cjson.decode(raw)
    if p.u ~= '' and redis.call('HGET', KEYS[3], p.u) == 'p:' .. id then redis.call('HDEL', KEYS[3], p.u) end
    redis.call('HDEL', KEYS[1], id)
    n = n + 1
  end
end
return n`)

func dropPending(ctx context.Context, rdb redis.UniversalClient, form string, ids []string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return dropPendingScript.Run(ctx, rdb, []string{FormPending(form), formExpiry(form), FormUnique(form)}, args...).Int64()
}

// WithdrawForm erases form's pending entry id (the confirmation mail's unsubscribe link: "it was not
// me"): LinkDone when it was pending, LinkGone otherwise. A confirmed submission stays.
func WithdrawForm(ctx context.Context, rdb redis.UniversalClient, form, id string) (LinkOutcome, error) {
	n, err := dropPending(ctx, rdb, form, []string{id})
	if err != nil || n == 0 {
		return LinkGone, err
	}
	return LinkDone, nil
}

// ExpireFormPending erases form's pending entries whose time is up and returns how many.
func ExpireFormPending(ctx context.Context, rdb redis.UniversalClient, form string, now time.Time) (int64, error) {
	var total int64
	for {
		ids, err := rdb.ZRangeByScore(ctx, formExpiry(form), &redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(now.UnixMilli(), 10),
			Count: sweepPage}).Result()
		if err != nil || len(ids) == 0 {
			return total, err
		}
		n, err := dropPending(ctx, rdb, form, ids)
		total += n
		if err != nil || len(ids) < sweepPage {
			return total, err
		}
	}
}

// forgetFormPending erases form's pending entries of the canonical address with their queued mails and
// resend window, and returns how many entries and mails it erased.
func forgetFormPending(ctx context.Context, rdb redis.UniversalClient, form, canonical string) (entries, mails int, err error) {
	var ids []string
	iter := rdb.HScan(ctx, FormPending(form), 0, "", 200).Iterator()
	for iter.Next(ctx) {
		id := iter.Val()
		if !iter.Next(ctx) {
			break
		}
		var p PendingEntry
		if json.Unmarshal([]byte(iter.Val()), &p) == nil && p.Address == canonical {
			ids = append(ids, id)
		}
	}
	if err := iter.Err(); err != nil {
		return 0, 0, err
	}
	n, err := dropPending(ctx, rdb, form, ids)
	if err != nil {
		return 0, 0, err
	}
	if err := rdb.Del(ctx, formResendKey(form, canonical)).Err(); err != nil {
		return int(n), 0, err
	}
	mails, err = dropOutboxOf(ctx, rdb, FormOutbox(form), "e", ids)
	return int(n), mails, err
}

// dropOutboxOf erases the mails of an outbox whose field names one of values (an outbox holds the
// mails not yet sent: few).
func dropOutboxOf(ctx context.Context, rdb redis.UniversalClient, outbox, field string, values []string) (int, error) {
	if len(values) == 0 {
		return 0, nil
	}
	msgs, err := rdb.XRange(ctx, outbox, "-", "+").Result()
	if err != nil {
		return 0, err
	}
	var drop []string
	for _, m := range msgs {
		if v, _ := m.Values[field].(string); v != "" && slices.Contains(values, v) {
			drop = append(drop, m.ID)
		}
	}
	if len(drop) == 0 {
		return 0, nil
	}
	pipe := rdb.TxPipeline()
	pipe.XAck(ctx, outbox, OutboxGroup, drop...)
	pipe.XDel(ctx, outbox, drop...)
	_, err = pipe.Exec(ctx)
	return len(drop), err
}

// EnsureFormOutboxGroup creates form's mailers' consumer group (and the stream) when missing.
func EnsureFormOutboxGroup(ctx context.Context, rdb redis.UniversalClient, form string) error {
	err := rdb.XGroupCreateMkStream(ctx, FormOutbox(form), OutboxGroup, "0").Err()
	if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
		return err
	}
	return nil
}

// TakeFormOutbox takes up to count of form's queued mails for consumer: those that waited longer than
// minIdle after an attempt (a failure, or a consumer that died), then new ones. Address holds the entry id.
func TakeFormOutbox(ctx context.Context, rdb redis.UniversalClient, form, consumer string, minIdle time.Duration, count int64) ([]OutboxMail, error) {
	again, _, err := rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: FormOutbox(form), Group: OutboxGroup,
		Consumer: consumer, MinIdle: minIdle, Start: "0-0", Count: count}).Result()
	if err != nil {
		return nil, err
	}
	streams, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: OutboxGroup, Consumer: consumer,
		Streams: []string{FormOutbox(form), ">"}, Count: count, Block: -1}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	msgs := again
	for _, s := range streams {
		msgs = append(msgs, s.Messages...)
	}
	out := make([]OutboxMail, 0, len(msgs))
	for _, m := range msgs {
		e, _ := m.Values["e"].(string)
		out = append(out, OutboxMail{ID: m.ID, Address: e})
	}
	return out, nil
}

// FormOutboxDone drops a mail of form's outbox that was sent, or given up.
func FormOutboxDone(ctx context.Context, rdb redis.UniversalClient, form, id string) error {
	pipe := rdb.TxPipeline()
	pipe.XAck(ctx, FormOutbox(form), OutboxGroup, id)
	pipe.XDel(ctx, FormOutbox(form), id)
	_, err := pipe.Exec(ctx)
	return err
}
