package forms

import (
	"net/http"
	"testing"

	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

const spamMessage = "Buy cheap viagra and cialis online, no prescription! https://bit.ly/pills https://pills.example/a https://pills.example/b"

// A submission that scores as spam gets exactly the answer a genuine one gets (status, body, headers the
// sender could compare), lands in the form's spam folder and not in its delivery stream, and is counted
// by reason.
func TestSpam_AnsweredAsHam_KeptInTheFolder_NotQueued(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: declaredConfig(demoForm())})
	ham := h.post("/contact", `{"name":"Ada","email":"ada@example.com","message":"Hello, what does the service cost for a club of 120?"}`)
	spam := h.post("/contact", `{"name":"Eve","email":"eve@example.com","message":"`+spamMessage+`"}`)
	ham.expect(t, http.StatusCreated, "created")
	if spam.code != ham.code || spam.raw != ham.raw {
		t.Fatalf("spam answered %d %s, ham %d %s: the sender can tell", spam.code, spam.raw, ham.code, ham.raw)
	}
	if n := h.rdb.XLen(t.Context(), store.ContactStream).Val(); n != 1 {
		t.Fatalf("%d contact messages queued for delivery, want the genuine one", n)
	}
	kept, _, err := store.ListSpam(t.Context(), h.rdb, store.ContactQueue, "", 10)
	if err != nil || len(kept) != 1 || kept[0].Verdict.Score < 4 {
		t.Fatalf("contact spam folder %+v %v, want the spam with its score", kept, err)
	}

	demoHam := h.post("/f/demo", `{"company":"Acme","email":"ada@example.com","notes":"We would like a demo next week.","consent":true}`)
	demoSpam := h.post("/f/demo", `{"company":"Pills","email":"eve@example.com","notes":"`+spamMessage+`","consent":true}`)
	if demoHam.code != http.StatusCreated || demoSpam.code != demoHam.code || demoSpam.raw != demoHam.raw {
		t.Fatalf("declared form: spam %d %s, ham %d %s", demoSpam.code, demoSpam.raw, demoHam.code, demoHam.raw)
	}
	if got := storedForm(t, h, "demo"); len(got) != 1 || got[0].Fields.Get("company") != "Acme" {
		t.Fatalf("the form's delivery stream %+v, want the genuine submission only", got)
	}
	kept, _, _ = store.ListSpam(t.Context(), h.rdb, store.FormQueue("demo"), "", 10)
	if len(kept) != 1 {
		t.Fatalf("the form's spam folder %+v, want one", kept)
	}
	for _, l := range [][]string{{"form", "contact", "reason", "all"}, {"form", "contact", "reason", "phrases"},
		{"form", "demo", "reason", "all"}, {"form", "demo", "reason", "shortener"}} {
		if n := h.counter("formsservice_forms_spam_total", l...); n != 1 {
			t.Errorf("formsservice_forms_spam_total%v = %v, want 1", l, n)
		}
	}
}

// action refuse keeps nothing and answers as ham; off delivers spam like anything else.
func TestSpam_ActionsRefuseAndOff(t *testing.T) {
	refuse, off := demoForm(), demoForm()
	refuse.ID, off.ID = "refuse", "off"
	refuse.Spam, off.Spam = &config.Spam{Action: config.SpamRefuse}, &config.Spam{Action: config.SpamOff}
	h := newHarness(t, harnessOpts{cfg: declaredConfig(refuse, off)})
	for _, id := range []string{"refuse", "off"} {
		h.post("/f/"+id, `{"company":"Pills","email":"eve@example.com","notes":"`+spamMessage+`","consent":true}`).expect(t, http.StatusCreated, "created")
	}
	if n, s := len(storedForm(t, h, "refuse")), h.rdb.XLen(t.Context(), store.FormQueue("refuse").Spam).Val(); n != 0 || s != 0 {
		t.Errorf("refuse: %d queued, %d kept; want nothing", n, s)
	}
	if n := len(storedForm(t, h, "off")); n != 1 {
		t.Errorf("off: %d queued, want the submission", n)
	}
}
