package forms

import (
	"strings"
	"testing"
	"time"

	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/forms/internal/formstest"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// The service publishes its declared forms in the store for the admin API (D63): at its start, and again
// when a reload declares others; never a recipient of their notifications.
func TestCatalog_PublishedAtStartAndOnReload(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	testwait.For(t, 10*time.Second, "the catalogue of the start", func() bool {
		c, ok, err := store.ReadCatalog(t.Context(), h.rdb)
		return err == nil && ok && len(c.Forms) == 0
	})
	cfg := formstest.Config()
	cfg.Forms.Declared = []config.DeclaredForm{{ID: "demo", Title: "Request a demo", Unique: "email",
		Notify: &config.FormNotify{MailTo: []string{"team@example.com"}},
		Fields: []config.FormField{{Name: "email", Label: "Work e-mail", Type: config.FieldEmail, Required: true}}}}
	cfg.Mail = config.Mail{From: "Forms <forms@example.com>", SMTP: &config.MailSMTP{Addr: "127.0.0.1:2525"}}
	h.src.Set(t, cfg) // a reload
	var c store.Catalog
	testwait.For(t, 10*time.Second, "the catalogue of the reload", func() bool {
		var ok bool
		c, ok, _ = store.ReadCatalog(t.Context(), h.rdb)
		return ok && len(c.Forms) == 1
	})
	f := c.Forms[0]
	if f.ID != "demo" || f.Title != "Request a demo" || f.Unique != "email" || !f.Notifies || f.Fields[0].Label != "Work e-mail" || c.PublishedAt.IsZero() {
		t.Fatalf("catalogue %+v", c)
	}
	raw := h.rdb.Get(t.Context(), "fs:{forms}:declared").Val()
	if strings.Contains(raw, "team@example.com") {
		t.Fatalf("a recipient in the catalogue: %s", raw)
	}
}
