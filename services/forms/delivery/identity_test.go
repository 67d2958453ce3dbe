package delivery

import (
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/forms/internal/smtptest"
	"github.com/formsservice/formsservice/services/forms/store"
)

// messageIDOf reads the Message-ID header of a mail the test relay took.
func messageIDOf(t *testing.T, m smtptest.Mail) string {
	t.Helper()
	msg, err := mail.ReadMessage(strings.NewReader(m.Data))
	if err != nil {
		t.Fatalf("reading the mail: %v\n%s", err, m.Data)
	}
	id := msg.Header.Get("Message-ID")
	if !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, ">") || strings.Count(id, "@") != 1 {
		t.Fatalf("Message-ID %q, want <unique@domain>", id)
	}
	return id
}

// A dead letter handed back with `deliveries retry` is the same message to its receivers: the same
// webhook-id and the same Message-ID as its first attempt, and one row in the export, under its ID.
func TestDeadLetters_Retry_KeepsTheWebhookIDMessageIDAndExportRow(t *testing.T) {
	relay := smtptest.Start(t, smtptest.Options{})
	wh := startHook(t)
	wh.fail.Store(1) // the webhook fails its first call: with maxAttempts 1 the message dies
	cfg := formstest.Config()
	cfg.Forms.Delivery = testDelivery(relay.Addr, wh.URL)
	cfg.Forms.Delivery.MaxAttempts = 1
	h := newHarness(t, harnessOpts{cfg: cfg})
	ctx := t.Context()

	h.submit(validContact)
	testwait.For(t, 10*time.Second, "the dead letter", func() bool { return deadCount(t, h.rdb) == 1 })
	first := relay.Wait(t, 1, 5*time.Second)[0]
	dead, _ := store.ListDeadLetters(ctx, h.rdb)
	id := dead[0].ID
	wh.mu.Lock()
	firstHook := wh.headers[0].Get("webhook-id")
	wh.mu.Unlock()
	if got := firstHook; got != id {
		t.Fatalf("first webhook-id %q, want the message's ID %q", got, id)
	}

	retried, err := store.RetryDeadLetters(ctx, h.rdb, []string{id})
	if err != nil || len(retried) != 1 || retried[0] != id {
		t.Fatalf("retry: %v %v", retried, err)
	}
	testwait.For(t, 10*time.Second, "the retried webhook call", func() bool { return len(wh.delivered()) == 1 })
	mails := relay.Wait(t, 2, 5*time.Second)
	if a, b := messageIDOf(t, first), messageIDOf(t, mails[1]); a != b {
		t.Errorf("Message-ID %s on the retry, %s before: a receiver cannot drop the duplicate", b, a)
	}
	wh.mu.Lock()
	second := wh.headers[len(wh.headers)-1].Get("webhook-id")
	wh.mu.Unlock()
	if second != id {
		t.Errorf("webhook-id %q on the retry, want %q", second, id)
	}
	if got := wh.delivered()[0].Contact.ID; got != id {
		t.Errorf("the webhook body's contact.id %q, want %q", got, id)
	}

	var rows strings.Builder
	if n, err := store.ExportContact(ctx, h.rdb, &rows, store.FormatJSONL); err != nil || n != 1 {
		t.Fatalf("export: %d rows, %v\n%s", n, err, rows.String())
	}
	if !strings.Contains(rows.String(), `"id":"`+id+`"`) {
		t.Fatalf("export row without the message's ID %s: %s", id, rows.String())
	}
	// Delivered: nothing pending, no dead letter left, and a second retry finds nothing to hand back.
	testwait.For(t, 5*time.Second, "the retried message acknowledged", func() bool {
		p, err := h.rdb.XPending(ctx, store.ContactStream, store.DeliveryGroup).Result()
		return err == nil && p.Count == 0
	})
	if again, err := store.RetryDeadLetters(ctx, h.rdb, nil); err != nil || len(again) != 0 {
		t.Fatalf("a second retry: %v %v", again, err)
	}
	// Erasure names the message by its ID too.
	rep, err := store.Forget(ctx, h.rdb, validContact.Email)
	if err != nil || len(rep.ContactMessages) != 1 || rep.ContactMessages[0] != id {
		t.Fatalf("forget reports %+v, %v; want the message's ID %s", rep, err, id)
	}
}

// A permanent refusal of the relay (a 5xx to the transaction) ends delivery at the first attempt: the
// message becomes a dead letter at once, with the relay's answer, instead of twenty attempts over hours.
func TestDelivery_RelayRefusesPermanently_DeadLetterAtOnceWithTheAnswer(t *testing.T) {
	relay := smtptest.Start(t, smtptest.Options{})
	relay.RefuseNext(1) // 554 5.6.0 at the end of DATA
	cfg := formstest.Config()
	cfg.Forms.Delivery = testDelivery(relay.Addr, "")
	h := newHarness(t, harnessOpts{cfg: cfg}) // maxAttempts: the default, 20
	h.submit(validContact)
	testwait.For(t, 10*time.Second, "the dead letter", func() bool { return deadCount(t, h.rdb) == 1 })
	dead, _ := store.ListDeadLetters(t.Context(), h.rdb)
	d := dead[0]
	if d.Attempts != 1 || d.Channel != "smtp" || !strings.Contains(d.Reason, "554") {
		t.Fatalf("dead letter %+v, want attempt 1 on smtp with the relay's 554", d)
	}
	if n := relay.Sessions(); n != 1 {
		t.Fatalf("%d sessions with the relay, want 1", n)
	}
	if p := h.rdb.XPending(t.Context(), store.ContactStream, store.DeliveryGroup).Val(); p.Count != 0 {
		t.Fatalf("%d messages still pending", p.Count)
	}
}

// A temporary refusal (4xx) is retried as before: the message stays pending, not a dead letter.
func TestDelivery_RelayRefusesTemporarily_StaysPending(t *testing.T) {
	relay := smtptest.Start(t, smtptest.Options{})
	relay.FailNext(1) // 451 at DATA
	cfg := formstest.Config()
	cfg.Forms.Delivery = testDelivery(relay.Addr, "")
	h := newHarness(t, harnessOpts{cfg: cfg})
	h.submit(validContact)
	testwait.For(t, 10*time.Second, "the refused attempt", func() bool { return relay.Sessions() == 1 })
	waitForPasses(t, "after the 451", h.worker)
	if n := deadCount(t, h.rdb); n != 0 {
		t.Fatalf("%d dead letters after a 4xx, want 0", n)
	}
	if p := h.rdb.XPending(t.Context(), store.ContactStream, store.DeliveryGroup).Val(); p.Count != 1 {
		t.Fatalf("%d messages pending, want 1 (waiting for its retry)", p.Count)
	}
}

// Two deployments (two stores) whose streams give a message the same ID, with the same text from the
// same person received at the same instant: their mails' Message-IDs differ, because each store has an
// identity of its own in them; each deployment's retries keep its own.
func TestDelivery_TwoDeployments_SameStreamIDAndContent_DifferentMessageIDs(t *testing.T) {
	relay := smtptest.Start(t, smtptest.Options{})
	cfg := formstest.Config()
	cfg.Forms.Delivery = testDelivery(relay.Addr, "")
	a := newHarness(t, harnessOpts{cfg: cfg})
	b := newHarness(t, harnessOpts{cfg: cfg})
	rec := validContact
	rec.ReceivedAt, rec.Origin = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), formstest.Origin
	for _, h := range []*harness{a, b} {
		err := h.rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: store.ContactStream, ID: "1767323045000-0",
			Values: []any{store.RecordField, string(store.AppendContactRecord(nil, rec))}}).Err()
		if err != nil {
			t.Fatal(err)
		}
	}
	mails := relay.Wait(t, 2, 10*time.Second)
	ida, idb := messageIDOf(t, mails[0]), messageIDOf(t, mails[1])
	if ida == idb {
		t.Fatalf("two deployments sent the same Message-ID %s for two messages", ida)
	}
	for _, id := range []string{ida, idb} {
		if !strings.HasPrefix(id, "<1767323045000-0.") {
			t.Errorf("Message-ID %s does not start with the message's ID", id)
		}
	}
}
