package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/services/platform/email"
)

// ForgetReport says what an erasure removed.
type ForgetReport struct {
	Email           string   `json:"email"`
	WaitlistEntries int      `json:"waitlist_entries"`
	ContactMessages []string `json:"contact_messages"` // IDs (MessageID) of the erased messages
	DeadLetters     int      `json:"dead_letters"`     // dead letters (copies of undeliverable messages) erased
	// ConfirmationMails are the double opt-in's mails to the address that were still queued.
	ConfirmationMails int `json:"confirmation_mails"`
	// FormSubmissions are the erased submissions of declared forms (IDs by form id), and
	// FormDeadLetters their dead letters.
	FormSubmissions map[string][]string `json:"form_submissions"`
	FormDeadLetters int                 `json:"form_dead_letters"`
	// Spam counts the erased entries of the spam folders (/contact's and the declared forms').
	Spam int `json:"spam"`
	// FormPending counts the erased submissions of declared forms that still waited for the address's
	// confirmation (their queued mails count in ConfirmationMails).
	FormPending int `json:"form_pending"`
}

// Forget erases an address (compared in its canonical form) from the waitlist, its queued confirmation
// mails, every stored contact message and every declared form's submission that holds it, including
// those still waiting for delivery, dead letters and spam. It is idempotent.
func Forget(ctx context.Context, rdb redis.UniversalClient, address string) (ForgetReport, error) {
	canonical, ok := email.Canonical(address)
	if !ok {
		return ForgetReport{}, fmt.Errorf("%q is not a valid e-mail address", address)
	}
	rep := ForgetReport{Email: canonical, ContactMessages: []string{}}
	var entries []string // the erased messages' stream entries
	// The double opt-in's traces of the entry: its id in the index, its expiry, its resend throttle.
	if rec, ok, err := WaitlistEntry(ctx, rdb, canonical); err != nil {
		return rep, err
	} else if ok && rec.ID != "" {
		if err := rdb.HDel(ctx, WaitlistIDs, rec.ID).Err(); err != nil {
			return rep, err
		}
	}
	if err := rdb.ZRem(ctx, WaitlistPending, canonical).Err(); err != nil {
		return rep, err
	}
	if err := rdb.Del(ctx, ResendKey(canonical)).Err(); err != nil {
		return rep, err
	}
	n, err := rdb.HDel(ctx, WaitlistEntries, canonical).Result()
	if err != nil {
		return rep, err
	}
	if err := rdb.LRem(ctx, WaitlistOrder, 0, canonical).Err(); err != nil {
		return rep, err
	}
	rep.WaitlistEntries = int(n)
	if rep.ConfirmationMails, err = forgetOutbox(ctx, rdb, canonical); err != nil {
		return rep, err
	}

	err = scanStream(ctx, rdb, func(msg redis.XMessage, rec ContactRecord) error {
		if c, ok := email.Canonical(rec.Email); ok && c == canonical {
			rep.ContactMessages = append(rep.ContactMessages, MessageID(msg))
			entries = append(entries, msg.ID)
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	for start := 0; start < len(entries); start += exportPage {
		ids := entries[start:min(start+exportPage, len(entries))]
		pipe := rdb.TxPipeline()
		pipe.XDel(ctx, ContactStream, ids...)
		for _, id := range ids {
			pipe.Del(ctx, DeliveredKey(id))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return rep, err
		}
		// Drop them from the delivery group's pending list too; no group yet is fine.
		if err := rdb.XAck(ctx, ContactStream, DeliveryGroup, ids...).Err(); err != nil && !strings.Contains(err.Error(), "NOGROUP") {
			return rep, err
		}
	}
	if len(rep.ContactMessages) > 0 {
		if err := rdb.HDel(ctx, ContactQueue.Moved, rep.ContactMessages...).Err(); err != nil {
			return rep, err
		}
	}
	dead, err := ListDeadLetters(ctx, rdb)
	if err != nil {
		return rep, err
	}
	for _, d := range dead {
		var rec ContactRecord
		if json.Unmarshal([]byte(d.record), &rec) != nil {
			continue
		}
		if c, ok := email.Canonical(rec.Email); ok && c == canonical {
			if err := rdb.XDel(ctx, DeadLetterStream, d.Entry).Err(); err != nil {
				return rep, err
			}
			rep.DeadLetters++
		}
	}
	if rep.Spam, err = ContactQueue.forgetSpam(ctx, rdb, func(raw []byte) bool {
		var rec ContactRecord
		c, ok := "", false
		if json.Unmarshal(raw, &rec) == nil {
			c, ok = email.Canonical(rec.Email)
		}
		return ok && c == canonical
	}); err != nil {
		return rep, err
	}
	var spam int
	rep.FormSubmissions, rep.FormDeadLetters, spam, err = forgetForms(ctx, rdb, canonical)
	rep.Spam += spam
	if err != nil {
		return rep, err
	}
	forms, err := KnownForms(ctx, rdb)
	for _, id := range forms {
		entries, mails, err := forgetFormPending(ctx, rdb, id, canonical)
		rep.FormPending += entries
		rep.ConfirmationMails += mails
		if err != nil {
			return rep, err
		}
	}
	return rep, err
}

// forgetOutbox removes the queued confirmation mails to canonical, read by a mailer or not. The outbox
// holds only mails not yet sent (a sent one is deleted), so it is short; it is read a page at a time.
func forgetOutbox(ctx context.Context, rdb redis.UniversalClient, canonical string) (int, error) {
	var ids []string
	for start := "-"; ; {
		page, err := rdb.XRangeN(ctx, WaitlistOutbox, start, "+", exportPage).Result()
		if err != nil {
			return 0, err
		}
		for _, m := range page {
			if a, _ := m.Values["a"].(string); a == canonical {
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
	// Acknowledged first, so that no mailer holds an entry that is gone; no group yet is fine.
	if err := rdb.XAck(ctx, WaitlistOutbox, OutboxGroup, ids...).Err(); err != nil && !strings.Contains(err.Error(), "NOGROUP") {
		return 0, err
	}
	return len(ids), rdb.XDel(ctx, WaitlistOutbox, ids...).Err()
}
