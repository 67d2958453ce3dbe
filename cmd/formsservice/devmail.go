//go:build !formsonly

package main

import (
	"log/slog"

	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/mail"
	"github.com/formsservice/formsservice/services/platform/mail/devmail"
)

// mailSender is the transactional mail every service sends through (deps.Mail): the relay of the
// configuration in force (mail.smtp, else forms.delivery.smtp). The dev server adds its outbox, which
// takes the mail while no relay is configured and shows it at /dev/mail/ and in the log, so the demo
// works without a mail server; it returns the outbox for the dev server to mount.
func mailSender(cfg config.Source, dev bool, log *slog.Logger, publicURL string) (mail.Sender, *devmail.Outbox) {
	if !dev {
		return mail.Live(cfg, nil), nil
	}
	outbox := devmail.New(devmail.Options{Logger: log.With("component", "devmail"), BaseURL: publicURL})
	return mail.Live(cfg, outbox), outbox
}
