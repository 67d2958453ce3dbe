package forms

import (
	"github.com/gofiber/fiber/v2"

	"github.com/formsservice/formsservice/services/platform/refusal"
)

// Why the forms refuse a request (docs/architecture.md D2, and D23 for bot checks), as the refusals counter
// labels them. The answer keeps the contract's terse body; refuse explains it (services/platform/refusal).
const (
	refusedOriginMissing    refusal.Reason = "origin_missing"
	refusedOriginNotAllowed refusal.Reason = "origin_not_allowed"
	refusedBodyTooLarge     refusal.Reason = "body_too_large"
	refusedContentType      refusal.Reason = "content_type"
	refusedContentEncoding  refusal.Reason = "content_encoding"
	// A site's bot check (docs/architecture.md D23): no token, a token the provider refused, a check that
	// could not be made (502).
	refusedBotMissing     refusal.Reason = "bot_check_missing"
	refusedBotFailed      refusal.Reason = "bot_check_failed"
	refusedBotUnavailable refusal.Reason = "bot_check_unavailable"
	// A declared form (docs/forms.md "Your own forms"): no form of that id (404), a form that does not
	// list the posting origin (403), a field the form does not declare (400).
	refusedUnknownForm  refusal.Reason = "unknown_form"
	refusedFormOrigin   refusal.Reason = "form_origin_not_listed"
	refusedUnknownField refusal.Reason = "unknown_field"
)

var refusalReasons = []refusal.Reason{refusedOriginMissing, refusedOriginNotAllowed, refusedBodyTooLarge, refusedContentType, refusedContentEncoding,
	refusedBotMissing, refusedBotFailed, refusedBotUnavailable, refusedUnknownForm, refusedFormOrigin, refusedUnknownField}

// refuseDeclared explains a declared form's refusal: which form, and what to change.
func (s *Service) refuseDeclared(c *fiber.Ctx, reason refusal.Reason, msg string, args ...any) {
	if !s.refusals.Explains(c.UserContext()) {
		s.refusals.Count(reason)
		return
	}
	s.refusals.Refused(c.UserContext(), reason, msg, append([]any{"method", c.Method(), "path", c.Path()}, args...)...)
}

// refuseOrigin explains a 403 for the Origin sent: what came, and which origins are allowed.
func (s *Service) refuseOrigin(c *fiber.Ctx, lc *liveConfig, origin []byte) {
	reason := refusedOriginNotAllowed
	if len(origin) == 0 {
		reason = refusedOriginMissing
	}
	if !s.refusals.Explains(c.UserContext()) {
		s.refusals.Count(reason)
		return
	}
	msg := "forms: refused with 403: the request's Origin is not an allowed origin; add it to allowedOrigins (scheme://host[:port])"
	if len(origin) == 0 {
		msg = "forms: refused with 403: the request has no Origin header (a browser sends one; from curl, add -H 'Origin: ...')"
	}
	s.refusals.Refused(c.UserContext(), reason, msg, "method", c.Method(), "path", c.Path(),
		"origin", string(origin), "allowed", lc.cfg.AllowedOrigins)
}

// refuse explains a 413 (the body limit) or a 415 (what was sent instead of JSON).
func (s *Service) refuse(c *fiber.Ctx, reason refusal.Reason) {
	if !s.refusals.Explains(c.UserContext()) {
		s.refusals.Count(reason)
		return
	}
	h := &c.Request().Header
	args := []any{"method", c.Method(), "path", c.Path()}
	var msg string
	switch reason {
	case refusedBodyTooLarge:
		msg = "forms: refused with 413: the body is larger than the limit"
		args = append(args, "content_length", h.ContentLength(), "limit_bytes", MaxBodyBytes)
	case refusedContentEncoding:
		msg = "forms: refused with 415: the body must not be compressed"
		args = append(args, "content_encoding", string(h.Peek(fiber.HeaderContentEncoding)), "allowed", "identity (no Content-Encoding)")
	default:
		msg = "forms: refused with 415: the body must be JSON or a form post, in UTF-8"
		args = append(args, "content_type", string(h.ContentType()), "allowed",
			"application/json, application/x-www-form-urlencoded or multipart/form-data (charset, if given, utf-8)")
	}
	s.refusals.Refused(c.UserContext(), reason, msg, args...)
}

// refuseBot explains a bot check that did not pass: which provider the origin's site asks for, under
// which field, and what the provider said (err: the refusal's codes, or why it could not be asked). The
// answer stays the contract's (400 with the field's code, or 502).
func (s *Service) refuseBot(c *fiber.Ctx, sub *admitted, reason refusal.Reason, err error) {
	if !s.refusals.Explains(c.UserContext()) {
		s.refusals.Count(reason)
		return
	}
	g := sub.botCheck()
	args := []any{"method", c.Method(), "path", c.Path(), "origin", sub.origin,
		"provider", g.cfg.Provider, "field", g.field()}
	if sub.declared != nil && sub.live.formBots[sub.declared.ID] != nil {
		args = append(args, "form", sub.declared.ID) // the form's own check, not the site's
	}
	var msg string
	switch reason {
	case refusedBotMissing:
		msg = "forms: refused with 400: this origin's site asks for a bot check and the submission has no token; put the provider's widget inside the form (or send its token under the field named)"
	case refusedBotFailed:
		msg = "forms: refused with 400: the bot-check provider did not accept the token (expired, used twice, for another site key, or forged)"
		args = append(args, "provider_said", err.Error())
	default:
		msg = "forms: refused with 502: the bot check could not be made, so nothing was stored; check the site's secretFile and verifyURL"
		args = append(args, "err", err.Error())
	}
	s.refusals.Refused(c.UserContext(), reason, msg, args...)
}
