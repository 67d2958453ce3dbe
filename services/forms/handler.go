package forms

import (
	"context"
	"encoding/json"
	"net/netip"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/clientip"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/email"
)

// Answers with a fixed body are encoded once.
var (
	bodyCreated     = []byte(`{"status":"created"}`)
	bodyDuplicate   = []byte(`{"status":"duplicate"}`)
	bodyError       = []byte(`{"status":"error"}`)
	bodyKeyReused   = []byte(`{"status":"error","error":"idempotency_key_reused"}`)
	bodyKeyInFlight = []byte(`{"status":"error","error":"idempotency_key_in_flight"}`)
)

// IdempotencyKeyHeader lets a client retry POST /contact and /waitlist safely for 24 hours. A key
// belongs to the origin that sent it and to the submission it first came with: the same key with another
// one is answered 422. It is an RFC 8941 string (parseIdempotencyKey).
const IdempotencyKeyHeader = "Idempotency-Key"

// IdempotentReplayedHeader marks an answer that repeats a key's first answer (nothing was stored anew).
const IdempotentReplayedHeader = "Idempotent-Replayed"

// exposedHeaders are the answer headers a page on an allowed origin may read.
const exposedHeaders = fiber.HeaderRetryAfter + ", " + IdempotentReplayedHeader

// MaxIdempotencyKey bounds the header; a UUID is 36 characters.
const MaxIdempotencyKey = 255

// waitlistRecord and contactRecord are what is stored: the validated fields plus where and when.
func waitlistRecord(w WaitlistEntry, createdAt time.Time, origin string) store.WaitlistRecord {
	return store.WaitlistRecord{Email: w.Email, Name: w.Name, Association: w.Association, Role: w.Role, Size: w.Size,
		Consent: true, CreatedAt: createdAt, Origin: origin}
}

func contactRecord(c Contact, receivedAt time.Time, origin string) store.ContactRecord {
	return store.ContactRecord{Name: c.Name, Email: c.Email, Organization: c.Organization, Topic: c.Topic, Message: c.Message,
		ReceivedAt: receivedAt, Origin: origin}
}

// admitted is a request that passed the checks every forms endpoint shares.
type admitted struct {
	body   []byte
	format bodyFormat
	origin string
	client netip.Addr
	live   *liveConfig
	site   *site     // the origin's forms.sites entry, or nil
	form   *formPost // a plain HTML form post's answering context; nil for JSON
	// declared is the declared form posted to (/f/<id>); nil for the built-in forms.
	declared *config.DeclaredForm
	// streamed is a multipart body for a form with file fields, left unread for receiveFiles (body is nil).
	streamed bool
}

// admit runs the shared checks in the order docs/architecture.md (D2) fixes — origin (403), size (413), content type
// (415) — and reads the body. When it returns false the answer has been written.
func (s *Service) admit(c *fiber.Ctx, ep endpoint, buf []byte) (admitted, bool) {
	lc := s.live()
	h := &c.Response().Header
	h.Add(fiber.HeaderVary, fiber.HeaderOrigin)
	origin := c.Request().Header.Peek(fiber.HeaderOrigin)
	if !lc.origins.allowed(origin) {
		s.refuseOrigin(c, lc, origin)
		s.reply(c, ep, resultForbidden, fiber.StatusForbidden, bodyError)
		finishUnread(c)
		return admitted{}, false
	}
	h.SetBytesV(fiber.HeaderAccessControlAllowOrigin, origin)
	h.Set(fiber.HeaderAccessControlExposeHeaders, exposedHeaders)

	var body []byte
	var err error
	streamed := false
	if form := filesForm(c, ep, lc); form != nil {
		// Files are streamed to the bucket part by part (upload.go), within the form's limits.
		streamed = true
		c.Context().SetUserValue(declaredFormKey, form) // its 413 page says its limits
		if cl := c.Request().Header.ContentLength(); cl > 0 && int64(cl) > form.FileBytes()+MaxBodyBytes+uploadFraming {
			err = errTooLarge
		}
	} else {
		body, err = readBody(c, buf)
	}
	switch err {
	case nil:
	case errTooLarge:
		s.refuse(c, refusedBodyTooLarge)
		s.reply(c, ep, resultTooLarge, fiber.StatusRequestEntityTooLarge, bodyError)
		finishUnread(c)
		return admitted{}, false
	default:
		c.Context().SetConnectionClose()
		s.replyInvalid(c, ep, resultBadRequest, Errors{BodyField: CodeInvalidJSON})
		return admitted{}, false
	}
	format := formatOf(c.Request().Header.ContentType())
	if format.kind == kindUnsupported || !identityEncoding(c.Request().Header.Peek(fiber.HeaderContentEncoding)) {
		if format.kind == kindUnsupported {
			s.refuse(c, refusedContentType)
		} else {
			s.refuse(c, refusedContentEncoding)
		}
		s.reply(c, ep, resultUnsupported, fiber.StatusUnsupportedMediaType, bodyError)
		return admitted{}, false
	}
	sub := admitted{
		streamed: streamed,
		body:     body,
		format:   format,
		origin:   string(origin),
		client:   clientip.Addr(c, lc.proxies),
		live:     lc,
		site:     lc.sites.find(string(origin)),
	}
	if format.isForm() {
		sub.form = &formPost{origin: sub.origin, site: sub.site}
		c.Context().SetUserValue(formPostKey, sub.form)
	}
	return sub, true
}

// wants says which extra members the submission's body is read for (validate.go, extras).
func (sub *admitted) wants() wantExtras {
	w := wantExtras{next: sub.form != nil}
	if g := sub.botCheck(); g != nil {
		w.tokenField = g.field()
	}
	return w
}

// botCheck is the submission's bot check: a declared form's own (forms.declared[].botCheck), else the
// posting site's; nil when neither asks for one.
func (sub *admitted) botCheck() *botGate {
	if sub.declared != nil {
		if g := sub.live.formBots[sub.declared.ID]; g != nil {
			return g
		}
	}
	return sub.site.botCheck()
}

// checkNext takes a form post's _next into its answering context, or adds the error that refuses it.
func (sub *admitted) checkNext(x extras, errs Errors) Errors {
	if sub.form == nil || x.next == "" {
		return errs
	}
	to, ok := nextURL(sub.origin, x.next)
	if !ok {
		if errs == nil {
			errs = Errors{}
		}
		errs[NextField] = CodeInvalidChoice
		return errs
	}
	sub.form.next = to
	return errs
}

func (s *Service) submitWaitlist(c *fiber.Ctx) error {
	const ep = waitlistEndpoint
	bufs := handlerBuffers.Get().(*buffers)
	defer handlerBuffers.Put(bufs)
	sub, ok := s.admit(c, ep, bufs.body)
	if !ok {
		return nil
	}
	entry, x, honeypot, errs := decodeWaitlist(sub.format, sub.body, sub.wants())
	errs = sub.checkNext(x, errs)
	if honeypot {
		s.m.honeypot[ep].Inc()
		s.reply(c, ep, resultHoneypot, fiber.StatusCreated, bodyCreated)
		return nil
	}
	key, ok := s.vet(c, ep, &sub, errs, x)
	if !ok {
		return nil
	}
	idem := store.Idempotency{Origin: sub.origin, Key: key}
	if key != "" {
		idem.Message, _ = json.Marshal(entry) // bound to the validated entry, as on /contact
	}
	limit, ok := s.gate(c, ep, &sub, x, idem)
	if !ok {
		return nil
	}
	canonical, _ := email.Canonical(entry.Email)
	now := s.now().UTC()
	rec := waitlistRecord(entry, now, sub.origin)
	add := store.WaitlistSubmission{Client: sub.client, Limit: limit, Canonical: canonical, Idem: idem}
	if sub.site != nil {
		rec.ConsentVersion = sub.site.ConsentVersion
	}
	if d := sub.live.cfg.Forms.DoubleOptIn; d != nil {
		o := s.optin.NewEntry(now, d)
		rec.ID, rec.State, add.OptIn = o.ID, store.StatePending, &o
	}
	bufs.record = store.AppendWaitlistRecord(bufs.record[:0], rec)
	add.Record = bufs.record
	ctx, cancel := context.WithTimeout(c.UserContext(), s.storeTimeout)
	defer cancel()
	res, err := s.store.AddWaitlist(ctx, add, sub.live.cfg.Forms.Durability)
	s.replyStored(c, ep, res, err)
	return nil
}

func (s *Service) submitContact(c *fiber.Ctx) error {
	const ep = contactEndpoint
	bufs := handlerBuffers.Get().(*buffers)
	defer handlerBuffers.Put(bufs)
	sub, ok := s.admit(c, ep, bufs.body)
	if !ok {
		return nil
	}
	msg, x, honeypot, errs := decodeContact(sub.format, sub.body, sub.wants())
	errs = sub.checkNext(x, errs)
	if honeypot {
		s.m.honeypot[ep].Inc()
		s.reply(c, ep, resultHoneypot, fiber.StatusCreated, bodyCreated)
		return nil
	}
	key, ok := s.vet(c, ep, &sub, errs, x)
	if !ok {
		return nil
	}
	idem := store.Idempotency{Origin: sub.origin, Key: key}
	if key != "" {
		// The key is bound to the validated message, so a retry that encodes it differently (white
		// space, field order, an ignored field) is still the same request.
		idem.Message, _ = json.Marshal(msg) // strings always encode
	}
	limit, ok := s.gate(c, ep, &sub, x, idem)
	if !ok {
		return nil
	}
	bufs.record = store.AppendContactRecord(bufs.record[:0], contactRecord(msg, s.now().UTC(), sub.origin))
	ctx, cancel := context.WithTimeout(c.UserContext(), s.storeTimeout)
	defer cancel()
	verdict := s.judge(ctx, sub.live, nil, contactSpam(msg, sub.client))
	res, err := s.store.AddContactJudged(ctx, sub.client, limit, idem, bufs.record, verdict, sub.live.cfg.Forms.Durability)
	s.replyStored(c, ep, res, err)
	return nil
}

// vet checks the Idempotency-Key (the header, else a form's field), answered with the field errors
// (400). It returns the key; false when the answer has been written. The bot check comes later (gate).
func (s *Service) vet(c *fiber.Ctx, ep endpoint, sub *admitted, errs Errors, x extras) (string, bool) {
	header := c.Request().Header.Peek(IdempotencyKeyHeader)
	key, code := parseIdempotencyKey(header)
	if len(header) == 0 && x.idemKey != "" {
		// A plain form's hidden field, read as the header; a bad one is an error of that field.
		var fieldCode string
		if key, fieldCode = parseIdempotencyKey([]byte(x.idemKey)); fieldCode != "" {
			if errs == nil {
				errs = Errors{}
			}
			errs[IdempotencyKeyField] = fieldCode
		}
	}
	if code != "" || errs != nil {
		// A bad key is the request's fault, not a field's: it is reported under "headers", and with the
		// field errors when there are some, so that a client fixes both at once.
		var headerErrs Errors
		if code != "" {
			headerErrs = Errors{IdempotencyKeyHeader: code}
		}
		s.replyInvalidWith(c, ep, resultInvalid, errs, headerErrs)
		return "", false
	}
	return key, true
}

// gate runs the submission's bot check (a declared form's own, else its site's) where D2's order puts
// it: after the rate limit (so that a client past it asks the provider nothing) and once a known
// Idempotency-Key is ruled out (its replay, 422 or 409 comes from the store, and spends no token). It returns the rate limit the store still
// has to count (0 once counted here); false when the answer has been written.
func (s *Service) gate(c *fiber.Ctx, ep endpoint, sub *admitted, x extras, idem store.Idempotency) (int, bool) {
	if sub.botCheck() == nil {
		return sub.live.rateLimit, true
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), s.storeTimeout)
	var g store.Gate
	var err error
	if sub.declared != nil {
		g, err = s.store.BeforeBotCheckForm(ctx, sub.declared.ID, sub.client, sub.live.rateLimit, idem, sub.live.cfg.Forms.DurabilityOf(sub.declared))
	} else {
		g, err = s.store.BeforeBotCheck(ctx, ep == waitlistEndpoint, sub.client, sub.live.rateLimit, idem, sub.live.cfg.Forms.Durability)
	}
	cancel()
	switch {
	case err != nil:
		s.replyStored(c, ep, store.Result{}, err)
		return 0, false
	case g.Limited != nil:
		s.replyStored(c, ep, *g.Limited, nil)
		return 0, false
	case !g.Seen && !s.checkBot(c, ep, sub, x.token):
		return 0, false
	}
	return 0, true
}

// checkIdempotencyKey returns an error code for a header that cannot be a key: longer than 255 bytes,
// or anything but visible ASCII. An absent or empty header means "no key".
func checkIdempotencyKey(k string) string {
	if len(k) > MaxIdempotencyKey {
		return CodeTooLong
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return CodeInvalidType
		}
	}
	return ""
}

// replyStored answers what the store decided, or 502 when it could not decide (err).
func (s *Service) replyStored(c *fiber.Ctx, ep endpoint, res store.Result, err error) {
	if err != nil {
		s.logStoreError(ep, err)
		s.m.storeErrors[classifyStoreError(err)].Inc()
		s.reply(c, ep, resultStoreError, fiber.StatusBadGateway, bodyError)
		return
	}
	switch res.Outcome {
	case store.Duplicate:
		s.reply(c, ep, resultDuplicate, fiber.StatusOK, bodyDuplicate)
	case store.Replayed:
		// The draft's marker of an answer that repeats the first one.
		c.Response().Header.Set(IdempotentReplayedHeader, "true")
		s.reply(c, ep, resultReplayed, fiber.StatusCreated, bodyCreated)
	case store.ReplayedDuplicate:
		c.Response().Header.Set(IdempotentReplayedHeader, "true")
		s.reply(c, ep, resultReplayed, fiber.StatusOK, bodyDuplicate)
	case store.KeyReused:
		// The IETF Idempotency-Key draft's answer to a key reused with another payload.
		s.reply(c, ep, resultIdempotencyConflict, fiber.StatusUnprocessableEntity, bodyKeyReused)
	case store.InFlight:
		// The draft's answer to a retry while the first request is still being processed.
		c.Response().Header.Set(fiber.HeaderRetryAfter, "1")
		s.reply(c, ep, resultIdempotencyConflict, fiber.StatusConflict, bodyKeyInFlight)
	case store.RateLimited:
		secs := int((res.RetryAfter + time.Second - 1) / time.Second)
		c.Response().Header.Set(fiber.HeaderRetryAfter, strconv.Itoa(max(secs, 1)))
		s.reply(c, ep, resultRateLimited, fiber.StatusTooManyRequests, bodyError)
	default:
		s.reply(c, ep, resultCreated, fiber.StatusCreated, bodyCreated)
	}
}

func (s *Service) reply(c *fiber.Ctx, ep endpoint, r result, status int, body []byte) {
	s.count(c, ep, r)
	if p := s.formPostOf(c); p != nil {
		s.replyForm(c, ep, p, r, status, nil)
		return
	}
	c.Status(status)
	c.Response().Header.SetContentType(fiber.MIMEApplicationJSON)
	c.Response().SetBodyRaw(body)
}

// count counts a submission's result, and a declared form's again under its id.
func (s *Service) count(c *fiber.Ctx, ep endpoint, r result) {
	s.m.submissions[ep][r].Inc()
	if ep == declaredEndpoint {
		if form, ok := c.Context().UserValue(declaredFormKey).(*config.DeclaredForm); ok {
			s.m.declaredCounter(form.ID, r).Inc()
		}
	}
}

type invalidBody struct {
	Status string `json:"status"`
	Errors Errors `json:"errors"`
	// Headers holds errors of request headers (Idempotency-Key), which are not fields of the body.
	Headers Errors `json:"headers,omitempty"`
}

func (s *Service) replyInvalid(c *fiber.Ctx, ep endpoint, r result, errs Errors) {
	s.replyInvalidWith(c, ep, r, errs, nil)
}

// replyInvalidWith answers 400 with field errors (errs, possibly none) and header errors.
func (s *Service) replyInvalidWith(c *fiber.Ctx, ep endpoint, r result, errs, headers Errors) {
	if errs == nil {
		errs = Errors{}
	}
	if p := s.formPostOf(c); p != nil {
		s.count(c, ep, r)
		s.replyForm(c, ep, p, r, fiber.StatusBadRequest, errs)
		return
	}
	b, _ := json.Marshal(invalidBody{Status: "invalid", Errors: errs, Headers: headers}) // strings always encode
	s.reply(c, ep, r, fiber.StatusBadRequest, b)
}

// preflight answers the browser's CORS preflight for a JSON POST: allowed origins get 204 with the
// origin itself (never "*"), refused ones 403.
func (s *Service) preflight(c *fiber.Ctx) error {
	lc := s.live()
	h := &c.Response().Header
	h.Add(fiber.HeaderVary, fiber.HeaderOrigin)
	origin := c.Request().Header.Peek(fiber.HeaderOrigin)
	if !lc.origins.allowed(origin) {
		s.refuseOrigin(c, lc, origin)
		c.Status(fiber.StatusForbidden)
		h.SetContentType(fiber.MIMEApplicationJSON)
		c.Response().SetBodyRaw(bodyError)
		return nil
	}
	h.SetBytesV(fiber.HeaderAccessControlAllowOrigin, origin)
	h.Set(fiber.HeaderAccessControlAllowMethods, fiber.MethodPost)
	h.Set(fiber.HeaderAccessControlAllowHeaders, "content-type, idempotency-key")
	h.Set(fiber.HeaderAccessControlMaxAge, "600")
	c.Status(fiber.StatusNoContent)
	return nil
}
