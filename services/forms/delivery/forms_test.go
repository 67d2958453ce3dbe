package delivery

import (
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/forms/internal/smtptest"
	"github.com/formsservice/formsservice/services/forms/notify"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/mail"
	"github.com/redis/go-redis/v9"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// formsHarness is the declared forms' delivery beside the contact worker, on a real redis-server, with
// a real SMTP server behind the shared mail component and real webhook receivers.
type formsHarness struct {
	*harness
	smtp  *smtptest.Server
	forms *Forms
}

func startForms(t *testing.T, cfg *config.Config, clk ...*testClock) *formsHarness {
	t.Helper()
	o := harnessOpts{cfg: cfg}
	if len(clk) > 0 {
		o.now = clk[0].Now
	}
	h := newHarness(t, o)
	srv := smtptest.Start(t, smtptest.Options{})
	via, err := mail.NewSMTP(mail.SMTPOptions{Addr: srv.Addr, Security: mail.Plain, Defaults: mail.Defaults{From: "forms@example.net"}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := h.worker.Forms(via)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Check(cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = f.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return &formsHarness{harness: h, smtp: srv, forms: f}
}

// submitForm stores a declared form's record as POST /f/<id> does.
func (h *formsHarness) submitForm(id string, fields store.Values) {
	h.t.Helper()
	rec, _ := json.Marshal(store.FormRecord{Form: id, Fields: fields, ReceivedAt: time.Now().UTC(), Origin: "https://www.example.com"})
	r, err := h.store.AddSubmission(h.t.Context(), store.Submission{Form: id, Client: netip.MustParseAddr("127.0.0.1"), Record: rec},
		config.DurabilityProcess)
	if err != nil || r.Outcome != store.Stored {
		h.t.Fatalf("storing a submission: %+v, %v", r, err)
	}
}

func demoDeclaration(hooks ...config.Webhook) config.DeclaredForm {
	return config.DeclaredForm{
		ID: "demo", Title: "Request a demo",
		Fields: []config.FormField{
			{Name: "name", Label: "Your name", Type: config.FieldText, Required: true},
			{Name: "email", Label: "Work e-mail", Type: config.FieldEmail, Required: true},
			{Name: "interests", Label: "Interests", Type: config.FieldManyOf, Choices: []string{"forms", "sign-in"}},
			{Name: "notes", Label: "Notes", Type: config.FieldLongText},
		},
		Notify:        &config.FormNotify{MailTo: []string{"sales@example.net", "ceo@example.net"}, Webhooks: hooks},
		Autoresponder: &config.Autoresponder{Subject: "We got your request", Text: "Hello {{name}},\nwe will write to {{email}} soon."},
	}
}

func demoFields(name, addr string) store.Values {
	return store.Values{{Name: "name", Value: name}, {Name: "email", Value: addr},
		{Name: "interests", Value: []string{"forms", "sign-in"}}, {Name: "notes", Value: "[click](https://evil.example) *now*\nsecond line"}}
}

func TestForms_DeliversEachSubmissionToEveryChannelOfItsForm(t *testing.T) {
	secret := "whsec_" + strings.Repeat("QUJD", 8)
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	chat, signed := startHook(t), startHook(t)
	cfg := declaredCfg(demoDeclaration(config.Webhook{URL: chat.URL, Format: config.WebhookFormatMarkdown}, config.Webhook{URL: signed.URL, SecretFile: secretFile}))
	h := startForms(t, cfg)
	h.submitForm("demo", demoFields("Ada Lovelace", "ada@example.com"))

	mails := h.smtp.Wait(t, 2, 10*time.Second)
	testwait.For(t, 10*time.Second, "both webhooks", func() bool { return chat.calls() == 1 && signed.calls() == 1 })
	var team, auto smtptest.Mail
	for _, m := range mails {
		if strings.Join(m.To, ",") == "sales@example.net,ceo@example.net" {
			team = m
		} else {
			auto = m
		}
	}
	teamBody := strings.ReplaceAll(team.Data, "\r\n", "\n")
	for _, want := range []string{"Subject: [form] Request a demo: Ada Lovelace", "Reply-To: \"Ada Lovelace\" <ada@example.com>",
		"Your name: Ada Lovelace", "Work e-mail: ada@example.com", "Interests: forms, sign-in", "Notes:\n    [click](https://evil.example) *now*\n    second line"} {
		if !strings.Contains(teamBody, want) {
			t.Errorf("the team's mail lacks %q:\n%s", want, teamBody)
		}
	}
	if strings.Join(auto.To, ",") != "ada@example.com" || !strings.Contains(auto.Data, "Hello Ada Lovelace,") ||
		!strings.Contains(auto.Data, "we will write to ada@example.com soon.") || !strings.Contains(auto.Data, "Subject: We got your request") {
		t.Errorf("the autoresponse: to %v\n%s", auto.To, auto.Data)
	}

	// The chat sees the fields escaped for its markup: the visitor's link does not render.
	chat.mu.Lock()
	body := chat.bodies[0]
	chat.mu.Unlock()
	var p notify.FormWebhookPayload
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p.Text, "[click](https") || !strings.Contains(p.Text, `\[click\]`) || p.Submission.Form != "demo" {
		t.Errorf("chat text %q", p.Text)
	}
	var fields map[string]any
	if err := json.Unmarshal(p.Submission.Fields, &fields); err != nil || fields["email"] != "ada@example.com" || len(fields["interests"].([]any)) != 2 {
		t.Errorf("fields %s (%v)", p.Submission.Fields, err)
	}
	// The second webhook's calls are signed with its own secret, the first's are not signed.
	signed.mu.Lock()
	hdr, sbody := signed.headers[0], signed.bodies[0]
	signed.mu.Unlock()
	v, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(sbody, hdr); err != nil {
		t.Errorf("the signed webhook's call does not verify: %v", err)
	}
	chat.mu.Lock()
	unsigned := chat.headers[0].Get("webhook-signature")
	chat.mu.Unlock()
	if unsigned != "" {
		t.Errorf("the unsigned webhook got a signature %q", unsigned)
	}
	testwait.For(t, 5*time.Second, "the acknowledgement", func() bool {
		p, err := h.rdb.XPending(t.Context(), store.FormStream("demo"), store.DeliveryGroup).Result()
		return err == nil && p.Count == 0
	})
	// The delivery metrics count every queue's attempts by channel.
	for ch, want := range map[string]float64{"smtp": 1, "webhook": 2, "autoresponder": 1} {
		if got := h.counter("formsservice_forms_delivery_attempts_total", "channel", ch); got != want {
			t.Errorf("%s attempts %v, want %v", ch, got, want)
		}
	}
	if got := h.counter("formsservice_forms_declared_delivery_pending", "form", "demo"); got != 0 {
		t.Errorf("pending gauge %v", got)
	}
}

func TestForms_RetriesOnlyTheWebhookThatFailed_AndAnswersAnAddressOnce(t *testing.T) {
	ok, flaky := startHook(t), startHook(t)
	flaky.fail.Store(1)
	cfg := declaredCfg(demoDeclaration(config.Webhook{URL: ok.URL}, config.Webhook{URL: flaky.URL}))
	cfg.Forms.Delivery.RetryAfter = config.Duration(200 * time.Millisecond)
	cfg.Forms.Delivery.Timeout = config.Duration(100 * time.Millisecond)
	h := startForms(t, cfg)
	h.submitForm("demo", demoFields("Ada", "ada@example.com"))
	testwait.For(t, 20*time.Second, "the flaky webhook's retry", func() bool { return len(flaky.delivered()) == 1 })
	if n := ok.calls(); n != 1 {
		t.Errorf("the webhook that took the message was called %d times", n)
	}
	// A second submission from the same address gets no second answer within a day; the team hears
	// of both.
	h.submitForm("demo", demoFields("Ada again", "ADA@example.com"))
	testwait.For(t, 10*time.Second, "the second submission", func() bool { return len(ok.delivered()) == 2 })
	mails := h.smtp.Wait(t, 3, 10*time.Second)
	answers := 0
	for _, m := range mails {
		if strings.EqualFold(strings.Join(m.To, ","), "ada@example.com") {
			answers++
		}
	}
	if answers != 1 || len(mails) != 3 {
		t.Errorf("%d mails, %d answers to the sender; want 3 and 1", len(mails), answers)
	}
}

func TestForms_StartsAndStopsWithTheDeclaration(t *testing.T) {
	hk := startHook(t)
	cfg := declaredCfg()
	h := startForms(t, cfg)
	h.submitForm("demo", demoFields("Early", "early@example.com")) // stored before the form notifies anyone
	next := declaredCfg(demoDeclaration(config.Webhook{URL: hk.URL}))
	next.Forms.Declared[0].Autoresponder = nil
	h.src.Set(t, next)
	testwait.For(t, 10*time.Second, "the stored submission, once the form notifies", func() bool { return len(hk.delivered()) == 1 })
	h.src.Set(t, declaredCfg())
	testwait.For(t, 10*time.Second, "the form's worker to stop", func() bool { return h.forms.Worker("demo") == nil })
}

func declaredCfg(forms ...config.DeclaredForm) *config.Config {
	c := formstest.Config()
	c.Forms.Declared = forms
	return c
}

// A declared form's retention erases its old submissions with their unique values, whether or not the
// form notifies anyone, and keeps what is newer.
func TestForms_RetentionErasesOldSubmissionsAndTheirUniqueValues(t *testing.T) {
	form := config.DeclaredForm{ID: "quiet", Unique: "email", Retention: config.Duration(30 * 24 * time.Hour),
		Fields: []config.FormField{{Name: "email", Type: config.FieldEmail, Required: true}}}
	clk := &testClock{}
	h := startForms(t, declaredCfg(form), clk)
	// A submission stored 40 days ago (its stream ID is its time), as the store writes one, and one now.
	old := strconv.FormatInt(time.Now().Add(-40*24*time.Hour).UnixMilli(), 10) + "-0"
	rec, _ := json.Marshal(store.FormRecord{Form: "quiet", Fields: store.Values{{Name: "email", Value: "old@example.com"}}})
	h.rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: store.FormStream("quiet"), ID: old, Values: []any{store.RecordField, string(rec)}})
	h.rdb.HSet(t.Context(), store.FormUnique("quiet"), "old@example.com", old)
	h.submitForm("quiet", store.Values{{Name: "email", Value: "new@example.com"}})
	h.rdb.HSet(t.Context(), store.FormUnique("quiet"), "new@example.com", "9999999999999-0")

	clk.Advance(maintenanceEvery + time.Minute) // the next sweep is due
	// The sweep trims the stream, then the unique values: wait for both.
	testwait.For(t, 20*time.Second, "the old submission and its unique value erased", func() bool {
		return h.rdb.XLen(t.Context(), store.FormStream("quiet")).Val() == 1 &&
			!h.rdb.HExists(t.Context(), store.FormUnique("quiet"), "old@example.com").Val()
	})
	if !h.rdb.HExists(t.Context(), store.FormUnique("quiet"), "new@example.com").Val() {
		t.Errorf("unique values after the sweep: %v", h.rdb.HKeys(t.Context(), store.FormUnique("quiet")).Val())
	}
	if msgs := h.rdb.XRange(t.Context(), store.FormStream("quiet"), "-", "+").Val(); len(msgs) != 1 || !strings.Contains(msgs[0].Values[store.RecordField].(string), "new@example.com") {
		t.Errorf("kept %v", msgs)
	}
}

// A declared form's worker does not block on its stream (a blocking read holds a connection of the
// shared client for its whole wait; a hundred forms would starve the submissions); the contact worker
// does.
func TestForms_WorkersDoNotBlockOnTheirStreams(t *testing.T) {
	h := startForms(t, declaredCfg())
	d := config.Delivery{RetryAfter: config.Duration(30 * time.Second)}
	contact := &Worker{src: source{q: store.ContactQueue}} // as New makes it: no test wait
	if a := contact.readArgs(d); a.Block <= 0 {
		t.Errorf("the contact worker's read: block %v", a.Block)
	}
	form := h.forms.worker("demo")
	form.workerWait = 0
	if a := form.readArgs(d); a.Block >= 0 || a.Streams[0] != store.FormStream("demo") {
		t.Errorf("a form worker's read: block %v on %v", a.Block, a.Streams)
	}
}
