package devmail

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
)

func (b *Outbox) serveList(c *fiber.Ctx) error {
	if c.Path() == "/dev/mail" { // routing is not strict; the page's links are absolute anyway
		return c.Redirect("/dev/mail/", fiber.StatusFound)
	}
	return b.render(c, "list", struct {
		Max   int
		Mails []Mail
	}{b.o.Max, b.List()})
}

func (b *Outbox) serveMail(c *fiber.Ctx) error {
	m, ok := b.lookup(c)
	if !ok {
		return fiber.ErrNotFound
	}
	return b.render(c, "mail", struct {
		Mail
		TextParts []textPart
	}{m, splitLinks(m.Text)})
}

// serveHTMLPart answers the mail's HTML part for the frame on the mail's page. It is the mail's own
// markup, so it gets its own, narrower policy: no script, no form, its inline styles and images, in a
// sandbox; only the dev mail page may frame it. <base target="_top"> makes a click on a link open in
// the window, not in the frame (our pages refuse to be framed).
func (b *Outbox) serveHTMLPart(c *fiber.Ctx) error {
	m, ok := b.lookup(c)
	if !ok || m.HTML == "" {
		return fiber.ErrNotFound
	}
	c.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src https: data:; "+
		"frame-ancestors 'self'; base-uri 'self'; form-action 'none'; "+
		"sandbox allow-popups allow-popups-to-escape-sandbox allow-top-navigation-by-user-activation")
	c.Set("X-Frame-Options", "SAMEORIGIN")
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("Referrer-Policy", "no-referrer")
	c.Set("Cache-Control", "no-store")
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.SendString(`<base target="_top">` + m.HTML)
}

func (b *Outbox) serveRaw(c *fiber.Ctx) error {
	m, ok := b.lookup(c)
	if !ok {
		return fiber.ErrNotFound
	}
	b.headers(c)
	c.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
	return c.Send(m.Raw)
}

func (b *Outbox) lookup(c *fiber.Ctx) (Mail, bool) {
	seq, err := strconv.Atoi(c.Params("seq"))
	if err != nil || seq < 1 || strings.HasPrefix(c.Params("seq"), "+") {
		return Mail{}, false
	}
	return b.Get(seq)
}

func (b *Outbox) render(c *fiber.Ctx, name string, data any) error {
	var buf bytes.Buffer
	if err := b.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		return err // fixed templates and plain data: a programming error, answered 500
	}
	b.headers(c)
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	return c.Send(buf.Bytes())
}

// headers: the policy of the hosted sign-in page — no script at all, the one inline stylesheet by its
// hash — plus the mail's frame from this origin.
func (b *Outbox) headers(c *fiber.Ctx) {
	c.Set("Content-Security-Policy", "default-src 'none'; style-src "+b.style+"; img-src 'self' data:; frame-src 'self'; "+
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	c.Set("X-Frame-Options", "DENY")
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("Referrer-Policy", "no-referrer")
	c.Set("Cache-Control", "no-store")
}
