package forms

import (
	"github.com/gofiber/fiber/v2"

	"github.com/formsservice/formsservice/services/platform/refusal"
)

// Why the forms refuse a request before reading it (docs/architecture.md D2), as the refusals counter
// labels them. The answer keeps the contract's terse body; refuse explains it (services/platform/refusal).
const (
	refusedOriginMissing    refusal.Reason = "origin_missing"
	refusedOriginNotAllowed refusal.Reason = "origin_not_allowed"
	refusedBodyTooLarge     refusal.Reason = "body_too_large"
	refusedContentType      refusal.Reason = "content_type"
	refusedContentEncoding  refusal.Reason = "content_encoding"
)

var refusalReasons = []refusal.Reason{refusedOriginMissing, refusedOriginNotAllowed, refusedBodyTooLarge, refusedContentType, refusedContentEncoding}

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
		msg = "forms: refused with 415: the body must be JSON"
		args = append(args, "content_type", string(h.ContentType()), "allowed", "application/json (optionally ; charset=utf-8)")
	}
	s.refusals.Refused(c.UserContext(), reason, msg, args...)
}
