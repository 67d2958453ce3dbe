package forms

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/gofiber/fiber/v2"

	"github.com/formsservice/formsservice/services/forms/store"
)

// declaredFormKey keeps the declared form a request posts to on the request (fasthttp's user values),
// for its metrics and its error page's labels.
const declaredFormKey = "forms.declared"

var bodyUnknownForm = []byte(`{"status":"error","error":"unknown_form"}`)

// submitDeclared takes POST /f/<id>: a declared form (docs/forms.md "Your own forms"), or one of the
// built-in forms under their id, which answer exactly as at /contact and /waitlist. The checks run in the
// built-in forms' order — origin (403), size (413), content type (415), then the form: unknown (404),
// not for this origin (403), fields (400), rate limit (429), Idempotency-Key, uniqueness — and the answers
// are theirs.
func (s *Service) submitDeclared(c *fiber.Ctx) error {
	id := c.Params("form")
	switch id {
	case "contact":
		return s.submitContact(c)
	case "waitlist":
		return s.submitWaitlist(c)
	}
	const ep = declaredEndpoint
	bufs := handlerBuffers.Get().(*buffers)
	defer handlerBuffers.Put(bufs)
	sub, ok := s.admit(c, ep, bufs.body)
	if !ok {
		return nil
	}
	form := sub.live.cfg.Forms.FindDeclared(id)
	if form == nil {
		s.refuseDeclared(c, refusedUnknownForm, "forms: refused with 404: no form of this id is declared (forms.declared)", "form", id)
		s.reply(c, ep, resultUnknownForm, fiber.StatusNotFound, bodyUnknownForm)
		return nil
	}
	c.Context().SetUserValue(declaredFormKey, form)
	sub.declared = form
	if sub.form != nil {
		sub.form.declared = form
	}
	if m := sub.live.formOrigins[form.ID]; m != nil && !m.allowed([]byte(sub.origin)) {
		s.refuseDeclared(c, refusedFormOrigin, "forms: refused with 403: the form lists its origins, and not this one; add it to the form's origins",
			"form", form.ID, "origin", sub.origin, "allowed", form.Origins)
		c.Response().Header.Del(fiber.HeaderAccessControlAllowOrigin)
		s.reply(c, ep, resultForbidden, fiber.StatusForbidden, bodyError)
		if sub.streamed {
			finishUnread(c)
		}
		return nil
	}
	bf, body := sub.format, sub.body
	var uploaded []store.File
	if sub.streamed {
		rcv, fail := s.receiveFiles(c, sub.live.files, form, sub.format.boundary)
		if fail != nil {
			s.answerReceiveFailure(c, fail)
			return nil
		}
		bf, body, uploaded = bodyFormat{kind: kindURLEncoded}, rcv.text, rcv.files
		// The files stay only with a submission that is stored; any other answer (an invalid field,
		// the rate limit, a replay, a duplicate, the store down) removes them.
		defer func() {
			if uploaded != nil {
				s.removeFiles(sub.live.files, uploaded)
			}
		}()
	}
	d, x, honeypot, errs := decodeDeclaredFiles(form, bf, body, sub.wants(), uploaded)
	errs = sub.checkNext(x, errs)
	if honeypot {
		s.m.honeypot[ep].Inc()
		s.reply(c, ep, resultHoneypot, fiber.StatusCreated, bodyCreated)
		return nil
	}
	var unknown []string
	for name, code := range errs {
		if code == CodeUnknownField {
			unknown = append(unknown, name)
		}
	}
	if unknown != nil {
		slices.Sort(unknown)
		s.refuseDeclared(c, refusedUnknownField, "forms: refused with 400: fields the form does not declare; declare them, or set the form's additionalFields: keep",
			"form", form.ID, "fields", unknown)
	}
	key, ok := s.vet(c, ep, &sub, errs, x)
	if !ok {
		return nil
	}
	idem := store.Idempotency{Origin: sub.origin, Key: key}
	if key != "" {
		// Bound to the validated submission, as on the built-in forms.
		// The files are bound by their bytes (SHA-256) and names, not by their random keys.
		type boundFile struct{ Field, Name, SHA256 string }
		var bound []boundFile
		for _, f := range uploaded {
			bound = append(bound, boundFile{f.Field, f.Name, f.SHA256})
		}
		idem.Message, _ = json.Marshal(struct {
			F store.Values `json:"f"`
			A store.Values `json:"a,omitempty"`
			U []boundFile  `json:"u,omitempty"`
		}{d.fields, d.additional, bound})
	}
	limit, ok := s.gate(c, ep, &sub, x, idem)
	if !ok {
		return nil
	}
	rec, err := store.AppendFormRecord(bufs.record[:0], store.FormRecord{Form: form.ID, Fields: d.fields, Additional: d.additional,
		ReceivedAt: s.now().UTC(), Origin: sub.origin, Files: uploaded})
	if err != nil { // values are strings, bools, numbers and lists of strings: always encodable
		s.replyStored(c, ep, store.Result{}, err)
		return nil
	}
	bufs.record = rec
	ctx, cancel := context.WithTimeout(c.UserContext(), s.storeTimeout)
	defer cancel()
	verdict := s.judge(ctx, sub.live, form, declaredSpam(form, d.fields, d.additional, sub.client))
	add := store.Submission{Form: form.ID, Client: sub.client, Limit: limit, Idem: idem, Record: rec, Unique: d.unique, Verdict: verdict}
	if form.DoubleOptIn != nil && d.unique != "" {
		// Kept pending until the address confirms it (D84); the answer is the same as without.
		o := s.optin.NewEntry(s.now(), form.DoubleOptIn)
		add.OptIn = &o
	}
	res, err := s.store.AddSubmission(ctx, add, sub.live.cfg.Forms.DurabilityOf(form))
	if err == nil && res.Outcome == store.Stored {
		uploaded = nil // kept: the record names them
	}
	s.replyStored(c, ep, res, err)
	return nil
}
