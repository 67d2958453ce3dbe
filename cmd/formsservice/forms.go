package main

import (
	"github.com/formsservice/formsservice/services/forms"

	"github.com/formsservice/formsservice/services/platform/server"
)

// buildForms constructs the forms service (POST /contact, POST /waitlist and the delivery worker).
func buildForms(d deps) (server.Service, error) {
	return forms.New(forms.Options{
		Config:     d.Config,
		Redis:      d.Redis,
		Logger:     d.Logger.With("component", "forms"),
		Registerer: d.Metrics.Registry,
		Dev:        d.Dev,
	})
}
