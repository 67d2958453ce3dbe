package delivery

import (
	"fmt"
	"os"
	"strings"

	"github.com/formsservice/formsservice/services/forms/notify"
	"github.com/formsservice/formsservice/services/platform/config"
	"github.com/formsservice/formsservice/services/platform/secretfile"
)

// targets are the senders for one configuration, rebuilt when the configuration changes so that
// a reloaded relay or webhook URL takes effect without a restart.
type targets struct {
	cfg     *config.Config
	senders []notify.Sender
}

// buildSenders makes the senders for d. It reads a webhook's urlFile, so that New can refuse to start
// on a missing or wrong file (it runs at start-up) and a reload picks up the file a new configuration
// names. dev, when set (the dev server), takes the contact mail when d names no relay.
func buildSenders(d config.Delivery, dev *DevMail) ([]notify.Sender, error) {
	var out []notify.Sender
	switch {
	case d.SMTP != nil:
		out = append(out, notify.NewSMTP(*d.SMTP))
	case dev != nil:
		out = append(out, notify.NewMail(dev.Sender, config.SMTP{To: []string{dev.To}, Subject: "[contact]"}))
	}
	if d.Webhook != nil {
		wh, err := buildWebhook(*d.Webhook, "forms.delivery.webhook")
		if err != nil {
			return nil, err
		}
		out = append(out, wh)
	}
	return out, nil
}

// buildWebhook makes the sender of webhook w (named at in errors), reading its files.
func buildWebhook(w config.Webhook, at string) (*notify.Webhook, error) {
	u, err := webhookURL(w, at)
	if err != nil {
		return nil, err
	}
	wh := notify.NewWebhook(u, nil).WithFormat(w.Format)
	for _, f := range []struct{ key, path string }{{"secretFile", w.SecretFile}, {"previousSecretFile", w.PreviousSecretFile}} {
		if f.path == "" {
			continue
		}
		b, err := os.ReadFile(f.path)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: cannot read the signing secret: %w", at, f.key, err)
		}
		if wh, err = wh.WithSecret(strings.TrimSpace(string(b))); err != nil {
			return nil, fmt.Errorf("%s.%s: %s: %w", at, f.key, f.path, err)
		}
	}
	return wh, nil
}

// webhookURL is the webhook's address: url, or the trimmed content of urlFile. Errors name the file,
// never its content, which is a secret.
func webhookURL(w config.Webhook, at string) (string, error) {
	if w.URLFile == "" {
		return w.URL, nil
	}
	u, err := secretfile.Read(w.URLFile)
	if err != nil {
		return "", fmt.Errorf("%s.urlFile: cannot read the webhook URL: %w", at, err)
	}
	if err := config.CheckWebhookURL(u); err != nil {
		return "", fmt.Errorf("%s.urlFile: the content of %s %w", at, w.URLFile, err)
	}
	return u, nil
}
