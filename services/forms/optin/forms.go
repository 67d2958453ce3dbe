package optin

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/formsservice/formsservice/services/forms/page"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/mail"
)

// A declared form's double opt-in (forms.declared[].doubleOptIn, D84): the same mailer, links, pages,
// resend cap and sweep as the waitlist's, for a submission kept pending by the store (formoptin.go)
// until the address in the form's unique e-mail field confirms it. Its links are the form's
// (/f/<id>/confirm, /f/<id>/unsubscribe), signed for that form with the same link key. Unsubscribing
// from a pending submission's mail withdraws it ("it was not me"): it is erased with its mails.

// formGroups remembers the forms whose outbox group exists (made again after a NOGROUP).
type formGroups struct {
	mu    sync.Mutex
	ready map[string]bool
}

// formConfirmation is the mail that asks the person to confirm a declared form's submission.
var formConfirmation = mail.MustContent("form-confirmation",
	`Confirm: {{.Data.Title}}`,
	`Someone, probably you, sent the form "{{.Data.Title}}" of {{.Brand.Product}} with this address.

To confirm it, open this link and press the button on its page:
{{.Data.Confirm}}

The link works until {{.Data.Until}}. If you do not confirm, the submission is erased then and you get no more mail about it.
If it was not you, do nothing, or withdraw it: {{.Data.Unsubscribe}}`,
	`<p>Someone, probably you, sent the form “{{.Data.Title}}” of {{.Brand.Product}} with this address.</p>
<p>To confirm it, open the link and press the button on its page:</p>
{{.Button .Data.Confirm "Confirm"}}
<p>The link works until {{.Data.Until}}. If you do not confirm, the submission is erased then and you get no more mail about it. If it was not you, do nothing.</p>
<p><a href="{{.Data.Unsubscribe}}">It was not me: withdraw it</a></p>`)

type formConfirmationData struct {
	Title, Confirm, Unsubscribe, Until string
}

// passForms sends the queued confirmation mails of every declared form with the double opt-in,
// without waiting for new ones.
func (p *OptIn) passForms(ctx context.Context, cfg *config.Config) error {
	for i := range cfg.Forms.Declared {
		form := &cfg.Forms.Declared[i]
		if form.DoubleOptIn == nil {
			continue
		}
		if err := p.ensureFormGroup(ctx, form.ID); err != nil {
			return err
		}
		mails, err := store.TakeFormOutbox(ctx, p.o.Redis, form.ID, p.o.Consumer, retryAfter, batch)
		if err != nil {
			if isNoGroup(err) {
				p.groups.mu.Lock()
				delete(p.groups.ready, form.ID)
				p.groups.mu.Unlock()
			}
			return err
		}
		for _, m := range mails {
			p.sendForm(ctx, form.ID, m)
		}
	}
	return nil
}

func (p *OptIn) ensureFormGroup(ctx context.Context, form string) error {
	p.groups.mu.Lock()
	ready := p.groups.ready[form]
	p.groups.mu.Unlock()
	if ready {
		return nil
	}
	if err := store.EnsureFormOutboxGroup(ctx, p.o.Redis, form); err != nil {
		return err
	}
	p.groups.mu.Lock()
	if p.groups.ready == nil {
		p.groups.ready = map[string]bool{}
	}
	p.groups.ready[form] = true
	p.groups.mu.Unlock()
	return nil
}

// sendForm mails the pending submission of m (m.Address holds its entry id) its confirmation, as send
// does the waitlist's, under the configuration in force now (a reload may have come since the read).
func (p *OptIn) sendForm(ctx context.Context, formID string, m store.OutboxMail) {
	cfg := p.o.Config.Current()
	form := cfg.Forms.FindDeclared(formID)
	if form == nil || form.DoubleOptIn == nil {
		return // no longer asked for: it stays queued (tried again after retryAfter), and expires with its submission
	}
	done := func(result string) {
		if err := store.FormOutboxDone(ctx, p.o.Redis, form.ID, m.ID); err != nil {
			p.logError("removing a mail from a form's outbox", err)
			return
		}
		p.m.mails.WithLabelValues(result).Inc()
	}
	entry, ok, err := store.FormPendingEntry(ctx, p.o.Redis, form.ID, m.Address)
	if err != nil {
		p.logError("reading a pending submission", err)
		return // stays in the outbox
	}
	now := p.o.Now()
	if !ok || now.Sub(store.StreamTime(m.ID)) > form.DoubleOptIn.ConfirmWithin.D() {
		done("dropped") // confirmed, withdrawn, expired or erased meanwhile; or its link would have expired
		return
	}
	until, ok, err := store.FormPendingUntil(ctx, p.o.Redis, form.ID, m.Address)
	if err != nil {
		p.logError("reading a pending submission", err)
		return
	}
	if !ok {
		done("dropped")
		return
	}
	sg, err := p.signer(ctx)
	if err != nil {
		p.logError("reading the link key", err)
		return
	}
	var rec store.FormRecord
	_ = json.Unmarshal([]byte(entry.Record), &rec) // the store wrote it; a field that cannot be read is only not shown
	to := entry.Address
	if typed, ok := rec.Fields.Get(form.Unique).(string); ok && typed != "" {
		to = typed // the address as the person wrote it
	}
	name := p.o.SiteName(rec.Origin)
	if name == "" {
		name = hostOf(rec.Origin)
	}
	title := form.Title
	if title == "" {
		title = form.ID
	}
	sc, base := scope{form: form.ID}, cfg.FormsURL()
	unsub := sg.unsubscribeURL(sc, base, m.Address)
	msg, err := formConfirmation.Render("en", mail.Brand{Product: name}, formConfirmationData{Title: title,
		Confirm: sg.confirmURL(sc, base, m.Address, until), Unsubscribe: unsub, Until: until.UTC().Format("2 January 2006, 15:04 UTC")})
	if err != nil {
		p.logError("rendering a confirmation mail", err)
		done("failed")
		return
	}
	msg.To = []string{to}
	msg.ID = "form." + form.ID + "." + m.ID // the same Message-ID on every attempt of this mail
	msg.Unsubscribe = unsub
	msg.Headers = map[string]string{"Auto-Submitted": "auto-generated"}
	sendCtx, cancel := context.WithTimeout(ctx, sendTimeout)
	err = p.o.Mail.Send(sendCtx, msg)
	cancel()
	switch {
	case err == nil:
		done("sent")
	case mail.IsPermanent(err):
		p.log.Warn("a confirmation mail was refused for good; the submission stays pending until it expires", "form", form.ID, "err", err)
		done("failed")
	default:
		p.m.mails.WithLabelValues("retry").Inc()
		p.logError("sending a confirmation mail (it is tried again)", err)
	}
}

// sweepForms erases the pending submissions past their time of every declared form that ever stored
// one (a form whose double opt-in was turned off, or that is no longer declared, included).
func (p *OptIn) sweepForms(ctx context.Context, now time.Time) error {
	ids, err := store.KnownForms(ctx, p.o.Redis)
	if err != nil {
		return err
	}
	for _, id := range ids {
		n, err := store.ExpireFormPending(ctx, p.o.Redis, id, now)
		p.m.expired.Add(float64(n))
		if err != nil {
			return err
		}
	}
	return nil
}

// formOf is the declared form of a link's :form, or nil after answering 410 (a form no longer declared:
// its submissions cannot be confirmed).
func (p *OptIn) formOf(c *fiber.Ctx, action string) *config.DeclaredForm {
	form := p.o.Config.Current().Forms.FindDeclared(c.Params("form"))
	if form == nil {
		_ = p.answer(c, fiber.StatusGone, action, "gone", formGonePage)
	}
	return form
}

// FormConfirmPage answers GET /f/<form>/confirm: a page with a button, which changes nothing.
func (p *OptIn) FormConfirmPage(c *fiber.Ctx) error {
	form, _, _, ok := p.confirmLink(c)
	if !ok {
		return nil
	}
	return write(c, fiber.StatusOK, page.Message{Title: "Confirm your submission",
		Text:   []string{"Press the button to confirm that you sent the form “" + titleOf(form) + "”."},
		Action: string(c.Request().URI().RequestURI()), Button: "Confirm"})
}

// FormConfirm answers POST /f/<form>/confirm: the submission is stored, and delivered as any other.
func (p *OptIn) FormConfirm(c *fiber.Ctx) error {
	form, id, until, ok := p.confirmLink(c)
	if !ok {
		return nil
	}
	res, err := store.ConfirmForm(c.UserContext(), p.o.Redis, form.ID, id, p.o.Now(), until)
	if err != nil {
		p.logError("confirming a submission", err)
		return p.answer(c, fiber.StatusBadGateway, "confirm", "error", unavailablePage)
	}
	switch res {
	case store.LinkDone:
		return p.answer(c, fiber.StatusOK, "confirm", "done", page.Message{Title: "Thank you",
			Text: []string{"Your submission of “" + titleOf(form) + "” is confirmed."}})
	case store.LinkAlready:
		return p.answer(c, fiber.StatusOK, "confirm", "already", page.Message{Title: "Already confirmed",
			Text: []string{"This submission was confirmed before; there is nothing more to do."}})
	}
	return p.answer(c, fiber.StatusGone, "confirm", "gone", formGonePage)
}

// confirmLink checks a confirmation link (GET page and POST alike): its form, its submission's id and
// the link's expiry, or ok false once it has answered (no signer, no such form, forged, expired).
func (p *OptIn) confirmLink(c *fiber.Ctx) (form *config.DeclaredForm, id string, until time.Time, ok bool) {
	sg, ok := p.linkSigner(c)
	if !ok {
		return nil, "", time.Time{}, false
	}
	if form = p.formOf(c, "confirm"); form == nil {
		return nil, "", time.Time{}, false
	}
	id, exp := c.Query("e"), c.Query("x")
	switch sg.checkConfirm(scope{form: form.ID}, id, exp, c.Query("s"), p.o.Now()) {
	case linkForged:
		_ = p.answer(c, fiber.StatusBadRequest, "confirm", "forged", forgedPage)
		return nil, "", time.Time{}, false
	case linkExpired:
		_ = p.answer(c, fiber.StatusGone, "confirm", "expired", formExpiredPage)
		return nil, "", time.Time{}, false
	}
	unix, _ := strconv.ParseInt(exp, 10, 64) // checkConfirm read it
	return form, id, time.Unix(unix, 0), true
}

// FormUnsubscribePage answers GET /f/<form>/unsubscribe.
func (p *OptIn) FormUnsubscribePage(c *fiber.Ctx) error {
	form, _, ok := p.unsubscribeLink(c)
	if !ok {
		return nil
	}
	return write(c, fiber.StatusOK, page.Message{Title: "Withdraw this submission",
		Text:   []string{"If you did not send the form “" + titleOf(form) + "”, press the button: the submission is erased and this address gets no more mail about it."},
		Action: string(c.Request().URI().RequestURI()), Button: "Withdraw"})
}

// FormUnsubscribe answers POST /f/<form>/unsubscribe (the button, and a mail client's RFC 8058
// one-click POST): a pending submission is erased. It answers 200 whatever the state: the address gets
// no more mail about it either way (a confirmed submission is kept; the form sends no further mail).
func (p *OptIn) FormUnsubscribe(c *fiber.Ctx) error {
	form, id, ok := p.unsubscribeLink(c)
	if !ok {
		return nil
	}
	res, err := store.WithdrawForm(c.UserContext(), p.o.Redis, form.ID, id)
	if err != nil {
		p.logError("withdrawing a submission", err)
		return p.answer(c, fiber.StatusBadGateway, "unsubscribe", "error", unavailablePage)
	}
	result := "gone"
	if res == store.LinkDone {
		result = "done"
	}
	return p.answer(c, fiber.StatusOK, "unsubscribe", result, page.Message{Title: "Withdrawn",
		Text: []string{"This address gets no more mail about this submission."}})
}

// unsubscribeLink checks an unsubscribe link (GET page and POST alike): its form and its submission's
// id, or ok false once it has answered (no signer, no such form, forged).
func (p *OptIn) unsubscribeLink(c *fiber.Ctx) (form *config.DeclaredForm, id string, ok bool) {
	sg, ok := p.linkSigner(c)
	if !ok {
		return nil, "", false
	}
	if form = p.formOf(c, "unsubscribe"); form == nil {
		return nil, "", false
	}
	id = c.Query("e")
	if !sg.checkUnsubscribe(scope{form: form.ID}, id, c.Query("s")) {
		_ = p.answer(c, fiber.StatusBadRequest, "unsubscribe", "forged", forgedPage)
		return nil, "", false
	}
	return form, id, true
}

var (
	formGonePage = page.Message{Title: "This submission is no longer there",
		Text: []string{"It was not confirmed in time, or it was withdrawn or erased. To send it, fill in the form again."}}
	formExpiredPage = page.Message{Title: "This link has expired",
		Text: []string{"Confirmation links work for a limited time. To send the form, fill it in again."}}
)

func titleOf(form *config.DeclaredForm) string {
	if form.Title != "" {
		return form.Title
	}
	return form.ID
}
