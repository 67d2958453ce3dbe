package forms

import (
	"github.com/formsservice/formsservice/services/forms/optin"
	"github.com/formsservice/formsservice/services/platform/server"
)

// linkBodyLimit bounds the body of the link pages' POSTs: RFC 8058's is "List-Unsubscribe=One-Click".
const linkBodyLimit = 1024

// Routes declares the whole surface of the forms service, at the paths the ingress sends to it. Both
// submissions read their own body (StreamedBody): through the 16 KB limit (MaxBodyBytes), and only after the
// origin check, so that a foreign page gets its 403 without the server reading its upload first.
// Every route is counted in formsservice_http_requests_total{service="forms",route=...}; the forms' own
// metrics are in metrics.go.
func (s *Service) Routes() []server.Route {
	return []server.Route{
		server.Post("/contact", s.submitContact).StreamedBody(MaxBodyBytes),
		server.Preflight("/contact", s.preflight),
		server.Post("/waitlist", s.submitWaitlist).StreamedBody(MaxBodyBytes),
		server.Preflight("/waitlist", s.preflight),
		// The declared forms (forms.declared), and the built-in ones under their ids.
		server.Post("/f/:form", s.submitDeclared).StreamedBody(MaxBodyBytes),
		server.Preflight("/f/:form", s.preflight),
		// A declared form's file, through the signed link its mails and webhooks carry (download.go).
		server.Get(DownloadPath, s.downloadFile),
		// The double opt-in's links (package optin): a page with a button, and the POST that acts (also a
		// mail client's RFC 8058 one-click unsubscribe).
		server.Get(optin.ConfirmPath, s.optin.ConfirmPage),
		server.Post(optin.ConfirmPath, s.optin.Confirm).Limit(linkBodyLimit),
		server.Get(optin.UnsubscribePath, s.optin.UnsubscribePage),
		server.Post(optin.UnsubscribePath, s.optin.Unsubscribe).Limit(linkBodyLimit),
		// A declared form's double opt-in links (forms.declared[].doubleOptIn), the same pages for its
		// pending submissions.
		server.Get(optin.FormConfirmPath, s.optin.FormConfirmPage),
		server.Post(optin.FormConfirmPath, s.optin.FormConfirm).Limit(linkBodyLimit),
		server.Get(optin.FormUnsubscribePath, s.optin.FormUnsubscribePage),
		server.Post(optin.FormUnsubscribePath, s.optin.FormUnsubscribe).Limit(linkBodyLimit),
	}
}
