package main

import (
	"github.com/formsservice/formsservice/services/forms"
	"github.com/formsservice/formsservice/services/forms/delivery"

	"github.com/formsservice/formsservice/services/platform/server"
)

// buildForms constructs the forms service (POST /contact, POST /waitlist, the waitlist's confirmation
// pages, the delivery worker and the confirmation mailer). The dev server mails contact messages through
// deps.Mail (its outbox, without a relay) while forms.delivery names none.
func buildForms(d deps) (server.Service, error) {
	var dev *delivery.DevMail
	if d.Dev {
		dev = &delivery.DevMail{Sender: d.Mail, To: devTeamAddress}
	}
	return forms.New(forms.Options{
		Config:        d.Config,
		Redis:         d.Redis,
		Logger:        d.Logger.With("component", "forms"),
		Registerer:    d.Metrics.Registry,
		Mail:          d.Mail, // the waitlist's confirmation mails (the dev server's outbox in dev)
		EmbeddedStore: d.EmbeddedStore,
		DevMail:       dev,
		Dev:           d.Dev,
	})
}

// devTeamAddress receives the dev server's contact mail: the operating team of `make run`.
const devTeamAddress = "Operating team <team@formsservice.localhost>"
