package delivery

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

func deadCount(t *testing.T, rdb redis.UniversalClient) int64 {
	t.Helper()
	return rdb.XLen(t.Context(), store.DeadLetterStream).Val()
}

func TestDelivery_PoisonMessage_BecomesDeadLetterAfterMaxAttempts_AndRetentionPassesIt(t *testing.T) {
	wh := startHook(t)
	wh.fail.Store(1 << 20) // the receiver refuses this message for good
	cfg := formstest.Config()
	cfg.Forms.Delivery = testDelivery("", wh.URL)
	cfg.Forms.Delivery.MaxAttempts = 2
	h := newHarness(t, harnessOpts{cfg: cfg})

	h.submit(validContact)
	testwait.For(t, 5*time.Second, "the first attempt", func() bool { return wh.calls() == 1 })
	agePending(t, h.rdb, retryAfter+margin)
	testwait.For(t, 5*time.Second, "the dead letter", func() bool { return deadCount(t, h.rdb) == 1 })
	if n := wh.calls(); n != 2 {
		t.Fatalf("%d attempts, want maxAttempts = 2", n)
	}
	if p := pendingCount(t, h.rdb); p != 0 {
		t.Fatalf("%d messages still pending: a dead letter must leave the pending list", p)
	}
	dl, err := store.ListDeadLetters(t.Context(), h.rdb)
	if err != nil || len(dl) != 1 {
		t.Fatalf("dead letters %v, %v", dl, err)
	}
	if dl[0].Channel != "webhook" || dl[0].Attempts != 2 || !strings.Contains(dl[0].Reason, "503") {
		t.Fatalf("dead letter %+v", dl[0])
	}
	if h.counter("formsservice_forms_delivery_dead_letters_total", "channel", "webhook") != 1 {
		t.Fatal("the dead letter is not counted")
	}
	testwait.For(t, 5*time.Second, "the dead-letter gauge", func() bool {
		return h.counter("formsservice_forms_delivery_dead_letters") == 1
	})

	// A later message is delivered; retention then erases both: the dead one no longer holds it back.
	wh.fail.Store(0)
	h.submit(withName(validContact, "Grace Lovelace"))
	testwait.For(t, 5*time.Second, "the second message", func() bool { return len(wh.delivered()) == 1 })
	testwait.For(t, 2*time.Second, "the acknowledgement", func() bool { return pendingCount(t, h.rdb) == 0 })
	n, err := store.TrimContactMessages(t.Context(), h.rdb, time.Hour, true, time.Now().Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if left := h.rdb.XLen(t.Context(), store.ContactStream).Val(); left != 0 || n != 3 {
		t.Fatalf("retention erased %d entries, %d messages left; want both messages and the dead letter erased", n, left)
	}
}

func TestDelivery_FailedMessageOlderThanMaxAge_BecomesDeadLetterAtOnce(t *testing.T) {
	wh := startHook(t)
	wh.fail.Store(1 << 20)
	cfg := formstest.Config()
	cfg.Forms.Delivery = testDelivery("", wh.URL)
	cfg.Forms.Delivery.MaxAge = config.Duration(time.Hour)
	// The worker's clock runs two hours ahead: every message is older than maxAge at its first attempt.
	h := newHarness(t, harnessOpts{cfg: cfg, now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
	h.submit(validContact)
	testwait.For(t, 5*time.Second, "the dead letter", func() bool { return deadCount(t, h.rdb) == 1 })
	if n := wh.calls(); n != 1 {
		t.Fatalf("%d attempts, want 1", n)
	}
}

func TestDeadLetters_RetryDeliversAgain_DropDeletes_ForgetErases(t *testing.T) {
	wh := startHook(t)
	wh.fail.Store(1 << 20)
	cfg := formstest.Config()
	cfg.Forms.Delivery = testDelivery("", wh.URL)
	cfg.Forms.Delivery.MaxAttempts = 1
	h := newHarness(t, harnessOpts{cfg: cfg})
	ctx := t.Context()
	h.submit(validContact)
	h.submit(withEmail(validContact, "grace@example.com"))
	h.submit(withEmail(validContact, "erased@example.com"))
	testwait.For(t, 10*time.Second, "three dead letters", func() bool { return deadCount(t, h.rdb) == 3 })
	dl, _ := store.ListDeadLetters(ctx, h.rdb)

	if _, err := store.RetryDeadLetters(ctx, h.rdb, []string{"1-1"}); !errors.Is(err, store.ErrNoSuchDeadLetter) {
		t.Fatalf("retrying an unknown ID: %v", err)
	}
	wh.fail.Store(0) // the receiver is fixed
	moved, err := store.RetryDeadLetters(ctx, h.rdb, []string{dl[0].ID})
	if err != nil || len(moved) != 1 || moved[0] != dl[0].ID {
		t.Fatalf("retry: %v, %v", moved, err)
	}
	testwait.For(t, 5*time.Second, "the retried message", func() bool { return len(wh.delivered()) == 1 })
	if got := wh.delivered()[0].Contact.Email; got != "ada@example.com" {
		t.Fatalf("delivered %q", got)
	}

	dropped, err := store.DropDeadLetters(ctx, h.rdb, []string{dl[1].ID})
	if err != nil || len(dropped) != 1 || dropped[0] != dl[1].ID {
		t.Fatalf("drop: %v, %v", dropped, err)
	}
	rep, err := store.Forget(ctx, h.rdb, "erased@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := store.ListDeadLetters(ctx, h.rdb); len(left) != 0 || rep.DeadLetters != 1 {
		t.Fatalf("dead letters left %+v, forget report %+v", left, rep)
	}
}
