package main

import (
	"github.com/formsservice/formsservice/services/forms"

	"github.com/formsservice/formsservice/services/platform/server"
)

// buildForms constructs the forms service (POST /contact, POST /waitlist, the waitlist's confirmation
// pages, the delivery worker and the confirmation mailer).
func buildForms(d deps) (server.Service, error) {
	return forms.New(forms.Options{
		Config:     d.Config,
		Redis:      d.Redis,
		Logger:     d.Logger.With("component", "forms"),
		Registerer: d.Metrics.Registry,
		Mail:       d.Mail, // the waitlist's confirmation mails (the dev server's outbox in dev)
		Dev:        d.Dev,
	})
}
