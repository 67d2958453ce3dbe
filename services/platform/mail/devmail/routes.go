package devmail

import "github.com/formsservice/formsservice/services/platform/server"

// Routes declares the dev mail page (dev server only): the outbox, one mail, its HTML part (shown in a
// sandboxed frame of the mail's page) and its raw source.
func (b *Outbox) Routes() []server.Route {
	return []server.Route{
		server.Get("/dev/mail/", b.serveList),
		server.Get("/dev/mail/:seq", b.serveMail),
		server.Get("/dev/mail/:seq/html", b.serveHTMLPart),
		server.Get("/dev/mail/:seq/raw", b.serveRaw),
	}
}
