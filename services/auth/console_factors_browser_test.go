package auth_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/formsservice/formsservice/internal/testbrowser"
	"github.com/formsservice/formsservice/internal/testredis"
	"github.com/formsservice/formsservice/internal/tests3"
	"github.com/formsservice/formsservice/internal/testwait"
	"github.com/formsservice/formsservice/services/auth/audit"
	"github.com/formsservice/formsservice/services/auth/mfa"
	"github.com/formsservice/formsservice/services/forms/store"
	"github.com/formsservice/formsservice/services/platform/config"
)

// The console's views of an account's factors and of a submission's files (issue 36, D83), in headless
// Chromium against real redis-server, forms service and versitygw.

// An admin reading the console in German sees an account's authenticator app (set up when, recovery
// codes left) and passkeys (names, added, last used), removes a lost passkey and resets the second
// factor; both are in the audit trail as the admin's. Every state passes axe-core at 320 px, light and
// dark.
func TestConsole_InChromium_AnAccountsFactorsAndPasskeysInGerman(t *testing.T) {
	p, home := consoleProvider(t)
	adminID, err := p.svc.Users().ByEmail(context.Background(), "admin@example.com")
	if err != nil {
		t.Fatal(err)
	}
	id := p.user("ada@example.com", testPassword)
	factors := mfa.NewStore(p.rdb, mfa.Sealer{}, nil)
	key, err := factors.Pending(t.Context(), id, "Acme", "ada@example.com", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	code, _ := mfa.Code(key.Secret, time.Now())
	if _, res, err := factors.Confirm(t.Context(), id, code); err != nil || res != mfa.Accepted {
		t.Fatalf("enrolling an app: %v %v", res, err)
	}
	seedPasskey(t, p.rdb, id, "bGFwdG9w", "Work laptop", time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour))
	seedPasskey(t, p.rdb, id, "cGhvbmU", "Phone", time.Now().Add(-24*time.Hour), time.Time{})

	x := &person{t: t, p: p, ctx: testbrowser.New(t)}
	x.do("opening the console in German", acceptLanguage("de-DE,de;q=0.9"), chromedp.Navigate(home))
	x.waitShown("the console signed out", "#sign-in")
	x.do("sign in", chromedp.Click(chromedp.CSS("#sign-in")))
	x.signIn("admin@example.com", testPassword)
	x.waitShown("the overview", "#count-users")
	x.do("the account", chromedp.Evaluate[chromedp.Void](`location.hash = "#/users/`+id+`"`))
	x.waitShown("the account's passkeys", `#passkeys button[data-passkey="bGFwdG9w"]`)
	body := x.text("the account's page", "main")
	for _, want := range []string{"Zweiter Faktor und Passkeys", "Authenticator-App", "Eingerichtet am", "Verbleibende Wiederherstellungscodes", "10",
		"Work laptop", "Phone", "nie"} {
		if !strings.Contains(body, want) {
			t.Errorf("the account's page does not say %q:\n%s", want, body)
		}
	}
	if label := x.eval("the remove button's name", `document.querySelector('#passkeys button[data-passkey="bGFwdG9w"]').getAttribute('aria-label')`); label != "Den Passkey Work laptop entfernen" {
		t.Errorf("the remove button is named %q", label)
	}
	x.checkConsole("an account's factors, in German", "user-factors")

	x.do("remove the laptop's passkey", chromedp.Click(chromedp.CSS(`#passkeys button[data-passkey="bGFwdG9w"]`)))
	x.waitShown("the passkey removed", "#action-result .done")
	if done := x.text("the outcome", "#action-result"); done != "Der Passkey Work laptop wurde entfernt." {
		t.Errorf("after removing, the page says %q", done)
	}
	if n := x.count(`#passkeys tbody tr`); n != 1 {
		t.Errorf("%d passkeys listed after the removal, want 1", n)
	}
	x.checkConsole("a passkey removed", "")

	x.do("reset the second factor", chromedp.Click(chromedp.CSS("#reset-mfa")))
	testwait.For(t, 30*time.Second, "the page after the reset", func() bool { // the removal's outcome is on the page until then
		gone, ok := testbrowser.TryGet(x.ctx, chromedp.Evaluate[bool](`!document.getElementById("reset-mfa") && !!document.querySelector("#action-result .done")`))
		return ok && gone
	})
	if done := x.text("the outcome", "#action-result"); done != "Der zweite Faktor und seine Wiederherstellungscodes wurden entfernt." {
		t.Errorf("after the reset, the page says %q", done)
	}
	if sf := x.text("the second factor", "#second-factor"); !strings.Contains(sf, "Keine") {
		t.Errorf("after the reset the second factor reads %q", sf)
	}
	x.checkConsole("a second factor reset", "")

	var kinds []string
	for _, e := range trail(t, p) {
		if e.Actor == audit.ActorAdmin && e.User == id {
			kinds = append(kinds, string(e.Kind)+" "+e.Detail[audit.DetailActorSub]+" "+e.Client)
		}
	}
	want := []string{"passkey.removed " + adminID.ID + " formsservice-console", "user.mfa_reset " + adminID.ID + " formsservice-console"}
	if strings.Join(kinds, "|") != strings.Join(want, "|") {
		t.Errorf("the audit trail: %q, want %q", kinds, want)
	}
}

// An admin opens a job application posted with a CV and downloads the CV from the submission's page:
// the console asks the admin API for a one-time link and the browser saves what the forms service
// streams from the bucket. The auth service has no link key.
func TestConsole_InChromium_DownloadsASubmissionsFile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs versitygw and Chromium")
	}
	s3 := tests3.Start(t, "uploads")
	rdb := testredis.Start(t, testredis.Options{AppendFsync: "no"}).Client()
	t.Cleanup(func() { rdb.Close() })
	forms := startDemoFormsService(t, rdb, withApplyForm(t, s3))
	testwait.For(t, 10*time.Second, "the forms service to publish its declared forms", func() bool {
		_, ok, err := store.ReadCatalog(context.Background(), rdb)
		return err == nil && ok
	})
	on := true
	p := startAdminProviderOn(t, false, rdb, func(c *config.Config) { c.Auth.Console.Enabled = &on; c.Forms.PublicURL = forms })
	p.user("admin@example.com", testPassword)
	if _, _, err := p.svc.Users().AddGroups(context.Background(), "admin@example.com", []string{config.DefaultAdminGroup}); err != nil {
		t.Fatal(err)
	}
	f := &filesSetup{adminProvider: p, rdb: rdb, forms: forms}
	id, fileID := f.apply("Ada", "ada cv.pdf", pdfBytes)

	dir := t.TempDir()
	x := &person{t: t, p: p.provider, ctx: testbrowser.New(t)}
	x.do("opening the console", chromedp.Navigate(p.base+"/console/"), chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.CallBrowser(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir})
		return err
	}))
	x.waitShown("the console signed out", "#sign-in")
	x.do("sign in", chromedp.Click(chromedp.CSS("#sign-in")))
	x.signIn("admin@example.com", testPassword)
	x.waitShown("the overview", "#count-users")
	x.do("the application", chromedp.Evaluate[chromedp.Void](`location.hash = "#/forms/apply/submissions/`+id+`"`))
	x.waitShown("the application's files", `#files button[data-file="`+fileID+`"]`)
	body := x.text("the application", "#files")
	for _, want := range []string{"CV", "ada cv.pdf", "application/pdf", "609 bytes"} {
		if !strings.Contains(body, want) {
			t.Errorf("the files do not show %q:\n%s", want, body)
		}
	}
	x.checkConsole("a submission with a file", "submission-files")

	x.do("download the CV", chromedp.Click(chromedp.CSS(`#files button[data-file="`+fileID+`"]`)))
	x.waitShown("the download started", `#action-result .done[data-file="`+fileID+`"]`)
	saved := filepath.Join(dir, "ada cv.pdf")
	testwait.For(t, 20*time.Second, "the browser to save the CV", func() bool {
		b, err := os.ReadFile(saved)
		return err == nil && bytes.Equal(b, pdfBytes)
	})
	x.checkConsole("a file downloaded", "")

	var made int
	for _, e := range trail(t, p.provider) {
		if e.Kind == audit.FormFileLinkMade && e.Client == "formsservice-console" && e.Detail["file"] == fileID {
			made++
		}
	}
	if made != 1 {
		t.Errorf("%d links of the CV in the audit trail, want 1", made)
	}
}
