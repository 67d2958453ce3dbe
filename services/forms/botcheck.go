package forms

import (
	"errors"
	"net/url"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/formsservice/formsservice/services/forms/botcheck"
)

// checkBot verifies the submission's CAPTCHA token with the provider of its bot check — the declared
// form's own, else the posting site's (admitted.botCheck; docs/forms.md, "Bot checks"). It fails closed: no token is `<field>: required`, a token the provider refuses is
// `<field>: must_be_true` (the check must pass), both 400; a provider that cannot be asked (unreachable,
// slow, a 5xx, a refused secret, an unreadable secret file) is 502, as a store that cannot be written.
// It returns false when the answer has been written.
func (s *Service) checkBot(c *fiber.Ctx, ep endpoint, sub *admitted, token string) bool {
	g := sub.botCheck()
	field := g.field()
	if g.err != nil {
		s.logBotError(g.err)
		s.refuseBot(c, sub, refusedBotUnavailable, g.err)
		s.reply(c, ep, resultBotUnavailable, fiber.StatusBadGateway, bodyError)
		return false
	}
	if token == "" {
		s.refuseBot(c, sub, refusedBotMissing, nil)
		s.replyInvalid(c, ep, resultBotRefused, Errors{field: CodeRequired})
		return false
	}
	remote := ""
	if sub.client.IsValid() {
		remote = sub.client.String()
	}
	host := ""
	if u, err := url.Parse(sub.origin); err == nil {
		host = u.Hostname() // the page the token must have been solved on
	}
	err := g.verifier.Verify(c.UserContext(), token, remote, host)
	switch {
	case err == nil:
		return true
	case errors.Is(err, botcheck.ErrRefused):
		s.refuseBot(c, sub, refusedBotFailed, err)
		s.replyInvalid(c, ep, resultBotRefused, Errors{field: CodeMustBeTrue})
	default:
		s.logBotError(err)
		s.refuseBot(c, sub, refusedBotUnavailable, err)
		s.reply(c, ep, resultBotUnavailable, fiber.StatusBadGateway, bodyError)
	}
	return false
}

// logBotError logs a bot check that could not be made at most once a second, like store errors.
func (s *Service) logBotError(err error) {
	now := time.Now().UnixNano()
	last := s.lastBotLog.Load()
	if now-last < int64(time.Second) || !s.lastBotLog.CompareAndSwap(last, now) {
		return
	}
	s.log.Warn("a bot check could not be made; answering 502", "err", err)
}
