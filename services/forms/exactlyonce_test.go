package forms

import (
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/services/forms/store"
)

// lateReply is longer than the harness's Redis read timeout (1 s) and shorter than the store timeout
// (1.5 s): the client gives up on the first answer, retries, and the request still has time to answer.
const lateReply = 1200 * time.Millisecond

func TestWaitlist_ReplyArrivesAfterReadTimeout_ClientRetryGetsTheFirstAnswer(t *testing.T) {
	h := newHarness(t, harnessOpts{proxy: true})
	h.post("/waitlist", `{"email":"warm@example.com","consent":true}`).expect(t, 201, "created") // loads the script
	h.proxy.HoldNextReply("EVALSHA", lateReply)
	// Redis stores the address, the answer is late, go-redis sends the script again: the second run must
	// not answer "duplicate" to the person who just signed up.
	h.post("/waitlist", validWaitlist).expect(t, 201, "created")
	if n := h.rdb.LLen(t.Context(), store.WaitlistOrder).Val(); n != 2 {
		t.Fatalf("%d addresses in the sign-up order, want 2", n)
	}
}

func TestContact_ReplyArrivesAfterReadTimeout_StoredOnce(t *testing.T) {
	h := newHarness(t, harnessOpts{proxy: true})
	h.post("/contact", validContact).expect(t, 201, "created")
	h.proxy.HoldNextReply("EVALSHA", lateReply)
	h.post("/contact", strings.Replace(validContact, "Ada", "Grace", 1)).expect(t, 201, "created")
	if n := h.rdb.XLen(t.Context(), store.ContactStream).Val(); n != 2 {
		t.Fatalf("%d messages stored, want 2 (a client retry ran the script twice)", n)
	}
}

func TestContact_IdempotencyKeyReusedWithAnotherBody_Returns422(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	const key = "7c1d9f2e-reused"
	h.post("/contact", validContact, "Idempotency-Key", key).expect(t, 201, "created")
	other := strings.Replace(validContact, "pricing", "support", 1)
	a := h.post("/contact", other, "Idempotency-Key", key)
	a.expect(t, 422, "error")
	if !strings.Contains(a.raw, `"idempotency_key_reused"`) {
		t.Fatalf("422 body %s", a.raw)
	}
	// The same message again (white space around a field does not make it another message) replays.
	spaced := strings.Replace(validContact, `"Ada Lovelace"`, `"  Ada Lovelace "`, 1)
	h.post("/contact", spaced, "Idempotency-Key", key).expect(t, 201, "created")
	if n := h.rdb.XLen(t.Context(), store.ContactStream).Val(); n != 1 {
		t.Fatalf("%d messages stored, want 1", n)
	}
	if h.counter("formsservice_forms_submissions_total", "endpoint", "contact", "result", "idempotency_conflict") != 1 {
		t.Fatal("the conflict is not counted")
	}
}

func TestContact_SameIdempotencyKeyFromAnotherOrigin_IsAnotherMessage(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	const key = "order-form-1"
	h.post("/contact", validContact, "Idempotency-Key", key).expect(t, 201, "created")
	h.post("/contact", validContact, "Idempotency-Key", key, "Origin", "https://shop.example.org").expect(t, 201, "created")
	if n := h.rdb.XLen(t.Context(), store.ContactStream).Val(); n != 2 {
		t.Fatalf("%d messages stored, want 2: another site's key is its own", n)
	}
	if h.counter("formsservice_forms_submissions_total", "endpoint", "contact", "result", "replayed") != 0 {
		t.Fatal("a key of another origin was taken as a replay")
	}
}

func TestContact_BadIdempotencyKey_IsAHeaderErrorNotAField(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	a := h.post("/contact", `{"name":"","email":"ada@example.com","message":"Hello there, a question."}`,
		"Idempotency-Key", "bad key with spaces")
	a.expect(t, 400, "invalid")
	if _, asField := a.errors[IdempotencyKeyHeader]; asField {
		t.Fatalf("the header is reported as a body field: %s", a.raw)
	}
	if a.errors["name"] != CodeRequired || !strings.Contains(a.raw, `"headers":{"Idempotency-Key":"invalid_type"}`) {
		t.Fatalf("400 body %s", a.raw)
	}
}
