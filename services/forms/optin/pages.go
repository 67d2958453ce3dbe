package optin

import (
	"github.com/gofiber/fiber/v2"

	"github.com/formsservice/formsservice/services/forms/page"
	"github.com/formsservice/formsservice/services/forms/store"
)

// The pages behind the links. A GET only shows a button: mail scanners and link previews open every
// link in a mail, and must not confirm or unsubscribe anyone. The POST acts; it carries the link's
// parameters in its URL, as the RFC 8058 one-click POST of a mail client does, so one handler serves
// both. No origin check: the signed link is the credential, and a page that knows it may as well post it.

// ConfirmPage answers GET /waitlist/confirm.
func (p *OptIn) ConfirmPage(c *fiber.Ctx) error {
	sg, ok := p.linkSigner(c)
	if !ok {
		return nil
	}
	switch sg.checkConfirm(scope{}, c.Query("e"), c.Query("x"), c.Query("s"), p.o.Now()) {
	case linkForged:
		return p.answer(c, fiber.StatusBadRequest, "confirm", "forged", forgedPage)
	case linkExpired:
		return p.answer(c, fiber.StatusGone, "confirm", "expired", expiredPage)
	}
	return write(c, fiber.StatusOK, page.Message{Title: "Confirm your sign-up",
		Text:   []string{"Press the button to confirm that you want to be on the waitlist."},
		Action: string(c.Request().URI().RequestURI()), Button: "Confirm my sign-up"})
}

// Confirm answers POST /waitlist/confirm.
func (p *OptIn) Confirm(c *fiber.Ctx) error {
	sg, ok := p.linkSigner(c)
	if !ok {
		return nil
	}
	id := c.Query("e")
	switch sg.checkConfirm(scope{}, id, c.Query("x"), c.Query("s"), p.o.Now()) {
	case linkForged:
		return p.answer(c, fiber.StatusBadRequest, "confirm", "forged", forgedPage)
	case linkExpired:
		return p.answer(c, fiber.StatusGone, "confirm", "expired", expiredPage)
	}
	res, err := store.ConfirmWaitlist(c.UserContext(), p.o.Redis, id, p.o.Now())
	if err != nil {
		p.logError("confirming a sign-up", err)
		return p.answer(c, fiber.StatusBadGateway, "confirm", "error", unavailablePage)
	}
	switch res {
	case store.LinkDone:
		return p.answer(c, fiber.StatusOK, "confirm", "done", page.Message{Title: "You are on the waitlist",
			Text: []string{"Your sign-up is confirmed. Thank you."}})
	case store.LinkAlready:
		return p.answer(c, fiber.StatusOK, "confirm", "already", page.Message{Title: "Already confirmed",
			Text: []string{"This sign-up was confirmed before; there is nothing more to do."}})
	case store.LinkRefused:
		return p.answer(c, fiber.StatusGone, "confirm", "refused", page.Message{Title: "This link is no longer valid",
			Text: []string{"The address was unsubscribed after this mail was sent. To join again, sign up again."}})
	}
	return p.answer(c, fiber.StatusGone, "confirm", "gone", page.Message{Title: "This sign-up is no longer there",
		Text: []string{"It was not confirmed in time, or it was erased. To join the waitlist, sign up again."}})
}

// UnsubscribePage answers GET /waitlist/unsubscribe.
func (p *OptIn) UnsubscribePage(c *fiber.Ctx) error {
	sg, ok := p.linkSigner(c)
	if !ok {
		return nil
	}
	if !sg.checkUnsubscribe(scope{}, c.Query("e"), c.Query("s")) {
		return p.answer(c, fiber.StatusBadRequest, "unsubscribe", "forged", forgedPage)
	}
	return write(c, fiber.StatusOK, page.Message{Title: "Unsubscribe",
		Text:   []string{"Press the button to take this address off the waitlist. You will get no more mail about it."},
		Action: string(c.Request().URI().RequestURI()), Button: "Unsubscribe"})
}

// Unsubscribe answers POST /waitlist/unsubscribe: the page's button, and a mail client's RFC 8058
// one-click POST (body List-Unsubscribe=One-Click, which needs no reading: the URL says it all).
func (p *OptIn) Unsubscribe(c *fiber.Ctx) error {
	sg, ok := p.linkSigner(c)
	if !ok {
		return nil
	}
	id := c.Query("e")
	if !sg.checkUnsubscribe(scope{}, id, c.Query("s")) {
		return p.answer(c, fiber.StatusBadRequest, "unsubscribe", "forged", forgedPage)
	}
	res, err := store.UnsubscribeWaitlist(c.UserContext(), p.o.Redis, id, p.o.Now())
	if err != nil {
		p.logError("unsubscribing", err)
		return p.answer(c, fiber.StatusBadGateway, "unsubscribe", "error", unavailablePage)
	}
	result := map[store.LinkOutcome]string{store.LinkDone: "done", store.LinkAlready: "already"}[res]
	if result == "" {
		result = "gone"
	}
	// Every outcome is a 200: whatever happened, this address gets no more mail from the waitlist.
	return p.answer(c, fiber.StatusOK, "unsubscribe", result, page.Message{Title: "You are unsubscribed",
		Text: []string{"This address gets no more mail about the waitlist."}})
}

var (
	forgedPage = page.Message{Title: "This link is not valid",
		Text: []string{"It may have been cut off when it was copied. Open it from the mail again, or sign up again."}}
	expiredPage = page.Message{Title: "This link has expired",
		Text: []string{"Confirmation links work for a limited time. To join the waitlist, sign up again."}}
	unavailablePage = page.Message{Title: "Please try again",
		Text: []string{"This could not be done just now. Please try again in a moment."}}
)

// linkSigner returns the signer, or answers 502 when the store cannot give the key.
func (p *OptIn) linkSigner(c *fiber.Ctx) (signer, bool) {
	sg, err := p.signer(c.UserContext())
	if err != nil {
		p.logError("reading the link key", err)
		_ = write(c, fiber.StatusBadGateway, unavailablePage)
		return signer{}, false
	}
	return sg, true
}

func (p *OptIn) answer(c *fiber.Ctx, status int, action, result string, m page.Message) error {
	p.m.links.WithLabelValues(action, result).Inc()
	return write(c, status, m)
}

func write(c *fiber.Ctx, status int, m page.Message) error {
	for _, h := range page.Headers() {
		c.Response().Header.Set(h[0], h[1])
	}
	c.Status(status)
	c.Response().SetBodyRaw(page.RenderMessage(m))
	return nil
}
